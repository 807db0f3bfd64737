"""The parent: one spawned worker per backend (and one for a post's replays), a clock on
every case, each result saved.

The parent owns the clock: a case that outlives its timeout has its worker's whole
process group killed and is recorded `TIMEOUT`; a worker that dies is `CRASHED` with
its signal and stderr tail (or `OOM` when SIGKILL came from outside — the host's
out-of-memory killer), as `gpuvs.child` words it; either way a fresh worker takes the
next case. An out-of-memory stops its series growing. Every measurement is saved the
moment it arrives, so a kill loses at most the case in flight.
"""

from __future__ import annotations

import json
import queue
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from gpuvs import backends
from gpuvs.backends.base import NO_GPU
from gpuvs.caveats import detect as caveats_of
from gpuvs.child import STARTUP_ALLOWANCE_S, Child
from gpuvs.config import RunConfig
from gpuvs.model import Case, Caveat, Measurement, Status
from gpuvs.protocol import Budget

# A fresh worker imports its framework and initialises the device before its first case.
# A case whose call took longer than this (a seconds-long Jacobian) is sampled in one
# pass only.
PASS_MAX_CASE_S = 3.0
# Caveats a pass sees from outside the samples, kept when passes are merged.
PASS_CAVEATS = frozenset({Caveat.CONTENDED, Caveat.THROTTLED, Caveat.TF32_ON,
                          Caveat.MULTIMODAL, Caveat.DRIFTING})
# A case measured while other processes held the machine is measured again after a
# pause, at most this many times; if it stays contended it is stored with the caveat.
CONTENDED_RETRIES = 1
CONTENDED_PAUSE_S = 2.0


class Recorder(Protocol):
    """Where finished measurements go: a run being recorded (`gpuvs.store.runs`)."""

    def record(self, m: Measurement) -> None: ...


@dataclass
class RunSummary:
    counts: Counter[str] = field(default_factory=Counter)
    measurements: list[Measurement] = field(default_factory=list)


class Worker(Child):
    """One child process for one backend, talked to in JSON lines. It starts `device`
    before it says it is ready (`gpuvs.worker`)."""

    def __init__(self, backend: str, device: str = "cpu") -> None:
        super().__init__([sys.executable, "-m", "gpuvs.worker", backend, device],
                         env=backends.get(backend).worker_env())
        self.ready = False
        self.fresh = True
        self.ran: set[tuple[str, str]] = set()  # (workload, device) of each replay it ran
        self._lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read_stdout, daemon=True).start()

    def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def await_ready(self) -> None:
        """Wait until the worker has loaded its framework and started its device. One that
        dies starting is left for its first case to find dead; one that hangs is killed."""
        if self.ready:
            return
        self.ready = True
        try:
            line = self._lines.get(timeout=STARTUP_ALLOWANCE_S)
        except queue.Empty:
            self.kill()
            return
        if line is None:
            self._lines.put(None)  # its first case reads the death

    def ask(self, request: dict[str, Any], timeout_s: float) -> dict[str, Any] | None:
        """The worker's answer, or None if it died or timed out (see `failure`)."""
        self.await_ready()
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(json.dumps(request) + "\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            return None
        allowance = STARTUP_ALLOWANCE_S if self.fresh else 0.0
        self.fresh = False
        try:
            line = self._lines.get(timeout=timeout_s + allowance)
        except queue.Empty:
            self.kill()
            return None
        return json.loads(line) if line is not None else None

    def replays_as_in_one_process(self, case: Case) -> bool:
        """Whether the replay `case` may run here: the worker has run nothing, or only
        replays of the same post on the same device — cells the post ran one after
        another in one process (seed 002's `ones`, then `x *= 5`, then the chain)."""
        return self.ran <= {(case.workload, case.device)}


# The workers in use, by backend and whether they replay a post.
Workers = dict[tuple[str, bool], Worker]


def execute(run: Recorder, cases: Iterable[Case], config: RunConfig,
            on_result: Callable[[Measurement], None] = lambda m: None,
            skip_keys: frozenset[str] = frozenset()) -> RunSummary:
    """Run every case not in `skip_keys`, saving each measurement as it arrives.

    With `config.passes` above one, the plan runs again in fresh worker processes, each
    pass with its share of the budget, and a case's samples from every pass are merged:
    its CI then covers what a new process, a moment later, gives (a process's own memory
    layout, a passing load) — a CI from one process covers only that process. Replays of
    a post, cases that failed, and calls too long to sample twice run once.

    The next pass's worker for a backend starts together with this pass's (a spare), so
    a pass costs no second start-up (framework import, device context: about 5 s for
    torch on CUDA); no case is measured until every starting worker is ready."""
    summary = RunSummary()
    workers: Workers = {}
    spares: dict[str, Worker] = {}  # the next pass's measuring worker, by backend
    retired: list[Worker] = []
    oom_series: dict[Case, int] = {}
    request_base = {"budget": Budget(seconds=config.budget_s / config.passes).__dict__,
                    "criterion": config.criterion}
    todo = [c for c in cases if c.key not in skip_keys]
    done: dict[str, Measurement] = {}
    try:
        for n in range(config.passes):
            if n:
                _retire_all(workers, retired)  # the next pass runs in new processes
                workers.update({(b, False): w for b, w in spares.items()})
                spares.clear()
            ahead = spares if n + 1 < config.passes else None
            for case in todo:
                if n and not _again(done[case.key]):
                    continue
                # A later pass adds samples only: the counts, parts and busy time that the
                # first pass measured are kept when the two are merged.
                request = request_base | ({"samples_only": True} if n else {})
                m = (_precheck(case, oom_series)
                     or _dispatch(case, workers, ahead, retired, request, config))
                if m.status is Status.OOM:
                    oom_series.setdefault(case.series, case.size)
                m = merged(done[case.key], m) if n else m
                done[case.key] = m
                run.record(m)  # each pass's result is kept as soon as it exists
                if n == config.passes - 1 or not _again(m):
                    summary.counts[m.status.value] += 1
                    summary.measurements.append(m)
                    on_result(m)
    finally:
        stopping = sys.exc_info()[0] is not None  # Ctrl-C, SIGTERM: no case will follow
        every = (*retired, *workers.values(), *spares.values())
        for w in every:  # all told first, so that they wind down together
            w.kill() if stopping else w.retire()
        for w in every:
            w.close()
    return summary


def _retire_all(workers: Workers, retired: list[Worker]) -> None:
    retired.extend(workers.values())
    for w in workers.values():
        w.retire()
    workers.clear()


def complete(m: Measurement, passes: int) -> bool:
    """Whether a stored case needs nothing more: a run stopped between its passes stored
    the first pass's result, which `--resume` measures again in full."""
    return not _again(m) or m.counters.get("passes", 1.0) >= passes


def _again(m: Measurement) -> bool:
    """Whether a case is measured again in the next pass."""
    return (m.status is Status.OK and m.case.variant != "as_written"
            and m.counters.get("case_s", 0.0) <= PASS_MAX_CASE_S)


def merged(first: Measurement, later: Measurement) -> Measurement:
    """One case from two passes: samples in the order taken, the first pass's first call,
    loops and what only it measured (kernel counts, parts, busy time), the later pass's
    other counters, and the caveats judged on all the samples (plus those only a pass
    could see: contention, throttling, TF32). A later pass that failed
    is the case's outcome: a number that could not be taken again is not kept."""
    if later.status is not Status.OK:
        return later
    samples = (*first.samples, *later.samples)
    seen = {cv for cv in (*first.caveats, *later.caveats) if cv in PASS_CAVEATS}
    found = caveats_of(samples, first.first_call_s,
                       Caveat.BUDGET_EXHAUSTED not in later.caveats)
    return replace(first, samples=samples,
                   wall_samples=(*first.wall_samples, *later.wall_samples),
                   warmups=first.warmups + later.warmups,
                   counters={**first.counters, **later.counters,
                             "passes": first.counters.get("passes", 1.0) + 1},
                   caveats=tuple(dict.fromkeys((*found, *sorted(seen)))))


def _precheck(case: Case, oom_series: dict[Case, int]) -> Measurement | None:
    """Cases decided without a worker: unsupported dtype, or a series already out of memory."""
    backend = backends.get(case.backend)
    if backend.gpu_missing(case.device):  # no worker started for nothing
        return Measurement(case, Status.UNAVAILABLE, reason=NO_GPU)
    if case.dtype not in backend.dtypes:
        return Measurement(case, Status.SKIPPED,
                           reason=f"{case.backend} has no {case.dtype}; it supports "
                                  f"{', '.join(backend.dtypes)}")
    if case.series in oom_series:
        return Measurement(case, Status.SKIPPED,
                           reason=f"size {oom_series[case.series]} already ran out of memory")
    return None


def _dispatch(case: Case, workers: Workers, spares: dict[str, Worker] | None,
              retired: list[Worker], request_base: dict[str, Any],
              config: RunConfig) -> Measurement:
    """The case run in its worker; `runner_s` is what it cost as the parent saw it: the
    worker's `case_s` plus starting a worker where one was started for it."""
    t0 = time.perf_counter()
    m = _answered(case, workers, spares, retired, request_base, config)
    retries = 0
    while Caveat.CONTENDED in m.caveats and retries < CONTENDED_RETRIES:
        time.sleep(CONTENDED_PAUSE_S)  # let whatever else runs finish, then measure again
        retries += 1
        m = _answered(case, workers, spares, retired, request_base, config)
    counters = {**m.counters, "runner_s": time.perf_counter() - t0}
    if retries:
        counters["contended_retries"] = float(retries)
    return replace(m, counters=counters)


def _answered(case: Case, workers: Workers, spares: dict[str, Worker] | None,
              retired: list[Worker], request_base: dict[str, Any],
              config: RunConfig) -> Measurement:
    """Measurements share one long-lived worker per backend (imports, device context and
    profiler paid once). A post's replays run apart, in a process of their own as the
    post's did — one process for the cells of one post on one device. `spares`, when a
    pass follows, gets the next pass's worker for the backend, started now."""
    replay = case.variant == "as_written"
    key = (case.backend, replay)
    worker = workers.get(key)
    if worker is not None and replay and not worker.replays_as_in_one_process(case):
        worker.retire()
        retired.append(worker)
        worker = None
    if worker is None or worker.proc.poll() is not None:
        worker = workers[key] = Worker(case.backend, case.device)
        if spares is not None and not replay and case.backend not in spares:
            spares[case.backend] = Worker(case.backend, case.device)
    if replay:
        worker.ran.add((case.workload, case.device))
    for w in (*workers.values(), *(spares or {}).values()):
        w.await_ready()  # nothing is measured while a worker starts
    answer = worker.ask({"case": case.to_dict(), **request_base}, config.timeout_s)
    if answer is None:
        m = worker.failure(case, config.timeout_s)
        worker.kill()
        del workers[key]
        return m
    if answer.get("fatal"):
        worker.close()
        del workers[key]
    return Measurement.from_dict(answer["measurement"])
