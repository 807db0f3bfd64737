"""The public functions: `gpuvs.measure(fn)`, the protocol for any callable on the CPU or
a CUDA device; `gpuvs.compare(fn, *args)`, the same function on each device, compared;
`gpuvs.predict(fn, *args, target=...)`, a GPU's time for it, predicted from the CPU."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from gpuvs import backends
from gpuvs.config import KEYWORDS, build
from gpuvs.errors import UsageError
from gpuvs.execute.take import take
from gpuvs.execute.wire import Sampling
from gpuvs.machine.energy import ENERGY_WINDOW_S, EnergyOptions, idle_watts, readable
from gpuvs.measuring.protocol import Prepared
from gpuvs.model import Case, Measurement, on_gpu

# The CPU side of a prediction: half a second of sampling is enough next to the predicted
# interval (and `[tool.gpuvs]`'s budget_s, where one is set, wins over it).
PREDICT_DEFAULTS = {"budget_s": 0.5}
# An energy window longer than an hour is a typo, not a measurement.
MAX_ENERGY_WINDOW_S = 3600.0

if TYPE_CHECKING:
    from gpuvs.predicting.forecast import CallForecast, SweepForecast
    from gpuvs.yours.comparison import Comparison


def _no_check(out: object) -> None:
    return None


def measure(fn: Callable[[], object], *, device: str = "cpu", budget_s: float | None = None,
            criterion: str | None = None, check: Callable[[object], None] | None = None,
            single_call: bool = False, name: str = "custom", energy: bool = False,
            cpu_watts: float | None = None, energy_window_s: float = ENERGY_WINDOW_S
            ) -> Measurement:
    """Time `fn()` by the gpuvs protocol, sampling `budget_s` seconds (0.4 s, or
    `[tool.gpuvs]`'s `budget_s`) until `criterion` is met (`median-ci` by default).

    On `device="cuda"` / `"cuda:N"` the work is timed with CUDA events through PyTorch
    and the host clock is only read after synchronising. `check(output)` runs once,
    outside the timed region, and should raise `gpuvs.errors.WrongResult` on a bad output.
    The first call is timed alone and kept apart as `first_call_s`. The case is timed
    inside the same watches as the command line's: on a GPU the warm-up waits for the
    clocks to settle and a case under a power or heat limit is sampled over its whole
    budget; other processes on the CPUs or the GPU make it `contended` (it is measured
    again after a pause first); one whose samples split or drift is measured again with
    more budget. Nothing observes your process: no profiler, no graph capture.

    Its peak memory is kept too (`peak_host_bytes`; on a GPU, `peak_device_bytes` from
    torch's allocator). With `energy=True` the samples span at least `energy_window_s`
    (4 s, the least: NVML's counter moves in 100 ms steps) where an energy counter can be
    read, and on a GPU its idle power is measured first (a second, with nothing running):
    `gpuvs.machine.energy.of(m)` gives joules per call, the average power and the energy
    above idle, and the counter `energy_window_end_unix` says when the window ended, to
    line it up with another power log. `cpu_watts` declares the CPU's power where RAPL
    cannot be read; a figure made from it says it was declared.
    """
    config = build({"budget_s": budget_s, "criterion": criterion, "devices": (device,),
                    "energy": energy or None, "cpu_watts": cpu_watts}, names=KEYWORDS)
    if not (isinstance(energy_window_s, (int, float))
            and ENERGY_WINDOW_S <= energy_window_s <= MAX_ENERGY_WINDOW_S):
        raise UsageError(f"energy_window_s must be from {ENERGY_WINDOW_S:g} (NVML's counter "
                         f"moves in 100 ms steps) to {MAX_ENERGY_WINDOW_S:g} seconds; got "
                         f"{energy_window_s!r}")
    gpu = on_gpu(device)
    case = Case(name, "correct", "torch" if gpu else "python", device, "", 0)
    windowed = energy and readable(device)  # a counter to read: sample a whole window
    power = EnergyOptions(energy, idle_watts(device) if windowed and gpu else None,
                          None if gpu else cpu_watts)
    sampling = replace(Sampling.of(config), power=power,
                       min_sampling_s=energy_window_s if windowed else 0.0)
    return take(case, lambda: Prepared(call=fn, check=check or _no_check,
                                       single_call=single_call),
                sampling, backend=backends.get("torch") if gpu else None,
                raising=True).measurement


def compare(fn: Callable[..., object] | Mapping[str, Callable[..., object]], *args: Any,
            devices: Sequence[str] = ("cpu", "cuda"),
            batch: Callable[[int], Any] | None = None, sizes: Sequence[int] | str | None = None,
            budget_s: float | None = None, tolerance: float | None = None,
            name: str | None = None, processes: int | None = None,
            **kwargs: Any) -> Comparison:
    """Run `fn(*args, **kwargs)` on each device, check the outputs agree, time each.

    `fn` may be several implementations of one function by name, `{"loop": f,
    "vectorised": g}`: each runs on each device, every output must agree with the first
    implementation's on the first device, and the result also says, at each size, which
    implementation on which device is fastest (`winners`, and a table side by side).

    The arguments (torch tensors, `nn.Module`s, NumPy and CuPy arrays, nested in lists,
    tuples and dicts) are copied to each device; the caller's are never modified. On a GPU
    each case is timed twice: resident (data already there) and end-to-end (host data
    copied in and the output brought back on every call). The first device's output is
    the reference; the others must agree within their dtype's tolerance (`tolerance=`
    overrides it).

    `batch(size)` returns the arguments for one size (a tuple is spread, anything else is
    the one argument) and `sizes` lists the sizes (`[100, 1000]` or `"1e2:1e5"`; default
    10 to 10^4): the comparison then sweeps and reports the crossover. `sizes` without
    `batch` resizes the first axis of every tensor and array argument (rows repeated).
    `budget_s` is the sampling time per case (0.4 s, or `[tool.gpuvs]`'s `budget_s`). A
    sweep shows its progress on stderr.

    The call is timed in this process, and its interval is one process's: on a GPU
    machine a launch-bound call's speed can differ from process to process, and a new
    process may land outside it. `processes=N` times it in N worker processes instead,
    in turns, each with its share of the budget, the figure the median of their medians
    and the interval over them, as `gpuvs run` and `gpuvs run-file` sample; a worker
    imports `fn` by name, so it must be defined at the top of an importable module (not
    in a notebook or the script being run), and the arguments are pickled to it (a
    module `fn` too, its class imported by name).
    Returns a `gpuvs.yours.comparison.Comparison`.
    """
    if processes is not None:
        from gpuvs.yours import workers
        if workers.check_processes(processes) > 1:
            return workers.run(fn, args, kwargs, processes=processes, devices=devices,
                               batch=batch, sizes=sizes, budget_s=budget_s,
                               tolerance=tolerance, name=name, show_progress=True)
    from gpuvs.yours.compare import run
    return run(fn, args, kwargs, devices=devices, batch=batch, sizes=sizes,
               budget_s=budget_s, tolerance=tolerance, name=name, show_progress=True)


def predict(fn: Callable[..., object], *args: Any, target: str = "h100",
            batch: Callable[[int], Any] | None = None, sizes: Sequence[int] | str | None = None,
            budget_s: float | None = None, name: str | None = None,
            **kwargs: Any) -> CallForecast | SweepForecast:
    """Predict `fn(*args, **kwargs)`'s time per call on a GPU you do not have.

    The call is measured on the CPU here (the gpuvs protocol) and its work counted there
    (torch's FlopCounterMode and a dispatch mode: FLOPs, bytes, the ops that would each
    launch a kernel, the tensors copied in and out); `target` names a device profile
    (`gpuvs profiles`) or its file (a path ending .json). Returns a
    `gpuvs.predicting.forecast.CallForecast`: the measured CPU time, and the GPU's
    predicted time — data resident and end-to-end — each with its bound in words and,
    where the target was validated, its interval; `.speedup` is the predicted speedup,
    and its text says what it assumes (TF32, as torch's float32 matmul precision is set
    in this process; a CPU time measured under contention).

    With `batch(size)` (the arguments for one size: a tuple is spread) and `sizes` (a
    list, or "1e2:1e5" as on the command line), each size is measured and predicted: a
    `SweepForecast`, whose `.crossover` is the predicted size from which the GPU wins.
    Pass CPU tensors; the arguments are not modified beyond what `fn` does. A call in
    which no torch op runs (NumPy code, `time.sleep`) is refused: nothing of it would
    run on a GPU as written.
    """
    import warnings

    from gpuvs.predicting import forecast
    budget_s = build({"budget_s": budget_s}, defaults=PREDICT_DEFAULTS, names=KEYWORDS).budget_s
    chosen = forecast.target(target)
    for line in chosen.skipped:  # a bad file in the profile directory: said, not fatal
        warnings.warn(line, stacklevel=2)
    label = str(name or getattr(fn, "__name__", "fn"))
    if batch is None:
        if sizes is not None:
            raise UsageError("sizes= needs batch=: a function that returns the arguments "
                             "for one size")
        return _foretold(fn, args, kwargs, chosen, label, budget_s)
    from gpuvs.config import parse_sizes
    swept = parse_sizes([sizes] if isinstance(sizes, str) else [str(n) for n in sizes or ()])
    if not swept:
        raise UsageError("batch= needs sizes=: the sizes to measure and predict")
    points = []
    for size in swept:
        made = batch(size)
        spread = made if isinstance(made, tuple) else (made,)
        points.append((size, _foretold(fn, spread, kwargs, chosen, f"{label}[{size}]",
                                       budget_s)))
    return forecast.SweepForecast(label, tuple(points))


def _foretold(fn: Callable[..., object], args: tuple[Any, ...], kwargs: dict[str, Any],
              chosen: Any, label: str, budget_s: float) -> CallForecast:
    """One call: counted on the CPU, measured on the CPU, predicted on the target."""
    from dataclasses import replace as with_

    from gpuvs.predicting import forecast
    from gpuvs.predicting.counting import count
    work, _ = count(fn, args, kwargs)
    cpu = measure(lambda: fn(*args, **kwargs), device="cpu", budget_s=budget_s,
                  name=f"yours:{label}")
    return forecast.CallForecast(label, chosen, cpu, work,
                                 chosen.predict(with_(work, copied_in=(), copied_out=())),
                                 chosen.predict(work))
