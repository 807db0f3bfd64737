"""The parent: a pool of spawned workers (one per backend, its twins for the later
passes, one per post and device for the replays), a clock on every case, each result saved.

The parent owns the clock: a case that outlives its timeout has its worker's whole
process group killed and is recorded `TIMEOUT`; a worker that dies is `CRASHED` with
its signal and stderr tail (or `OOM` when SIGKILL came from outside — the host's
out-of-memory killer), as `gpuvs.execute.supervisor` words it; either way a fresh worker takes the
next case. An out-of-memory stops its series growing. A case's first pass is saved the
moment it arrives, and the case again once its last pass has: a kill loses at most the
case in flight and the later passes of those between passes, which `--resume` measures
again in full anyway (`complete`).
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

from gpuvs import backends, stats
from gpuvs.backends.base import NO_GPU
from gpuvs.config import RunConfig
from gpuvs.execute.observe import as_counters, observations
from gpuvs.execute.policy import OutOfMemorySeries
from gpuvs.execute.supervisor import STARTUP_ALLOWANCE_S, Child
from gpuvs.execute.wire import Again, Measured, Message, Observe, Observed, Preload, Sampling, Take
from gpuvs.machine import contention, energy, memory
from gpuvs.machine.energy import EnergyOptions
from gpuvs.measuring import caveats
from gpuvs.model import REPEAT_SPREAD, Case, Caveat, Measurement, Params, Status, on_gpu

# A fresh worker imports its framework and initialises the device before its first case.
# A case whose call took longer than this (a seconds-long Jacobian) is sampled in one
# pass only.
PASS_MAX_CASE_S = 3.0
# A pass of a case no estimate costed, beyond its budget share: the request, the watches,
# the first call and fresh inputs (`estimate.CASE_OVERHEAD_S` and a little more).
DEFAULT_PASS_OVERHEAD_S = 0.3
# How much the countdown trusts the plan's estimate before the run has shown its pace:
# as if this share of the estimate had already run as estimated (`Pace.prior_s`).
PACE_PRIOR_SHARE = 0.1
# A case is sampled in more than two processes unless the device sets its pace: a GPU
# case with its data resident, whose call takes at least this long and whose processes'
# medians so far lie within PROCESSES_AGREE. Where the host sets the pace — a short GPU
# call, copies, every CPU case — its pace is decided per process, and two processes that
# agree say nothing of a third: on two runs of one H100 (2026-11-27) the cases stopped at
# two agreeing processes (NumPy's 512² and 1024² products, torch's 1024² on the CPU, a
# 512² product end to end) held the other run's figure in none of four.
MORE_PROCESSES_BELOW_S = 200e-6
PROCESSES_AGREE = 0.02
# Measuring workers alive at once, at most: the later passes' workers start ahead, together
# (a start-up paid once, not at every pass), up to this many with the measuring pass's;
# past it (`--passes 20` on four backends) a pass's workers start when an earlier pass's
# have gone. Each holds its framework and its device context (on the H100 twenty workers,
# fifteen of them with a GPU context, held 5.97 GiB of GPU memory). run-file's workers,
# one a pass, keep the same limit (`yours.file_runner`).
AHEAD_MOST = 24
# Counters of what the parent waited for a case, and of the CPU others took from its
# sampling and it asked for, which merged passes add up.
SUMMED_COUNTERS = ("runner_s", "start_s", "contended_retries", "paused_s", "others_cpu_s",
                   "asked_cpu_s")


class Recorder(Protocol):
    """Where finished measurements go: a run being recorded (`gpuvs.store.runs`)."""

    def record(self, m: Measurement) -> None: ...


class Kept:
    """A recorder in memory, for measurements that are no run's cases, or not yet: each
    case's latest (a case is recorded after its first process and after its last)."""

    def __init__(self) -> None:
        self._latest: dict[str, Measurement] = {}

    def record(self, m: Measurement) -> None:
        self._latest[m.case.key] = m

    @property
    def measurements(self) -> list[Measurement]:
        return list(self._latest.values())


@dataclass
class Pace:
    """The time a run has left: what the plan's estimate says the passes still to run
    cost (`estimate.Estimate.passes_s`: the shape of the plan), scaled by how long the
    passes run so far took against what it said of them.

    Counting cases at the pace so far read a sweep's small first cases as the pace of its
    large last ones (a sweep said "0:14 left" with 106 s to go), and a two-pass run's first
    pass as the pace of its later one, which only samples. The estimate knows a 4096³
    product costs more than a 256³ one and a later pass less than the first; the run's own
    time says how far off it is on this machine today. Without an estimate every pass of
    every case counts `default_s`, and the pace is the run's own."""

    left: dict[str, list[float]]  # each case's expected seconds for each pass still to run
    passes: int
    default_s: float
    spent_s: float = 0.0     # what the passes run so far took
    expected_s: float = 0.0  # what the estimate said of them
    prior_s: float = 0.0     # seconds of the estimate taken at its word before any ran

    @classmethod
    def of(cls, cases: Sequence[Case], config: RunConfig,
           expected: Mapping[str, Sequence[float]] | None = None) -> Pace:
        """`expected`: the estimate's seconds per pass of each case (one it left out, as
        unable to run here, costs nothing); None where the command made no estimate."""
        default_s = config.budget_s / config.passes + DEFAULT_PASS_OVERHEAD_S
        left = {c.key: list(expected.get(c.key, ()) if expected is not None
                            else [default_s] * config.passes) for c in cases}
        prior = PACE_PRIOR_SHARE * sum(map(sum, left.values())) if expected is not None else 0
        return cls(left, config.passes, default_s, prior_s=prior)

    def ran(self, key: str, n: int, took_s: float, runs_again: bool, decided: bool) -> None:
        """Pass `n` of case `key` took `took_s`; whether it runs in the next pass too.
        A case `decided` without a worker (unavailable, skipped) sets no pace."""
        todo = self.left.setdefault(key, [])
        cost = todo.pop(0) if todo else self.default_s
        if decided:
            todo.clear()
            return
        self.spent_s += took_s
        self.expected_s += cost
        if not runs_again or n + 1 >= self.passes:
            todo.clear()
        elif not todo:  # the estimate took it to run once: its later passes cost as this one
            todo.extend([cost] * (self.passes - 1 - n))

    def left_s(self) -> float | None:
        """None until a measured pass sets a pace. The pace counts the estimate's own word
        as `prior_s` seconds that ran as it said: a run's first cases (a post's replays,
        the smallest sizes) are seldom its typical ones, and alone they read a seeds run's
        5 minutes left as 1 minute."""
        if self.expected_s <= 0:
            return None
        pace = (self.spent_s + self.prior_s) / (self.expected_s + self.prior_s)
        return pace * sum(map(sum, self.left.values()))


@dataclass
class RunSummary:
    counts: Counter[str] = field(default_factory=Counter)
    measurements: list[Measurement] = field(default_factory=list)


class Worker(Child):
    """One child process for one backend, talked to in JSON lines. It starts `device`,
    and imports what the `preload` cases need, before it says it is ready
    (`gpuvs.execute.worker`)."""

    def __init__(self, backend: str, device: str = "cpu", preload: Sequence[Case] = ()
                 ) -> None:
        super().__init__([sys.executable, "-m", "gpuvs.execute.worker", backend, device],
                         env=backends.get(backend).worker_env())
        self.device = device
        # One case of each kind (workload, variant, parameters): the imports differ by
        # kind, not by size.
        kinds: dict[tuple[str, str, Params], Case] = {}
        for c in preload:
            kinds.setdefault((c.workload, c.variant, c.params), c)
        self.preload = tuple(kinds.values())
        # A worker that died at once is found out by its first case.
        self.send(Preload(self.preload))
        self.ready = False
        self.fresh = True
        self.ran: set[tuple[str, str]] = set()  # (workload, device) of each replay it ran

    def await_ready(self) -> None:
        """Wait until the worker has loaded its framework and started its device. One that
        dies starting is left for its first case to find dead; one that hangs is killed
        (and its first case finds that)."""
        if not self.ready:
            self.ready = True
            self.event(time.monotonic() + STARTUP_ALLOWANCE_S)

    def ask(self, request: Take | Observe, timeout_s: float) -> Message | None:
        """The worker's answer, or None if it died or timed out (see `failure`). A case
        measured again because it was contended starts its clock again (`Again`)."""
        self.await_ready()
        if not self.send(request):
            return None
        allowance = STARTUP_ALLOWANCE_S if self.fresh else 0.0
        self.fresh = False
        deadline = time.monotonic() + timeout_s + allowance
        while isinstance(answer := self.event(deadline), Again):
            deadline = time.monotonic() + timeout_s
        return answer

    def replays_as_in_one_process(self, case: Case) -> bool:
        """Whether the replay `case` may run here: the worker has run nothing, or only
        replays of the same post on the same device — cells the post ran one after
        another in one process (seed 002's `ones`, then `x *= 5`, then the chain)."""
        return self.ran <= {(case.workload, case.device)}


class Pool:
    """The run's worker processes: the measuring worker of each backend, its twins for the
    later passes (a pass runs in fresh processes), one process for each post's replays on
    each device, and those winding down.

    Every worker the plan needs is started together, at the first case that needs one,
    instead of one at a time between cases: they start in parallel, and each waits ready
    with its framework loaded and its device started. On the H100 twenty workers (five
    passes of four backends) were ready in 5.4 s, eight in 5.1 s; starting each pass's
    twins at the pass before it paid that start-up again at every pass, 15–17 s of a
    five-pass default run (docs/accuracy.md). An idle worker costs its device context
    in memory, which the memory guard sees as taken. Nothing is measured while a worker
    starts or winds down: an import or a context torn down takes CPU time that a case
    would share (and be called `contended` for, and measured again). A worker that dies
    is replaced alone, and waited for too."""

    def __init__(self, cases: Sequence[Case], passes: int) -> None:
        self._plan, self._passes, self._started = cases, passes, False
        self.measuring: dict[str, Worker] = {}  # by backend
        self.following: list[dict[str, Worker]] = []  # each later pass's, by backend
        self.replaying: dict[str, Worker] = {}  # the replay process in use, by backend
        self.waiting: dict[tuple[str, str, str], Worker] = {}  # by (backend, post, device)
        self.retired: list[Worker] = []
        self._measured: dict[str, list[Case]] = {}  # each backend's cases, for its workers
        self._groups = 0  # passes whose workers were started
        # Seconds spent waiting for workers to start or wind down: a case's `start_s`,
        # which a plan's estimate counts once per run, not as that case's own cost.
        self.waited_s = 0.0

    def worker_for(self, case: Case) -> Worker:
        """The ready worker that runs `case`, once every starting worker is ready."""
        t0 = time.perf_counter()
        try:
            return self._worker_for(case)
        finally:
            self.waited_s += time.perf_counter() - t0

    def _worker_for(self, case: Case) -> Worker:
        if not self._started:
            self._started = True
            self._start_ahead()
        b = case.backend
        if case.variant == "as_written":
            worker = self.replaying.get(b)
            if worker is not None and (worker.proc.poll() is not None
                                       or not worker.replays_as_in_one_process(case)):
                self._retire(worker)
                worker = None
            if worker is None:
                worker = (self.waiting.pop((b, case.workload, case.device), None)
                          or Worker(b, case.device))
                self.replaying[b] = worker
            worker.ran.add((case.workload, case.device))
        else:
            worker = self.measuring.get(b)
            if worker is None or worker.proc.poll() is not None:
                worker = self.measuring[b] = Worker(b, case.device)
        self._settle()
        return worker

    def observer(self, case: Case) -> Worker:
        """The worker that observes `case`: its backend's measuring worker of the pass
        just ended, which times nothing more, or a fresh one if that one died."""
        b = case.backend
        worker = self.measuring.get(b)
        if worker is None or worker.proc.poll() is not None:
            worker = self.measuring[b] = Worker(b, case.device)
        self._settle()
        return worker

    def drop(self, worker: Worker) -> None:
        """A worker that died or must be replaced: the next case starts a fresh one."""
        for group in (self.measuring, self.replaying):
            for b, w in list(group.items()):
                if w is worker:
                    del group[b]

    def next_pass(self) -> None:
        """The next pass measures in the processes started for it; the last one's go, and
        passes not yet started start now, as many as AHEAD_MOST allows."""
        for w in list(self.measuring.values()):
            self._retire(w)
        self.measuring = self.following.pop(0) if self.following else self._group()
        self._ahead()

    def close(self, stopping: bool) -> None:
        """End every worker: all told first, so that they wind down together."""
        every = (*self.retired, *self.measuring.values(), *self._later(),
                 *self.replaying.values(), *self.waiting.values())
        for w in every:
            w.kill() if stopping else w.retire()
        for w in every:
            w.close()

    def _start_ahead(self) -> None:
        replays: dict[tuple[str, str, str], list[Case]] = {}
        measured: dict[str, list[Case]] = {}
        for case in self._plan:
            if _precheck(case) is not None:  # decided without a worker
                continue
            if case.variant == "as_written":
                replays.setdefault((case.backend, case.workload, case.device), []).append(case)
            else:
                measured.setdefault(case.backend, []).append(case)
        for key, cases in replays.items():
            self.waiting[key] = Worker(key[0], key[2], cases)
        self._measured = measured
        self.measuring = self._group()
        self._ahead()

    def _group(self) -> dict[str, Worker]:
        """A pass's workers: one of each backend measured."""
        self._groups += 1
        return {b: Worker(b, cases[0].device, cases) for b, cases in self._measured.items()}

    def _ahead(self) -> None:
        """Later passes' workers started ahead, while they fit in AHEAD_MOST (a pass's
        group started at least) and passes remain to start."""
        while self._groups < self._passes and (not self.following or len(self._measured) * (
                len(self.following) + 2) <= AHEAD_MOST):
            self.following.append(self._group())

    def _later(self) -> list[Worker]:
        return [w for group in self.following for w in group.values()]

    def _retire(self, worker: Worker) -> None:
        worker.retire()
        self.retired.append(worker)
        self.drop(worker)

    def _settle(self) -> None:
        for w in self.retired:
            w.close()
        self.retired.clear()
        for w in (*self.measuring.values(), *self._later(),
                  *self.replaying.values(), *self.waiting.values()):
            w.await_ready()


def execute(run: Recorder, cases: Iterable[Case], config: RunConfig,
            on_result: Callable[[Measurement, float | None], None] = lambda m, left_s: None,
            skip_keys: frozenset[str] = frozenset(),
            expected: Mapping[str, Sequence[float]] | None = None) -> RunSummary:
    """Run every case not in `skip_keys`, saving each measurement as it arrives.

    With `config.passes` above one, the plan runs again in fresh worker processes, each
    pass with its share of the budget, and a case's samples from every pass are merged:
    its CI then covers what a new process, a moment later, gives (a process's own memory
    layout, a passing load) — a CI from one process covers only that process. Replays of
    a post, cases that failed, and calls too long to sample twice run once. The workers
    come from a `Pool`, which starts them all before the first case. `on_result` gets each
    finished case and the time the run has left (`Pace`, along the plan's estimate of
    each case's passes where `expected` gives it; None before there is a pace)."""
    summary = RunSummary()
    oom = OutOfMemorySeries()
    sampling = Sampling.of(config, config.passes)
    todo = [c for c in cases if c.key not in skip_keys]
    requests = Requests.before(todo, config, sampling)
    pool = Pool(todo, config.passes)
    pace = Pace.of(todo, config, expected)
    done: dict[str, Measurement] = {}
    try:
        for n in range(config.passes):
            if n:
                pool.next_pass()
            for case in todo:
                if n and not _again(done[case.key]):
                    continue
                # A later pass adds samples only: the counts, parts and busy time that the
                # first pass measured are kept when the two are merged.
                request = requests.take(case, done.values(), samples_only=n > 0)
                began = time.perf_counter()
                m = (_precheck(case) or oom.stopped(case.series, case)
                     or _dispatch(request, pool, config))
                oom.note(case.series, m)
                # the pool's start-up is the estimate's apart: it sets no pace
                took = time.perf_counter() - began - m.counters.get("start_s", 0.0)
                decided = m.status in (Status.UNAVAILABLE, Status.SKIPPED)
                this_pass = m
                m = merged(done[case.key], this_pass, judged=False) if n else this_pass
                final = n == config.passes - 1 or not _again(m)
                if n and final:  # judged once, over every pass
                    m = merged(done[case.key], this_pass)
                done[case.key] = m
                if n == 0 or final:  # the first pass's result, and the case's own
                    run.record(m)
                pace.ran(case.key, n, took, not final, decided)
                if final:
                    summary.counts[m.status.value] += 1
                    summary.measurements.append(m)
                    on_result(m, pace.left_s())
            if n == 0:
                _observe(pool, done, sampling, config, run)
    finally:
        pool.close(stopping=sys.exc_info()[0] is not None)  # Ctrl-C, SIGTERM: kill them
    return summary


@dataclass(frozen=True)
class Requests:
    """How each case is asked of its worker: the run's sampling, and what the parent hands
    the case's watches, measured before any worker starts — the GPUs' idle power (nothing
    runs yet), where an energy counter can answer (those cases sample ENERGY_WINDOW_S at
    least), a declared CPU power, and the peaks the case's series reached at smaller sizes
    (the memory guard's slope)."""

    sampling: Sampling
    idle_w: dict[str, float]
    counted: frozenset[str]  # devices whose energy counter can be read here

    @classmethod
    def before(cls, cases: Sequence[Case], config: RunConfig, sampling: Sampling) -> Requests:
        """Idle power is measured where energy is asked for or sampling spans its window
        anyway: one IDLE_WINDOW_S per GPU, before the first case."""
        devices = {c.device for c in cases if _precheck(c) is None}
        on = config.energy or sampling.budget_s >= energy.ENERGY_WINDOW_S
        idle = energy.idle_by_device(sorted(devices)) if on else {}
        counted = frozenset(d for d in devices if config.energy and energy.readable(d))
        return cls(sampling, idle, counted)

    def take(self, case: Case, measured: Iterable[Measurement], samples_only: bool) -> Take:
        """The case as a worker takes it: its energy watch's power (the GPU's idle power,
        the CPU's declared one), a whole energy window where a counter can be read, and
        its series' peaks so far."""
        p = self.sampling.power
        power = EnergyOptions(p.asked, self.idle_w.get(case.device),
                              p.declared_w if case.device == "cpu" else None)
        window = energy.ENERGY_WINDOW_S if case.device in self.counted else 0.0
        sampling = replace(self.sampling, power=power, min_sampling_s=window)
        peaks = tuple((int(s), float(b)) for s, b in memory.peaks_of(case, measured))
        return Take(case, sampling, samples_only, peaks)


def complete(m: Measurement, passes: int) -> bool:
    """Whether a stored case needs nothing more: a run stopped between its passes stored
    the first pass's result, which `--resume` measures again in full."""
    return not _again(m) or m.counters.get("passes", 1.0) >= passes


def _again(m: Measurement) -> bool:
    """Whether a case is measured again in the next pass, in a process of its own. Every
    case that can afford it runs in two; a third and later unless the device sets its
    pace (see MORE_PROCESSES_BELOW_S)."""
    # What the case cost: the worker's whole case where it says, else its samples' time
    # (the user's own code, timed in its own process, does not say).
    cost = m.counters.get("case_s", sum(m.samples) * m.loops)
    if not (m.status is Status.OK and m.case.variant != "as_written"
            and cost <= PASS_MAX_CASE_S):
        return False
    if len(m.passes) < 2 or not m.samples:
        return True
    # the merged figure (the median of the processes' medians), without its interval
    median = stats.median_of(stats.group_medians(m.samples, m.passes))
    # copies through host memory are the host's pace, a run's end-to-end calls and the
    # calibration's round trip alike: on two H200s (2026-11-28) the round trip took
    # 2.4–4.8 ms in some processes and 11–17 ms in others, and stopped at two that
    # agreed, its figure was one group's (2.64 ms in one run, 12.2 ms in another)
    copies = m.case.param("data") == "end_to_end" or m.case.param("bound") == "transfer"
    device_paced = on_gpu(m.case.device) and not copies and median >= MORE_PROCESSES_BELOW_S
    return not device_paced or m.counters.get("passes_apart", 0.0) > PROCESSES_AGREE


def merged(first: Measurement, later: Measurement, judged: bool = True) -> Measurement:
    """One case from two passes: samples in the order taken, each pass's count of them
    (`passes`: the CI covers every pass's median), how far apart the passes' medians are
    (`passes_apart`, relative), the first pass's first call, loops and what only it
    measured (kernel counts, parts, busy time), the later pass's other counters (peaks:
    the larger), and the caveats of both (`caveats.of_passes`: a shape as a pass saw
    it, never one made by laying two passes end to end). What the parent waited for the
    case (`runner_s`, `start_s`) adds up over its passes: what the case cost the run,
    which a later plan's estimate reads; so does the CPU others took from its sampling,
    and the case is contended where its processes together show it (`_contended`): each
    process's window alone may be too short to. A later pass that failed is the case's
    outcome: a number that could not be taken again is not kept.

    Not `judged`, the merge keeps only what each pass saw of itself, and no summary of
    the merged samples is made: a case between its passes, which the runner neither
    stores nor shows (the summaries of every pass of every case were a fifth of the
    parent's time in a five-process run)."""
    if later.status is not Status.OK:
        return later
    samples = (*first.samples, *later.samples)
    passes = (*(first.passes or (len(first.samples),)), len(later.samples))
    found = caveats.of_passes(samples, passes, first.first_call_s,
                              Caveat.BUDGET_EXHAUSTED not in later.caveats,
                              (first.caveats, later.caveats),
                              REPEAT_SPREAD.get(first.timer, 0.0)) if judged else tuple(
        dict.fromkeys(c for c in (*first.caveats, *later.caveats)
                      if c in caveats.WITHIN_A_PASS))
    medians = stats.group_medians(samples, passes)
    peaks = {k: max(v, first.counters.get(k, v)) for k, v in later.counters.items()
             if k.startswith("peak_")}  # the first pass also built the reference
    waited = {k: first.counters[k] + later.counters[k] for k in SUMMED_COUNTERS
              if k in first.counters and k in later.counters}
    found = _contended(found, waited, len(passes))
    if waited.get("asked_cpu_s"):
        waited["others_cpu_share"] = min(waited["others_cpu_s"] / waited["asked_cpu_s"], 1.0)
    return replace(first, samples=samples, passes=passes,
                   wall_samples=(*first.wall_samples, *later.wall_samples),
                   warmups=first.warmups + later.warmups,
                   counters={**first.counters, **later.counters, **peaks, **waited,
                             "passes": float(len(passes)),
                             "passes_apart": max(medians) / min(medians) - 1},
                   caveats=found)


def _contended(found: tuple[Caveat, ...], summed: Mapping[str, float], windows: int
               ) -> tuple[Caveat, ...]:
    """`found`, and `contended` where the CPU others took from the case's processes,
    added up, is contention (`contention.evidence`)."""
    import psutil

    taken, asked = summed.get("others_cpu_s"), summed.get("asked_cpu_s")
    if Caveat.CONTENDED in found or taken is None or asked is None:
        return found
    if contention.evidence(taken, asked, psutil.cpu_count() or 1, windows):
        return (*found, Caveat.CONTENDED)
    return found


def _precheck(case: Case) -> Measurement | None:
    """Cases decided without a worker: no GPU, or a dtype the backend lacks."""
    backend = backends.get(case.backend)
    if backend.gpu_missing(case.device):  # no worker started for nothing
        return Measurement(case, Status.UNAVAILABLE, reason=NO_GPU)
    if case.dtype not in backend.dtypes:
        return Measurement(case, Status.SKIPPED,
                           reason=f"{case.backend} has no {case.dtype}; it supports "
                                  f"{', '.join(backend.dtypes)}")
    return None


def _dispatch(request: Take, pool: Pool, config: RunConfig) -> Measurement:
    """The case run in its worker; `runner_s` is what it cost as the parent saw it: the
    worker's `case_s` plus starting workers where they were started for it, which
    `start_s` says apart."""
    t0, waited = time.perf_counter(), pool.waited_s
    m = _answered(request, pool, config)
    return replace(m, counters={**m.counters, "runner_s": time.perf_counter() - t0,
                                "start_s": pool.waited_s - waited})


def _observe(pool: Pool, done: dict[str, Measurement], sampling: Sampling,
             config: RunConfig, run: Recorder) -> None:
    """After the first pass's last timed case: each timed case observed in a worker that
    will time nothing more (the pass's own, which a later pass replaces with a fresh
    one): its parts timed alone first, then its kernels profiled and its graph replayed.
    The counters join the case's record; an observation that fails leaves it as it was."""
    wanted = [(m, what) for m in done.values() if m.status is Status.OK
              and m.summary is not None and m.case.variant != "as_written"
              for what in observations(backends.get(m.case.backend), m.case,
                                       m.summary.median)]
    for m, what in sorted(wanted, key=lambda mw: mw[1] != "parts"):  # parts first
        worker = pool.observer(m.case)
        t0 = time.perf_counter()
        answer = worker.ask(Observe(m.case, what, sampling), config.timeout_s)
        key = m.case.key
        # What observing the case cost the run (the profiler's start, a graph's capture):
        # where a run's time goes, apart from its cases' own.
        took = {"observed_s": done[key].counters.get("observed_s", 0.0)
                + time.perf_counter() - t0}
        seen = as_counters(answer.counters) if isinstance(answer, Observed) else {}
        if not isinstance(answer, Observed):  # it died observing: the next gets a fresh one
            worker.kill()
            pool.drop(worker)
        done[key] = replace(done[key], counters={**done[key].counters, **took, **seen})
        run.record(done[key])


def _answered(request: Take, pool: Pool, config: RunConfig) -> Measurement:
    """Measurements share one long-lived worker per backend (imports, device context and
    profiler paid once). A post's replays run apart, in a process of their own as the
    post's did — one process for the cells of one post on one device."""
    case = request.case
    worker = pool.worker_for(case)
    answer = worker.ask(request, config.timeout_s)
    if not isinstance(answer, Measured):
        m = worker.failure(case, config.timeout_s)
        worker.kill()
        pool.drop(worker)
        return m
    if answer.fatal:
        worker.close()
        pool.drop(worker)
    return answer.measurement
