"""Seed 003 — training a CNN on CIFAR-100, CPU vs GPU (Korean blog, Keras on torch).

`os.environ["KERAS_BACKEND"] = "torch"`; the Sequential model in `workloads/cnn.py`
(975,692 parameters); `%%timeit -n1 -r1` around `model.fit(x_train, y_train, epochs=20,
validation_split=0.15)` at Keras' default batch of 32. Keras' log: 1329 steps an epoch,
about 21 s (15 ms/step) on the GPU and 288 s (216 ms/step) on the CPU in epoch 1.

Nothing in the post is unsynchronised: `fit` copies its logs to the host every step.
What it misses is where an epoch's time goes — the first steps, the data pipeline and
Keras' own overhead against the step itself — and that batch 32 leaves a big GPU idle.
The rows compare per-step times; the extra table projects them to epochs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from gpuvs import units
from gpuvs.machine import energy
from gpuvs.model import Case, Measurement, Status
from gpuvs.seeds import register
from gpuvs.seeds.base import (
    Found,
    Headline,
    Pick,
    Ratio,
    Row,
    Seed,
    SeedOptions,
    seconds_of,
)
from gpuvs.table import Table
from gpuvs.workloads.cifar import VALIDATION_SPLIT, steps_per_epoch
from gpuvs.workloads.cnn import POST_BATCH, TUNED_BATCH

GPU = "cuda:0"
# Training steps the as_written fit runs, by device kind (the post: 1329 × 20 epochs).
FIT_STEPS = {"cpu": 30, "cuda": 300}
QUICK_FIT_STEPS = {"cpu": 4, "cuda": 50}
# Params that say which data and how long a fit ran, not which case this is: a pick
# matches any of them (real CIFAR-100 preferred where a run measured both).
RUN_LENGTH = frozenset({"dataset", "cifar_path", "steps"})
# fit's validation pass: 15 % of the images, forward only (≈ 1/3 of a training step each).
VALIDATION_SHARE = VALIDATION_SPLIT / (1 - VALIDATION_SPLIT) / 3
# A batch that fills the GPU at least this many times faster per image than batch 32:
# batch 32 starved it.
STARVED = 2.0


@dataclass(frozen=True)
class DataPick(Pick):
    """A pick that finds its case whatever data (synthetic or CIFAR) and fit length ran."""

    def find(self, ms: Sequence[Measurement], exact: bool = False) -> Measurement | None:
        want = _core(self.params)
        found = [m for m in ms if (m.case.workload, m.case.variant, m.case.backend,
                                   m.case.device, m.case.dtype)
                 == (self.workload, self.variant, self.backend, self.device, self.dtype)
                 and _core(m.case.params) == want]
        at_size = [m for m in found if m.case.size == self.size]
        if exact and not at_size:
            return None
        pool = at_size or found
        return max(pool, key=lambda m: (m.case.param("dataset") == "cifar100", m.case.size),
                   default=None)


def _core(params: Sequence[tuple[str, str]]) -> dict[str, str]:
    return {k: v for k, v in params if k not in RUN_LENGTH}


def _pick(variant: str, framework: str, device: str, size: int = POST_BATCH,
          *extra: tuple[str, str], stat: str = "time") -> DataPick:
    params = tuple(sorted((("framework", framework), *extra)))
    return DataPick("cnn", variant, "torch", device, "float32", params, size, stat)


AW_GPU = _pick("as_written", "keras", GPU)
AW_CPU = _pick("as_written", "keras", "cpu")
KERAS_GPU = _pick("correct", "keras", GPU)
KERAS_CPU = _pick("correct", "keras", "cpu")
TORCH_GPU = _pick("correct", "torch", GPU)
TORCH_CPU = _pick("correct", "torch", "cpu")
TORCH_GPU_256 = _pick("correct", "torch", GPU, TUNED_BATCH)
TUNED = _pick("tuned", "torch", GPU, TUNED_BATCH)
TUNED_COMPILE = _pick("tuned", "torch", GPU, TUNED_BATCH, ("compile", "on"))
STEPS = (AW_GPU, AW_CPU, KERAS_GPU, KERAS_CPU, TORCH_GPU, TORCH_CPU, TORCH_GPU_256, TUNED)


def _s(v: float | None) -> str:
    """Seconds as people read them: '15.2 ms', '21.3 s', '4.8 min', '1.9 h'."""
    if v is None:
        return "—"
    if v >= 3600:
        return f"{v / 3600:.2g} h"
    return f"{v / 60:.2g} min" if v >= 100 else units.seconds(v)


def _counter(pick: Pick, ms: Sequence[Measurement], name: str) -> float | None:
    m = pick.find(ms)
    return m.counters.get(name) if m is not None and m.status is Status.OK else None


def _first_step(pick: Pick, ms: Sequence[Measurement]) -> float | None:
    return seconds_of(pick.find(ms), "first_call")


def data_label(ms: Sequence[Measurement]) -> str:
    """What the run trained on, for every table of this seed."""
    paths = sorted({m.case.param("cifar_path") for m in ms
                    if m.case.param("dataset") == "cifar100"})
    if paths:
        return f"real CIFAR-100 ({', '.join(paths)})"
    return "synthetic images of CIFAR-100's shape (times are real; accuracies are not CIFAR's)"


def _fit_why(gpu: bool) -> Callable[[Found], str]:
    written, correct = (AW_GPU, KERAS_GPU) if gpu else (AW_CPU, KERAS_CPU)

    def why(f: Found) -> str:
        if f.written is None or f.correct is None:
            return "needs a CUDA device" if gpu else "not measured"
        steps = _counter(written, f.ms, "steps") or 0
        load = _counter(correct, f.ms, "load_s")
        head = (f"fit's {steps:.0f} steps averaged {_s(f.written)} (first steps, validation "
                f"and the float64 → float32 pipeline in them); one step on data already on "
                f"the device: {_s(f.correct)}")
        return head + (f", loading a batch {_s(load)} apart" if load is not None else "")

    return why


def _speedup_why(f: Found) -> str:
    if f.written is None or f.correct is None:
        return "needs both devices"
    tuned, cpu = seconds_of(TUNED.find(f.ms)), seconds_of(KERAS_CPU.find(f.ms))
    per_image = (f"; per image, the tuned step at batch {TUNED_BATCH} is "
                 f"{units.ratio(cpu / POST_BATCH / (tuned / TUNED_BATCH))} the Keras CPU step"
                 if tuned and cpu else "")
    return (f"at batch {POST_BATCH} the GPU is {units.ratio(f.correct)} the CPU step for step"
            f"{per_image}; {_epoch_words(f.ms)}")


def _epoch_words(ms: Sequence[Measurement]) -> str:
    """The post's real question, per epoch of Keras steps at batch 32: how long, and how
    much energy, on each device; where energy was not measured, why."""
    parts = []
    for name, pick in (("GPU", KERAS_GPU), ("CPU", KERAS_CPU)):
        m = pick.find(ms)
        if m is None or m.status is not Status.OK or m.summary is None:
            continue
        steps = steps_per_epoch(POST_BATCH)
        found = energy.of(m)
        joules = (f" and {units.joules(steps * found.per_call_j)}"
                  + ("" if found.measured else " (declared power)") if found else
                  f" (energy {energy.why_none(m) or 'not measured: --energy'})")
        parts.append(f"{_s(steps * (m.summary.median + m.counters.get('load_s', 0.0)))}"
                     f"{joules} on the {name}")
    return "an epoch: " + ", ".join(parts) if parts else "no epoch projected"


def _headline_why(f: Found) -> str:
    """The post's ≈14×, in a phrase: what a GPU step does with a batch that fills it,
    per image, against batch 32 and against the CPU."""
    if f.correct is None:
        return "needs a CUDA device"
    tuned, cpu = seconds_of(TUNED.find(f.ms)), seconds_of(KERAS_CPU.find(f.ms))
    small = seconds_of(KERAS_GPU.find(f.ms))
    if not (tuned and cpu and small):
        return f"step for step at batch {POST_BATCH}; the post's epochs also hold first steps"
    per_image = tuned / TUNED_BATCH
    gain = small / POST_BATCH / per_image
    over_cpu = f"{units.ratio(cpu / POST_BATCH / per_image)} the CPU's"
    if gain >= STARVED:
        return (f"batch {POST_BATCH} starves the GPU: per image, a bf16 step at batch "
                f"{TUNED_BATCH} is {units.ratio(gain)} faster, {over_cpu}")
    return f"per image, a bf16 step at batch {TUNED_BATCH} is {over_cpu}"


def _first_why(f: Found) -> str:
    if f.correct is None:
        return "needs a CUDA device"
    steady = seconds_of(KERAS_GPU.find(f.ms))
    return (f"cuDNN, cuBLAS and Keras' training function start up in the first step: "
            f"{_s(f.correct)} against {_s(steady)} for each later one; the post paid it once "
            f"in epoch 1")


def _torch_gpu_why(f: Found) -> str:
    if f.correct is None:
        return "needs a CUDA device"
    keras, big = seconds_of(KERAS_GPU.find(f.ms)), seconds_of(TORCH_GPU_256.find(f.ms))
    kernels = (_counter(TORCH_GPU, f.ms, "kernels"), _counter(KERAS_GPU, f.ms, "kernels"))
    out = f"Keras' step takes {_s(keras)}"
    if all(kernels):
        out += f"; {kernels[0]:.0f} kernels a step here, {kernels[1]:.0f} through Keras"
    if big:
        out += (f"; {TUNED_BATCH // POST_BATCH}× the images cost {big / f.correct:.2g}× the "
                f"time: at batch {POST_BATCH} the GPU mostly waits for launches")
    return out


def _torch_cpu_why(f: Found) -> str:
    flops = _counter(TORCH_CPU, f.ms, "flops")
    if f.correct is None or not flops:
        return "not measured"
    return (f"{units.rate(flops / f.correct, 'FLOP/s')} on the CPU: at batch {POST_BATCH} "
            f"the CPU is busy computing; Keras takes {_s(seconds_of(KERAS_CPU.find(f.ms)))}")


def _tuned_why(f: Found) -> str:
    if f.correct is None:
        return "needs a CUDA device"
    epoch = steps_per_epoch(TUNED_BATCH) * (f.correct + (_counter(TUNED, f.ms, "load_s") or 0))
    plain = seconds_of(TORCH_GPU_256.find(f.ms))
    same = f"; plain float32 at batch {TUNED_BATCH}: {_s(plain)}" if plain else ""
    return (f"{units.rate(TUNED_BATCH / f.correct, ' images/s')}, an epoch in {_s(epoch)} "
            f"(the post: 21 s){same}")


def _compile_why(f: Found) -> str:
    if TUNED_COMPILE.find(f.ms) is None:
        return "not run: add --compile (compiling the step takes 10 to 20 s)"
    if f.correct is None:
        return "needs a CUDA device"
    first, eager = _first_step(TUNED_COMPILE, f.ms), seconds_of(TUNED.find(f.ms))
    if first is None or eager is None:
        return "—"
    saved = eager - f.correct
    cost = f"the first step, compiling, took {_s(first)} (less when torch's cache holds it)"
    if saved <= 0:
        return f"{cost}; the compiled step is no faster here ({_s(eager)} without)"
    return (f"{cost}; it saves {_s(saved)} a step: paid back after {first / saved:.0f} "
            f"steps ({first / saved / steps_per_epoch(TUNED_BATCH):.2g} epochs)")


HEADLINE = Row("GPU vs CPU, Keras", "≈14× (1 h 54 min ÷ 7 min 35 s)",
               Ratio(AW_CPU, AW_GPU), Ratio(KERAS_CPU, KERAS_GPU), _speedup_why)


@register
class Seed003(Seed):
    name = "003"
    title = "training a CNN on CIFAR-100, Keras on torch: CPU vs GPU, batch 32"
    hardware = "a GPU and a CPU the post does not name (Keras 3, torch backend)"
    mistake = ("batch 32 leaves a big GPU idle; no mixed precision or channels-last; data "
               "loading and first steps not separated from the step; epoch times only")

    def cases(self, options: SeedOptions) -> tuple[Case, ...]:
        """The replays first, GPU before CPU, so the GPU's fit meets a fresh device; then
        the steps; then, with `epochs`, the post's training for real on both devices."""
        data = ((("cifar_path", options.cifar), ("dataset", "cifar100")) if options.cifar
                else (("dataset", "synthetic"),))
        steps = QUICK_FIT_STEPS if options.quick else FIT_STEPS
        cases = []
        for p in (*STEPS, TUNED_COMPILE) if options.compile else STEPS:
            extra: tuple[tuple[str, str], ...] = data
            if p.variant == "as_written":
                extra += (("steps", str(steps[p.device.partition(":")[0]])),)
            cases.append(Case(p.workload, p.variant, p.backend, p.device, p.dtype,
                              p.size or POST_BATCH, tuple(sorted((*p.params, *extra)))))
        if options.epochs:
            cases += [Case("cnn", "as_written", "torch", d, "float32", POST_BATCH,
                           tuple(sorted((("epochs", str(options.epochs)),
                                         ("framework", "keras"), *data))))
                      for d in (GPU, "cpu")]
        return tuple(cases)

    def headline(self) -> Headline:
        return Headline(HEADLINE, _headline_why)

    def rows(self) -> tuple[Row, ...]:
        return (
            Row("data", "CIFAR-100: 50,000 train images", None, None,
                lambda f: data_label(f.ms)),
            Row("GPU: Keras fit, per step", "15 ms (21 s/epoch)", AW_GPU, KERAS_GPU,
                _fit_why(gpu=True)),
            Row("CPU: Keras fit, per step", "216 ms (288 s/epoch)", AW_CPU, KERAS_CPU,
                _fit_why(gpu=False)),
            HEADLINE,
            Row("GPU: Keras' first step", "inside epoch 1", None,
                _pick("correct", "keras", GPU, stat="first_call"), _first_why),
            Row("GPU: plain PyTorch step", "—", None, TORCH_GPU, _torch_gpu_why),
            Row("CPU: plain PyTorch step", "—", None, TORCH_CPU, _torch_cpu_why),
            Row("GPU vs CPU, plain PyTorch", "—", None, Ratio(TORCH_CPU, TORCH_GPU),
                lambda f: "the same network without Keras, on both devices"),
            Row(f"GPU tuned: batch {TUNED_BATCH}, bf16, channels-last", "—", None, TUNED,
                _tuned_why),
            Row("GPU tuned + torch.compile", "—", None, TUNED_COMPILE, _compile_why),
        )

    def extra_tables(self, ms: Sequence[Measurement]) -> list[Table]:
        tables = [epoch_table(ms)]
        if any(m.case.param("epochs") for m in ms):
            tables.append(accuracy_table(ms))
        return tables


EPOCH_ROWS = (("Keras fit (as written)", AW_GPU), ("Keras fit (as written)", AW_CPU),
              ("Keras step", KERAS_GPU), ("Keras step", KERAS_CPU),
              ("PyTorch step", TORCH_GPU), ("PyTorch step", TORCH_CPU),
              ("PyTorch step", TORCH_GPU_256),
              ("tuned: bf16, channels-last, fused Adam", TUNED),
              ("tuned + torch.compile", TUNED_COMPILE))
EPOCH_COLUMNS = ("", "device", "batch", "step", "load (apart)", "first step",
                 "epoch (projected)", "images/s", "kernels/step", "energy/step",
                 "energy/epoch")


def epoch_table(ms: Sequence[Measurement]) -> Table:
    """Each step time projected to one epoch: steps × (step + loading a batch)."""
    rows = []
    for label, pick in EPOCH_ROWS:
        m = pick.find(ms, exact=True)
        if m is None or "epochs" in dict(m.case.params):
            continue
        head = (label, "GPU" if pick.device != "cpu" else "CPU", str(m.case.size))
        if m.status is not Status.OK or m.summary is None:
            rows.append((*head, f"{m.status.value}: {m.reason.split(' (')[0]}"[:60],
                         *("—",) * 5, "", ""))
            continue
        step = seconds_of(m) or 0.0
        load = m.counters.get("load_s", 0.0)
        written = m.case.variant == "as_written"
        kernels = m.counters.get("kernels")
        rows.append((*head, _s(step), "in the step" if written else _s(load),
                     "in the step" if written else _s(m.first_call_s),
                     _s(steps_per_epoch(m.case.size) * (step + load)),
                     units.rate(m.case.size / (step + load), ""),
                     f"{kernels:.0f}" if kernels else "—", *_energy_cells(m)))
    tf32 = any(m.counters.get("conv_tf32") for m in ms)
    notes = (f"data: {data_label(ms)}",
             *(("float32 convolutions on the GPU ran on TF32 (PyTorch's default: "
                "torch.backends.cudnn.allow_tf32)",) if tf32 else ()),
             f"an epoch = {steps_per_epoch(POST_BATCH)} steps at batch {POST_BATCH} "
             f"({steps_per_epoch(TUNED_BATCH)} at {TUNED_BATCH}): 85 % of 50,000 images; "
             f"fit's validation pass adds about {VALIDATION_SHARE:.0%} (forward only)",
             "as written: the whole fit ÷ its training steps, so first steps, validation "
             "and the data pipeline are inside 'step'; the others load apart",
             "loading: uint8 host images → float32 on the device (tuned: uint8 copied from "
             "pinned memory, scaled on the device); a DataLoader with workers can hide it",
             *_energy_notes(ms))
    return Table(title="seed 003 · where an epoch's time goes", columns=EPOCH_COLUMNS,
                 rows=tuple(rows), notes=notes, wrapping=frozenset({""}))


def _energy_cells(m: Measurement) -> tuple[str, str]:
    """A step's energy and an epoch's (its steps alone), where measured; else why not."""
    found = energy.of(m)
    if found is None:
        return energy.why_none(m) or "", ""
    declared = "" if found.measured else " declared"
    return (units.joules(found.per_call_j) + declared,
            units.joules(steps_per_epoch(m.case.size) * found.per_call_j) + declared)


def _energy_notes(ms: Sequence[Measurement]) -> tuple[str, ...]:
    if not any(energy.of(m) or energy.why_none(m) for m in ms):
        return ()
    return ("energy/epoch: the steps' energy alone (loading a batch is not in it); GPU: the "
            f"board's from NVML's counter over at least {energy.ENERGY_WINDOW_S:g} s of "
            "steps; CPU: RAPL's package and DRAM where readable, or a power declared with "
            "--cpu-watts",)


ACCURACY_COLUMNS = ("device", "epoch", "epoch time", "elapsed", "train accuracy",
                    "validation accuracy")


def accuracy_table(ms: Sequence[Measurement]) -> Table:
    """The post's own experiment run for real: time to accuracy, epoch by epoch."""
    rows = []
    for m in sorted((m for m in ms if m.case.param("epochs") and m.case.workload == "cnn"),
                    key=lambda m: m.case.device != "cpu", reverse=True):
        device = "GPU" if m.case.device != "cpu" else "CPU"
        if m.status is not Status.OK:
            rows.append((device, "—", f"{m.status.value}: {m.reason}"[:60], "—", "—", "—"))
            continue
        elapsed = 0.0
        for i in range(1, int(m.counters.get("epochs", 0)) + 1):
            c = m.counters
            elapsed += c.get(f"epoch{i}_s", 0.0)
            rows.append((device, str(i), _s(c.get(f"epoch{i}_s")), _s(elapsed),
                         _pct(c.get(f"epoch{i}_train_acc")), _pct(c.get(f"epoch{i}_val_acc"))))
    return Table(title="seed 003 · time to accuracy (the post's fit, for real)",
                 columns=ACCURACY_COLUMNS, rows=tuple(rows),
                 notes=(f"data: {data_label(ms)}",
                        "the post (GPU): 50 % train, 41 % validation accuracy after 20 "
                        "epochs of 21 s; 82 % train after 50"))


def _pct(v: float | None) -> str:
    return f"{v:.1%}" if v is not None else "—"
