"""The measurement protocol, as five named steps (named `protocol`, not `measure`, so that
`gpuvs.measure`, the public function, is not shadowed by a submodule of the same name).

`measure()` reads as its table of contents:

1. first call, timed alone and kept as `first_call_s` (compilation, handles, caches);
2. check the output against the reference, outside any timed region (`WRONG_RESULT`);
3. warm up until the last calls stop getting faster (capped);
4. calibrate loops so one sample is long next to timer resolution and launch cost;
5. sample until the criterion is met or the budget ends — device-event time *and*
   synchronised wall time on asynchronous devices.

On an asynchronous device the samples of a batch are timed with events laid end to end
(one event ends a sample and starts the next), after one untimed loop, and the host
synchronises once per batch: the device never idles between samples, and no time a loop
of calls pays falls between two samples. Synchronising around every sample let it idle,
and a kernel that starts on an idle GPU runs slower (a 4096² product: 2725 µs a call
timed one call per sync, 2649 µs back to back, on an H100 whose SM clock held 1980 MHz
throughout).

The host clock is never read over asynchronous work without synchronising first. The
clock is injected (`Clock`), so the same code runs on CPUs, CUDA, JAX and the simulated
device the tests use.
"""

from __future__ import annotations

import gc
import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Protocol

from gpuvs.errors import WrongResult
from gpuvs.measuring import caveats
from gpuvs.measuring.as_written import SelfTimed
from gpuvs.measuring.criteria import StoppingCriterion
from gpuvs.measuring.watch import Watches
from gpuvs.model import Case, Caveat, Measurement, Status

WARMUP_WINDOW = 3
# "Stopped falling": the best of the last window is within this factor of the window before.
WARMUP_STABLE_FACTOR = 0.98
MIN_SAMPLES = 3
# A call longer than the whole budget: its warm-up call and one more. Two samples that
# agree are the check; a third of a 16 s call would overrun a 0.1 s budget by 160×.
LONG_CALL_MIN_SAMPLES = 2
CALIBRATION_ROUNDS = 3
CALIBRATION_MARGIN = 1.05
# A call this many times a sample's target is one sample: no trial loop can shorten the
# sync's share of it below noise (a 10⁹-element pass, a seconds-long Jacobian).
LONG_CALL_FACTOR = 10
FIRST_BATCH = 5
# A case whose samples split into groups or drifted is measured again with this many
# times the budget before it is stored.
REMEASURE_BUDGET_FACTOR = 3
# A case measured while other processes held the machine is measured again after a
# pause, at most this many times; if it stays contended it is stored with the caveat.
CONTENDED_RETRIES = 1
CONTENDED_PAUSE_S = 2.0
# Under a power or heat limit a sample is at least this long, and sampling spans the whole
# budget: the limit swings the clocks for about a second at a time (an 8192³ bf16 product
# on an H100 at its 700 W cap: SM clock 1200–1770 MHz, 1455–1730 µs a call in 100 ms
# windows), so 75 ms of samples stopped early saw one phase of the swing (answers 1457–
# 1530 µs over ten repeats, where the peers' ranged 1510–1528 µs). The driver moves the
# clock in steps of tens of ms: samples of 20 ms sat on one step each (1514 or 1530 µs),
# and their median on whichever step came up most; a sample of 50 ms spans several.
GOVERNED_SAMPLE_S = 0.05


@dataclass(frozen=True)
class Tries:
    """How often a case was taken again so far, and why: the one policy, and the one set
    of counters, of every entry point that measures a case again (`measure_watched`, a
    `gpuvs dist` rank). Samples in two groups, or drifting, are taken once more with
    REMEASURE_BUDGET_FACTOR times the budget (counter `remeasured`); a case that other
    processes contended, once more after CONTENDED_PAUSE_S, at most CONTENDED_RETRIES
    times (`contended_retries`, and `paused_s`, the machine's time, not the case's)."""

    remeasured: bool = False
    retries: int = 0
    paused_s: float = 0.0

    def remeasure(self, found: Iterable[Caveat]) -> bool:
        return not self.remeasured and bool(caveats.REMEASURE & set(found))

    def retry(self, found: Iterable[Caveat]) -> bool:
        return Caveat.CONTENDED in set(found) and self.retries < CONTENDED_RETRIES

    def remeasuring(self) -> Tries:
        return replace(self, remeasured=True)

    def paused(self, pause: Callable[[float], None] = time.sleep) -> Tries:
        """After CONTENDED_PAUSE_S of `pause`: let whatever else runs finish."""
        t0 = time.perf_counter()
        pause(CONTENDED_PAUSE_S)
        return replace(self, retries=self.retries + 1,
                       paused_s=self.paused_s + time.perf_counter() - t0)

    @property
    def budget_factor(self) -> float:
        return REMEASURE_BUDGET_FACTOR if self.remeasured else 1.0

    def counters(self) -> dict[str, float]:
        return ({"remeasured": 1.0} if self.remeasured else {}) | (
            {"contended_retries": float(self.retries), "paused_s": self.paused_s}
            if self.retries else {})


class DeviceTimer(Protocol):
    """Records many intervals and synchronises once, when they are read (triton's do_bench)."""

    def start(self) -> None: ...
    def stop(self) -> None: ...
    def lap(self) -> None:
        """End the open interval and start the next at the same mark: samples laid end to
        end leave no time between them that a loop of calls would have paid."""
        ...
    def elapsed(self) -> list[float]:
        """Seconds of every interval since the last read; synchronises once."""
        ...


class Clock(Protocol):
    """How one device is timed. Backends provide one per device."""

    name: str        # how `samples` are taken: "host", "cuda_events", "host_sync"
    is_async: bool   # True when a call can return before its work is done

    def now(self) -> float: ...
    def synchronize(self, result: object = None) -> None: ...
    def timer(self) -> DeviceTimer | None:
        """Device-side timer, or None to time with the synchronised host clock."""
        ...


class HostTimer:
    """Intervals on the host clock; correct only where the work is synchronous."""

    def __init__(self, now: Callable[[], float] = time.perf_counter) -> None:
        self._now = now
        self._marks: list[tuple[float, float]] = []
        self._t0 = 0.0

    def start(self) -> None:
        self._t0 = self._now()

    def stop(self) -> None:
        self._marks.append((self._t0, self._now()))

    def lap(self) -> None:
        t = self._now()
        self._marks.append((self._t0, t))
        self._t0 = t

    def elapsed(self) -> list[float]:
        out = [b - a for a, b in self._marks]
        self._marks.clear()
        return out


class HostClock:
    """The CPU: calls are synchronous, so host time is device time."""

    name = "host"
    is_async = False

    def now(self) -> float:
        return time.perf_counter()

    def synchronize(self, result: object = None) -> None:
        return None

    def timer(self) -> DeviceTimer | None:
        return HostTimer()


@dataclass(frozen=True)
class Budget:
    """How long one case may take, and how long one sample should be."""

    seconds: float = 1.0           # sampling time per case, after the first call
    # Sampling goes on at least this long even once the criterion is met: an energy
    # counter that moves every 100 ms needs a window of about a second of calls.
    min_sampling_s: float = 0.0
    warmup_fraction: float = 0.25  # share of `seconds` warm-up may take at most
    max_warmups: int = 50
    target_sample_s: float = 0.002  # one sample ≥ this: far above timer resolution
    max_loops: int = 100_000
    # Samples that drift or fall in groups are taken again for longer (`Tries.remeasure`);
    # not where other processes sample the case too (`execute.wire.Sampling.processes`).
    remeasure: bool = True


@dataclass(frozen=True)
class Prepared:
    """A case ready to time; inputs were built outside any timed region.

    With `single_call` every sample is one call: the case measures latency, not throughput.
    `flush`, when set, runs before every timed call to evict the caches (cold measurements).
    `self_timed` is the post's own timing method, which `as_written` cases replay instead
    of the protocol. `parts` are pieces of the call timed apart after it, by the same
    protocol (two models run together: each one alone), stored as `<name>_s` counters.
    `counters` are what the work itself records while it runs (a fit's epoch times and
    accuracies), stored with the measurement once it is taken. `watches` hear when
    sampling starts and ends (an energy window) and, on a GPU whose sensors they read,
    keep the warm-up going (within its share of the budget) until the device's clocks
    stop rising, and say whether a power or heat limit governs them, which makes the
    samples longer and spread over the whole budget.
    """

    call: Callable[[], object]
    check: Callable[[object], None]
    single_call: bool = False
    flush: Callable[[], None] | None = None
    self_timed: SelfTimed | None = None
    parts: tuple[tuple[str, Callable[[], object]], ...] = ()
    counters: dict[str, float] = field(default_factory=dict)
    watches: Watches = field(default_factory=Watches)


def measure(prepared: Prepared, case: Case, clock: Clock, criterion: StoppingCriterion,
            budget: Budget = Budget()) -> Measurement:
    """Time one prepared case by the gpuvs protocol."""
    first_call_s, output = _time_first_call(prepared, clock)
    try:
        prepared.check(output)
    except WrongResult as e:
        return Measurement(case, Status.WRONG_RESULT, reason=str(e), first_call_s=first_call_s,
                           timer=clock.name)
    del output
    warm = _warm_up(prepared, clock, budget)
    governed = prepared.watches.governed()
    sampled = _sampled(criterion, prepared, clock, warm, budget, governed)
    if sampled is None:  # the card met its limit while sampling: start again under it
        criterion.reset()
        governed = True
        sampled = _sampled(criterion, prepared, clock, warm, budget, governed)
    assert sampled is not None  # governed sampling is never cut short
    samples, wall, met, loops = sampled
    return Measurement(
        case, Status.OK, samples=tuple(samples),
        wall_samples=tuple(wall) if clock.is_async else (),
        loops=loops, first_call_s=first_call_s, warmups=warm.calls, timer=clock.name,
        caveats=caveats.detect(samples, first_call_s, met),
        counters={"clocks_governed": 1.0} if governed else {},
    )


def measure_watched(make: Callable[[], Prepared], case: Case, clock: Clock,
                    new_criterion: Callable[[], StoppingCriterion], budget: Budget,
                    watches: Watches | None = None,
                    pause: Callable[[float], None] = time.sleep,
                    again: Callable[[], None] = lambda: None
                    ) -> tuple[Measurement, Prepared]:
    """The one measuring path: every entry point (a worker, `gpuvs.measure`,
    `gpuvs.compare`, the magic, the fixture) times a case here, inside its `watches`.

    The watches start before the inputs are built (`make`), hold what they hold while
    the protocol runs, and add their caveats and counters at the end. Samples in two
    groups, or drifting, are taken again on fresh inputs with REMEASURE_BUDGET_FACTOR
    times the budget (counter `remeasured`): look longer before calling it a number —
    unless `budget.remeasure` is off, where other processes sample the case too. A
    case that other processes contended is measured again after CONTENDED_PAUSE_S, at
    most CONTENDED_RETRIES times (counter `contended_retries`); if it stays contended it
    is kept with the caveat; `again()` is told before each new try (a worker tells its
    parent, whose clock on the case starts again). Returns the measurement and the
    prepared case it measured, whose `parts` and `counters` the caller still needs."""
    watches = watches if watches is not None else Watches()
    tries = Tries()
    while True:
        watches.case_started()
        m, prepared = _split_measured_again(make, case, clock, new_criterion, budget, watches)
        seen = watches.case_ended()
        m = replace(m, caveats=tuple(dict.fromkeys((*m.caveats, *seen.caveats))),
                    counters={**m.counters, **seen.counters})
        if not tries.retry(m.caveats):
            break
        del prepared  # its inputs go before the fresh ones are made
        gc.collect()
        again()
        tries = tries.paused(pause)
    # the pause is the machine's, not the case's: `case_s` leaves it out
    return replace(m, counters={**m.counters, **tries.counters()}), prepared


def _split_measured_again(make: Callable[[], Prepared], case: Case, clock: Clock,
                          new_criterion: Callable[[], StoppingCriterion], budget: Budget,
                          watches: Watches) -> tuple[Measurement, Prepared]:
    prepared = replace(make(), watches=watches)
    with watches.timing():
        m = measure(prepared, case, clock, new_criterion(), budget)
    if not budget.remeasure or not Tries().remeasure(m.caveats):
        return m, prepared
    del prepared  # its inputs go before the fresh ones are made
    gc.collect()
    prepared = replace(make(), watches=watches)
    again = Tries().remeasuring()
    with watches.timing():
        m = measure(prepared, case, clock, new_criterion(),
                    replace(budget, seconds=again.budget_factor * budget.seconds))
    return replace(m, counters={**m.counters, **again.counters()}), prepared


def measure_as_written(prepared: Prepared, case: Case, clock: Clock) -> Measurement:
    """An `as_written` case: the post's own method first, on fresh state as the post ran
    it; then the device drained and the output checked, outside anything timed."""
    if prepared.self_timed is None:
        raise ValueError(f"{case.workload} has no as_written replay for {case.key}")
    timed, out = prepared.self_timed.run()
    samples = tuple(timed)
    clock.synchronize(out)
    try:
        prepared.check(out)
    except WrongResult as e:
        return Measurement(case, Status.WRONG_RESULT, reason=str(e), samples=samples,
                           timer=prepared.self_timed.method)
    return Measurement(case, Status.OK, samples=samples, timer=prepared.self_timed.method)


def _time_first_call(prepared: Prepared, clock: Clock) -> tuple[float, object]:
    clock.synchronize()
    t0 = clock.now()
    out = prepared.call()
    clock.synchronize(out)
    return clock.now() - t0, out


@dataclass(frozen=True)
class WarmUp:
    """How the warm-up ended: its calls, a steady call's wall seconds, and — when one call
    outlasted the whole sampling budget — that call's (device, wall) seconds as a sample."""

    calls: int
    per_call_s: float
    sample: tuple[float, float] | None = None


def _warm_up(prepared: Prepared, clock: Clock, budget: Budget) -> WarmUp:
    """Run untimed-for-the-record calls until the last ones stop getting faster.

    A call longer than the whole sampling budget ends the warm-up by itself; it followed
    the first call, which paid the one-time costs, so it is kept as the first sample
    (timed as samples are) instead of thrown away: after its first call, a 16 s Jacobian
    then costs two calls, not four."""
    end = clock.now() + budget.seconds * budget.warmup_fraction
    timer = clock.timer()
    wall = _one_sample_s(prepared, clock, timer, 1)
    if wall >= budget.seconds:
        device = timer.elapsed()[0] if timer is not None else wall
        return WarmUp(1, wall, (device, wall))
    times = [wall]
    w = WARMUP_WINDOW
    while len(times) < budget.max_warmups and clock.now() < end:
        times.append(_one_sample_s(prepared, clock, None, 1))
        if len(times) >= 2 * w and min(times[-w:]) >= WARMUP_STABLE_FACTOR * min(times[-2 * w:-w]):
            break
    watches = prepared.watches
    while watches and clock.now() < end and not watches.settled():
        times.append(_one_sample_s(prepared, clock, None, 1))
    return WarmUp(len(times), min(times[-w:]))


def _calibrate_loops(prepared: Prepared, clock: Clock, per_call_s: float,
                     budget: Budget) -> int:
    """Guess loops from one synchronised call, then grow them until a sample is long enough.

    One call's wall time includes a synchronisation that a loop pays once, so on an
    asynchronous device the guess is short; trial samples correct it (timeit's autorange).
    A call far longer than the target needs no trial: it is one sample.
    """
    if per_call_s >= LONG_CALL_FACTOR * budget.target_sample_s:
        return 1
    loops = max(1, min(budget.max_loops,
                       math.ceil(budget.target_sample_s / max(per_call_s, 1e-12))))
    for _ in range(CALIBRATION_ROUNDS):
        sample_s = _one_sample_s(prepared, clock, None, loops)
        if sample_s >= budget.target_sample_s or loops >= budget.max_loops:
            break
        grow = budget.target_sample_s / max(sample_s, 1e-12) * CALIBRATION_MARGIN
        loops = min(budget.max_loops, math.ceil(loops * grow))
    return loops


def _sampled(criterion: StoppingCriterion, prepared: Prepared, clock: Clock, warm: WarmUp,
             budget: Budget, governed: bool
             ) -> tuple[list[float], list[float], bool, int] | None:
    """Loops calibrated, then samples: (device samples, wall samples, criterion met, loops).
    Governed by a power or heat limit, samples are GOVERNED_SAMPLE_S or longer and span
    the whole budget. Otherwise the sensors are asked after each batch, and None says the
    limit set in while sampling: what was sampled belongs to the clocks before it."""
    if governed:
        budget = replace(budget, target_sample_s=max(budget.target_sample_s, GOVERNED_SAMPLE_S))
    loops = 1 if prepared.single_call else _calibrate_loops(prepared, clock, warm.per_call_s,
                                                            budget)
    watches = prepared.watches
    capped = None if governed or not watches.can_tell() else watches.governed
    taken = _sample_until(criterion, prepared, clock, loops, warm, budget, governed, capped)
    return None if taken is None else (*taken, loops)


def _sample_until(criterion: StoppingCriterion, prepared: Prepared, clock: Clock, loops: int,
                  warm: WarmUp, budget: Budget, whole_budget: bool = False,
                  capped: Callable[[], bool] | None = None
                  ) -> tuple[list[float], list[float], bool] | None:
    """Samples in batches; device intervals are read (one synchronisation) per batch.
    The first batch is what the budget holds at the warm-up's pace, at least MIN_SAMPLES
    (LONG_CALL_MIN_SAMPLES with the warm-up's own, for calls longer than the budget):
    five seconds-long calls where the budget holds one would overrun it fivefold. With
    `whole_budget` a met criterion does not end the sampling: the budget does; nor does it
    before `budget.min_sampling_s`. None as soon as `capped()` says a power or heat limit
    set in. The watches hear the sampling start and end, with every call run between."""
    timer = clock.timer()
    prepared.watches.sampling_started()
    began = clock.now()
    end = began + max(budget.seconds, budget.min_sampling_s)
    calls = 0
    samples: list[float] = []
    wall: list[float] = []
    least = MIN_SAMPLES
    if warm.sample is not None:
        samples.append(warm.sample[0])
        wall.append(warm.sample[1])
        criterion.add(warm.sample[0])
        least = LONG_CALL_MIN_SAMPLES
    fits = int(budget.seconds / max(warm.per_call_s * loops, 1e-12))
    batch = max(least - len(samples), min(FIRST_BATCH, fits))
    # A long sample needs no lead-in: a start from idle costs it tens of µs at most.
    lead_in = warm.per_call_s * loops < LONG_CALL_FACTOR * budget.target_sample_s
    while True:
        device, batch_wall, per_sample, ran = _batch(prepared, clock, timer, loops, batch,
                                                     lead_in)
        calls += ran
        for d in device:
            samples.append(d / loops)
            criterion.add(d / loops)
        wall.extend(w / loops for w in batch_wall)
        if capped is not None and capped():
            return None
        met = criterion.done()
        spanned = clock.now() - began >= budget.min_sampling_s
        if (met and spanned and not whole_budget
                or clock.now() >= end and len(samples) >= least):
            prepared.watches.sampling_ended(calls)
            return samples, wall, met
        # Size the next batch to what the remaining budget can hold, at least one sample.
        batch = max(1, min(2 * batch, int((end - clock.now()) / max(per_sample, 1e-9))))


def _batch(prepared: Prepared, clock: Clock, timer: DeviceTimer | None, loops: int,
           count: int, lead_in: bool = True
           ) -> tuple[list[float], list[float], float, int]:
    """`count` samples of `loops` calls: (each sample's device seconds, wall seconds, the
    wall seconds a sample took, the calls run). On an asynchronous device with events,
    the samples run back to back and tile the batch (`DeviceTimer.lap`), after one untimed loop
    (`lead_in`) that keeps the device busy while the first event is queued, and the
    batch's synchronised wall time is one wall sample. Cold cases keep one synchronised
    sample per flush: each call starts from flushed caches."""
    if timer is None or not clock.is_async or prepared.flush is not None:
        walls = [_one_sample_s(prepared, clock, timer, loops) for _ in range(count)]
        device = timer.elapsed() if timer is not None else walls
        return device, walls, sum(walls) / len(walls), count * loops
    call = prepared.call
    clock.synchronize()
    t0 = clock.now()
    out = None
    for _ in range(loops if lead_in else 0):
        out = call()
    timer.start()
    for i in range(count):
        for _ in range(loops):
            out = call()
        timer.lap() if i + 1 < count else timer.stop()
    clock.synchronize(out)
    per_sample = (clock.now() - t0) / (count + lead_in)
    return timer.elapsed(), [per_sample], per_sample, (count + lead_in) * loops


def _one_sample_s(prepared: Prepared, clock: Clock, timer: DeviceTimer | None,
                  loops: int) -> float:
    call = prepared.call
    if prepared.flush:
        prepared.flush()
    clock.synchronize()
    t0 = clock.now()
    if timer is not None:
        timer.start()
    out = None
    for _ in range(loops):
        out = call()
    if timer is not None:
        timer.stop()
    clock.synchronize(out)
    return clock.now() - t0
