"""How long a plan takes: from what this machine's store knows of its cases, else a model.

`--dry-run` said 46 s for `-w matmul -s 256:8192:2`, which took 4 min 58 s: it charged
every case its budget and 0.3 s, while an 8192³ product on a 2-core CPU is seconds a
call, and a call longer than the budget is timed three times (first call, warm-up kept as
a sample, one more) besides its float64 reference. A case's cost here is, in this order:

1. **from its own last run**, where that ran out of time: this run's timeout;
2. **from its series' stored cases** — the same workload, variant, backend, device, dtype
   and parameters, measured on this set-up (the environment fingerprint) at this size or
   others: what the nearest stored size cost (every pass as the parent waited for it,
   `runner_s`, less workers starting, `start_s`), moved by what the model says changes
   between there and here: the call time (the series' trend over size, a power law
   through its two nearest sizes), the budget, the passes;
3. **from the model** alone, for a series never stored: the call time its work predicts
   at nominal rates for this machine's cores (`Rates.here`: FLOPs and bytes a second a
   core on the CPU, a GPU's figures on a GPU), times how far the model missed this
   machine's stored cases (the median of their costs over the model's, within MISSED_MIN
   and MISSED_MAX).

The same plan, store and machine give the same estimate, every time. The rates were once
probed in a few milliseconds of NumPy, whose figures moved threefold from one try to the
next on a shared machine: `run --all --dry-run` on an empty store said 62 s, then 8 min
20 s, then 11 min. What the probe could not steady, the store's history measures: the
model is moved by how far it missed this machine's stored cases.

Workers' start-ups count once per run: the model's (imports, devices; shared by the
cores) or, if longer, the median of what this machine's stored runs waited for theirs.

The model (`case_model_s`): each pass a first call, a warm-up (its share of the budget,
or one call kept as a sample when a call outlasts the budget), sampling (its share of
the budget, or one more call) and fresh inputs; the first pass also the float64
reference; a case whose first pass takes over the runner's `PASS_MAX_CASE_S` runs once;
a post's replay costs `REPLAY_S`. Then the workers' start-ups and the command's own work.
On a busy machine — busy over the last 15 minutes, the steadiest of the load averages,
so that two estimates a minute apart agree, and still busy over the last minute, so that
a machine whose heavy job has ended is not — a pass that other processes disturbed is
measured again after a pause (`protocol.CONTENDED_RETRIES`), so every case is counted
that many more times, with the pauses, and about half the passes split or drift and are
measured again with three times their budget (`protocol.measure_again_if_split`;
BUSY_AGAIN); its rates are a share of a quiet machine's (BUSY_SHARE) and a call spread
over BLAS's threads waits for their turns (BUSY_CALL_FLOOR_S). A stored cost has the
retries taken out, and the model reads a stored case measured again as such: the machine
may be quiet next time.

Besides the total, the estimate gives each case's seconds pass by pass (`Estimate.passes_s`):
the shape of the plan, against which the runner's countdown (`runner.Pace`) scales what
the run has taken so far.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from gpuvs import backends, workloads
from gpuvs.config import RunConfig
from gpuvs.execute.runner import PASS_MAX_CASE_S
from gpuvs.measuring.protocol import CONTENDED_PAUSE_S, CONTENDED_RETRIES, REMEASURE_BUDGET_FACTOR
from gpuvs.model import Case, Measurement, Status

# A plan expected to take longer than this says so before it starts.
LONG_PLAN_S = 180.0
# One pass of a measured case beyond its calls: the request and its answer, the
# machine's watches, the garbage collected after it, saving it.
CASE_OVERHEAD_S = 0.15
# The protocol's shares of a pass's budget: warm-up at most a quarter (`Budget`), and
# sampling — until the CI is met, which a short call on a quiet machine does early.
WARMUP_SHARE = 0.25
SAMPLING_SHARE = 0.8
WARMUP_CALLS = 6            # two windows of three calls that stopped getting faster
MIN_SAMPLES = 3
# The float64 reference the first pass checks the output against: NumPy on the CPU,
# about two calls of the case's own work (twice the bytes).
REFERENCE_CALLS = 2.0
# Fresh inputs each pass, and the reference's: random numbers and copies, bytes a second.
PREPARE_BYTES_PER_S = 1e9
# A post's replay: its own timing, about this long on average on a quiet machine —
# `%timeit`'s seven runs of 0.2 to 2 s each (a call ×10 loops until a run lasts 0.2 s:
# seed 000's took 14 s), or one `%%time` call (0.1 to 4 s); which one, and the call's
# time, only preparing the case tells.
REPLAY_S = 4.0
# Importing a framework and starting its device, per worker process, on one core.
WORKER_START_S = {"numpy": 1.0, "torch": 4.0, "cupy": 4.0, "jax": 4.0}
GPU_START_S = 3.0
# The command's own work: imports, the environment, the probe, the tables at the end.
COMMAND_S = 5.0
# A case that waited this long for workers was waiting for a run's pool to start (or a
# dead worker's replacement): what starting them takes on this machine, stored.
MIN_START_S = 1.0
# Past cases read per size of a series: the newest few, their median.
NEWEST = 3
# On a busy machine about half the passes split or drift and are measured again with
# three times their budget (38 of 58 cases of a `run --all` at 1 s here, 7 of 53 of a
# `seeds --quick` at 0.1 s, whose few samples seldom show it).
BUSY_AGAIN = 0.5
# How far this machine's stored cases may move the model for the others: a factor.
MISSED_MIN, MISSED_MAX = 0.5, 4.0
# Nominal GPU rates for a series never stored on a GPU: most of its cases cost their
# budget share, and this keeps a large one from counting as free.
GPU_FLOPS = 2e13
GPU_BYTES_PER_S = 1e12
GPU_LAUNCH_S = 1e-5
# Nominal CPU rates, a core: float32 FLOPs (SIMD fused multiply-adds: 1.2e11 a core
# measured on the 2-core box's AVX-512, about 1e11 on a laptop's AVX2), and the bytes a
# second a core draws from memory, up to what one socket's memory gives.
CPU_FLOPS_PER_CORE = 1e11
CPU_BYTES_PER_S_PER_CORE = 6e9
CPU_BYTES_PER_S_MAX = 4e10
# A busy machine: this process gets about this share of its rates (the 2-core box at a
# load of 4 to 5 probed 0.3 to 0.8 of its quiet figures), and a call spread over BLAS's
# threads waits for their turns (15 to 30 ms a call there).
BUSY_SHARE = 0.5
BUSY_CALL_FLOOR_S = 0.02
# How far a series' trend may climb with size: a power law steeper than this is noise.
MAX_EXPONENT = 3.5
# A call this long, by its work alone, spreads over BLAS's threads and pays their floor.
THREADED_CALL_S = 1e-3


@dataclass(frozen=True)
class Rates:
    """What the model takes this machine's CPU to do, for a case never stored: FLOPs and
    bytes a second, the floor of a call that spreads over BLAS's threads (tens of ms when
    other processes hold the cores: a thread waits its turn), and how much slower than
    its own CPU time a CPU-bound step runs (`slowdown`: other processes' share)."""

    cpu_flops: float = 5e10
    cpu_bytes_per_s: float = 5e9
    cpu_call_floor_s: float = 0.0
    slowdown: float = 1.0

    @classmethod
    def here(cls, busy: bool, cores: int | None = None) -> Rates:
        """Nominal rates for this machine's cores, quiet or busy: the same figures every
        time, where a probe of a few ms read threefold apart from one try to the next."""
        import os

        n = cores or os.cpu_count() or 1
        share = BUSY_SHARE if busy else 1.0
        return cls(cpu_flops=CPU_FLOPS_PER_CORE * n * share,
                   cpu_bytes_per_s=min(CPU_BYTES_PER_S_PER_CORE * n, CPU_BYTES_PER_S_MAX) * share,
                   cpu_call_floor_s=BUSY_CALL_FLOOR_S if busy else 0.0, slowdown=1 / share)


@dataclass(frozen=True)
class Past:
    """One stored case of this set-up, as the estimate reads it: the measurement and the
    budget and passes of the run that took it."""

    measurement: Measurement
    budget_s: float
    passes: int

    @property
    def call_s(self) -> float:
        s = self.measurement.summary
        return s.median if s is not None else 0.0

    @property
    def model_s(self) -> float:
        """What the model says the case cost then: its call time, its run's budget and
        passes, whether a pass was measured again, and the passes it ran (a case whose
        first pass outlasted PASS_MAX_CASE_S, a busy machine's retries included, ran one)."""
        c = self.measurement.counters
        again = 1.0 if "remeasured" in c else 0.0
        ran = int(c.get("passes", 1.0))
        return sum(_passes(self.measurement.case, self.call_s, self.budget_s, self.passes,
                           again)[:ran])

    @property
    def cost_s(self) -> float:
        """What the case cost its run, workers' start-ups and retries taken out: a pass
        measured again for contention was paid twice, after a pause."""
        c = self.measurement.counters
        retries, passes = c.get("contended_retries", 0.0), c.get("passes", 1.0)
        waited = c.get("runner_s", c.get("case_s", 0.0)) - c.get("start_s", 0.0)
        return max(waited - retries * CONTENDED_PAUSE_S, 0.0) * passes / (passes + retries)


@dataclass(frozen=True)
class Estimate:
    """A plan's expected seconds — its cases', its workers' start-ups and the command's
    own — how many of its measured cases the store knew, whether it took the machine to
    be busy, and each case's seconds pass by pass (by key; a case that cannot run here
    has none): the shape the runner's countdown follows."""

    cases_s: float
    workers_s: float
    command_s: float
    measured: int      # cases that may run here (not those of an absent backend or GPU)
    from_history: int  # of which, cases whose series this machine's store holds
    busy: bool = False
    passes_s: Mapping[str, tuple[float, ...]] = field(default_factory=dict)

    @property
    def seconds(self) -> float:
        return self.cases_s + self.workers_s + self.command_s

    @property
    def long(self) -> bool:
        return self.seconds > LONG_PLAN_S


def estimate(cases: Sequence[Case], config: RunConfig, past: Sequence[Past] = (),
             rates: Rates | None = None, busy: bool = False) -> Estimate:
    """The plan's seconds: each case that may run here, its workers' start-ups and the
    command's own work; with `busy`, each case once more after a pause. `past` is newest
    first, as the store gives it; `rates` are this machine's nominal ones unless given.
    A pure function of its arguments: the same plan and store give the same estimate."""
    rates = rates or Rates.here(busy)
    started = _median([s for p in past if (s := p.measurement.counters.get("start_s", 0.0))
                       >= MIN_START_S])
    timed_out: dict[str, bool] = {}
    for p in reversed(past):  # oldest first: the newest record of a case wins
        timed_out[p.measurement.case.key] = p.measurement.status is Status.TIMEOUT
    past = [p for p in past if p.measurement.status is Status.OK]
    series = _by_series(past)
    # How far the model missed this machine's stored cases, as a factor: their costs
    # scale with the budget (a case measured again with three times it), as the model's do.
    missed = min(max(_median([p.cost_s / model for p in past if (model := p.model_s) > 0])
                     or 1.0, MISSED_MIN), MISSED_MAX)
    measured = [c for c in cases if _may_run(c)]
    passes_s: dict[str, tuple[float, ...]] = {}
    known = 0
    for case in measured:
        stored = series.get(case.series, [])
        known += bool(stored) or timed_out.get(case.key, False)
        if timed_out.get(case.key):  # it ran out of time last time: expect it to again
            runs: tuple[float, ...] = (config.timeout_s,)
        elif stored:
            runs = _from_series(case, stored, config, rates, busy)
        else:
            runs = tuple(missed * r for r in _passes(
                case, _call_s(case, rates), config.budget_s, config.passes,
                BUSY_AGAIN if busy else 0.0))
        # a post's replay is timed its own way, without watches: never retried
        passes_s[case.key] = _on_busy(runs) if busy and case.variant != "as_written" else runs
    workers_s = max(start_s(measured, config.passes, rates), started) if measured else 0.0
    return Estimate(sum(map(sum, passes_s.values())), workers_s, COMMAND_S * rates.slowdown,
                    len(measured), known, busy, passes_s)


def case_model_s(case: Case, call_s: float, config: RunConfig, busy: bool = False) -> float:
    """What the model says a case costs over its passes when one call takes `call_s`; on
    a busy machine, some passes measured again (BUSY_AGAIN)."""
    return _at(case, call_s, config.budget_s, config.passes, BUSY_AGAIN if busy else 0.0)


def start_s(cases: Sequence[Case], passes: int, rates: Rates) -> float:
    """The workers' start-ups: a measuring worker per backend, its twin for the next pass,
    a process per post and device for the replays — started together, so they share the
    cores (`runner.Pool`)."""
    workers: list[float] = []
    for b in {c.backend for c in cases if c.variant != "as_written"}:
        device = next(c.device for c in cases if c.backend == b)
        workers += [_worker_start_s(b, device)] * min(passes, 2)
    for b, _post, device in {(c.backend, c.workload, c.device) for c in cases
                             if c.variant == "as_written"}:
        workers.append(_worker_start_s(b, device))
    if not workers:
        return 0.0
    import os

    cores = os.cpu_count() or 1
    return max(max(workers), sum(workers) / min(cores, len(workers))) * rates.slowdown


def _may_run(case: Case) -> bool:
    """Not a case of an absent backend or GPU, nor one the host cannot hold (the worker
    skips it before allocating): those are decided in no time."""
    if backends.get(case.backend).absent(case.device):
        return False
    if case.device != "cpu":
        return True
    from gpuvs.backends.base import host_memory_free

    w = workloads.get(case.workload)
    need = (w.memory_needed(case.size, case.params, case.dtype)
            + w.host_memory_needed(case.size, case.params, case.dtype))
    return need <= 0.9 * host_memory_free()


def _by_series(past: Sequence[Past]) -> dict[Case, list[Past]]:
    out: dict[Case, list[Past]] = {}
    for p in past:
        out.setdefault(p.measurement.case.series, []).append(p)
    return out


def _from_series(case: Case, stored: list[Past], config: RunConfig, rates: Rates,
                 busy: bool) -> tuple[float, ...]:
    """The nearest stored size's cost, moved by the model's difference between there (its
    call time, its run's budget and passes, whether it was measured again) and here (the
    trend's call time, this run's budget and passes, the machine now); shared among the
    passes as the model shares it."""
    sizes = sorted({p.measurement.case.size for p in stored},
                   key=lambda s: (abs(math.log(s / case.size)), s))
    nearest = [p for p in stored if p.measurement.case.size == sizes[0]][:NEWEST]
    then = _median([p.cost_s - p.model_s for p in nearest])
    model = _passes(case, _trend_call_s(case, stored, rates), config.budget_s, config.passes,
                    BUSY_AGAIN if busy else 0.0)
    now = sum(model)
    cost = max(now + then, now / 2)
    return tuple(r * cost / now for r in model) if now > 0 else (cost,)


def _trend_call_s(case: Case, stored: list[Past], rates: Rates) -> float:
    """The call time at this size: the series' power law through its two sizes nearest
    this one (one size: the workload's work, scaled; none: the model's rates)."""
    calls: dict[int, float] = {}
    for p in stored:  # newest first: the newest call time of each size
        calls.setdefault(p.measurement.case.size, p.call_s)
    if case.size in calls:
        return calls[case.size]
    near = sorted(calls, key=lambda s: abs(math.log(s / case.size)))[:2]
    if len(near) == 1:
        there = replace(case, size=near[0])
        model_here, model_there = _call_s(case, rates), _call_s(there, rates)
        ratio = model_here / model_there if model_there > 0 else case.size / near[0]
        return calls[near[0]] * ratio
    (s1, t1), (s2, t2) = ((s, calls[s]) for s in near)
    if t1 <= 0 or t2 <= 0 or s1 == s2:
        return max(t1, t2)
    slope = min(max(math.log(t2 / t1) / math.log(s2 / s1), 0.0), MAX_EXPONENT)
    return float(t1 * (case.size / s1) ** slope)


def _call_s(case: Case, rates: Rates) -> float:
    """One call's seconds from its work: FLOPs and bytes at the device's rates, plus a
    launch; zero for a workload that counts neither."""
    w = workloads.get(case.workload)
    flops = w.flops(case.size, case.params) or 0.0
    moved = w.bytes_moved(case.size, case.params, case.dtype) or 0.0
    if not (flops or moved):
        return 0.0
    if case.device != "cpu":
        return flops / GPU_FLOPS + moved / GPU_BYTES_PER_S + GPU_LAUNCH_S
    work_s = flops / rates.cpu_flops + moved / rates.cpu_bytes_per_s
    return work_s + (rates.cpu_call_floor_s if work_s >= THREADED_CALL_S else 0.0)


def _on_busy(runs: tuple[float, ...]) -> tuple[float, ...]:
    """A case's passes on a busy machine: each measured again after a pause, as most of
    a busy machine's are; and a first pass whose time, so, outlasts PASS_MAX_CASE_S (the
    pause is the machine's, not the case's) is the only one — the runner's rule: on the
    2-core box at a load of 4, a 2048² product's first pass took over 3 s with its retry,
    and ran once."""
    again = tuple(r * (1 + CONTENDED_RETRIES) + CONTENDED_RETRIES * CONTENDED_PAUSE_S
                  for r in runs)
    return again[:1] if runs[0] * (1 + CONTENDED_RETRIES) > PASS_MAX_CASE_S else again


def _at(case: Case, call_s: float, budget_s: float, passes: int, again: float = 0.0) -> float:
    """The model's cost of `case` over its passes at this budget (`_passes`, added up)."""
    return sum(_passes(case, call_s, budget_s, passes, again))


def _passes(case: Case, call_s: float, budget_s: float, passes: int, again: float = 0.0
            ) -> tuple[float, ...]:
    """The model's cost of each pass of `case` at this budget; `again`, the chance that
    a pass is measured again with REMEASURE_BUDGET_FACTOR times its budget, on fresh inputs
    and reference (its samples split or drifted: 1 for a stored case that was)."""
    if case.variant == "as_written":
        return (REPLAY_S + CASE_OVERHEAD_S,)
    share = budget_s / passes
    w = workloads.get(case.workload)
    prepare = w.host_memory_needed(case.size, case.params, case.dtype) / PREPARE_BYTES_PER_S

    def one(first: bool) -> float:
        # a later pass makes fresh inputs only: no reference (`samples_only`)
        made = prepare + REFERENCE_CALLS * call_s if first else prepare / 3
        return (CASE_OVERHEAD_S + made + _protocol_s(call_s, share)
                + again * (made + _protocol_s(call_s, REMEASURE_BUDGET_FACTOR * share)))

    first = one(True)
    if first > PASS_MAX_CASE_S or passes == 1:  # the runner's rule: a long case runs once
        return (first,)
    return (first, *(one(False) for _ in range(passes - 1)))


def _protocol_s(call_s: float, share: float) -> float:
    """The protocol's calls in one pass: the first call, the warm-up, the samples."""
    if call_s >= share:  # the warm-up call is kept as a sample, and one more is taken
        return 3 * call_s
    return (call_s + min(WARMUP_SHARE * share, WARMUP_CALLS * call_s)
            + max(SAMPLING_SHARE * share, MIN_SAMPLES * call_s))


def _worker_start_s(backend: str, device: str) -> float:
    return WORKER_START_S.get(backend, 2.0) + (GPU_START_S if device != "cpu" else 0.0)


def _median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    if not ordered:
        return 0.0
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2
