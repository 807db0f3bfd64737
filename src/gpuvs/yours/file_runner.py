"""run-file's parent: the user's function runs in a worker process
(`gpuvs.yours.file_worker`), never in gpuvs's own, which keeps the clock and the record.

As the runner does for registered workloads, with the same `gpuvs.execute.supervisor` pieces: the
worker says which case it starts and sends each measurement as it finishes, on a pipe of
their own; the user's prints go to the output whose tail the note on a death quotes. A
case that outlives the timeout has the worker's process group killed and is `timeout`; a
worker that dies leaves its case `crashed`, the signal or exit code named (or `oom`,
with evidence), and a GPU's end-to-end case `skipped` when its resident case died. A
fresh worker, told every case done so far, carries on with the rest.

A death outside any case — building a size's inputs, say — takes the cases of that size
not yet done with it, under their names from an earlier size. Before any worker has built
inputs there is nothing to compare: that is a `UsageError`, as an import error is.

With `--passes N` every pass's worker starts together, before the first case, as `gpuvs
run`'s pool starts its workers (`runner.Pool`): each loads Python, torch, the user's
file and the GPU's context and says it is ready, and the passes then run one after
another, each in its own waiting process, told to go in its turn with the cases
settled so far. Started each when the one before had ended, a run paid every start in
turn (about 5 s each with torch and a CUDA context on the H100, where three run-file
runs of 20 processes did not finish in 150 s: docs/accuracy.md). Nothing is measured
while any of them starts: an import takes CPU time that a timed case would share. A
worker that died waiting for its turn is found at its turn, as one that died outside a
case; one that dies in its pass is followed by a fresh one, started then, alone. Those
whose turn never comes (every case settled early) are closed.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace

from gpuvs.analysis.explain import explain
from gpuvs.analysis.speedup import RESIDENT, data_of
from gpuvs.errors import UsageError
from gpuvs.execute.observe import as_counters
from gpuvs.execute.runner import AHEAD_MOST, complete, merged
from gpuvs.execute.supervisor import STARTUP_ALLOWANCE_S, Child
from gpuvs.execute.wire import (
    Again,
    Explained,
    Go,
    Measured,
    Planned,
    Ready,
    Refused,
    RunFile,
    Started,
)
from gpuvs.model import YOURS_PREFIX, Case, Measurement, Status
from gpuvs.yours.compare import Unit, placements, skipped_end_to_end, unit
from gpuvs.yours.comparison import Comparison
from gpuvs.yours.run_file import case_count


@dataclass(frozen=True)
class Outcome:
    """Every case of the run, and why each GPU case came out as it did."""

    comparison: Comparison
    explanation: tuple[str, ...]


def run(request: RunFile, timeout_s: float,
        on_result: Callable[[Measurement], None] = lambda m: None, passes: int = 1,
        ready: Callable[[], None] = lambda: None) -> Outcome:
    """Every case of `request`, each measured in a worker, whatever becomes of them, in
    `passes` processes of its own, in turns, each with its share of the budget (a later
    process samples only the cases that may differ by process: `runner.complete`); every
    pass's worker started ahead (`_Turns`). `on_result` hears of each measurement as it
    arrives, and again as a later process adds to it, and once more with what the first
    process observed of it (its kernels and the GPU's busy time: `observe.as_counters`).
    `ready()` is called once every worker started has loaded the file, before the first
    is told to go (run-file's calibration: a file that does not load costs none)."""
    shared = replace(request, sampling=request.sampling.shared(passes))
    record = _Record(shared, on_result)
    turns = _Turns(shared, passes)
    try:
        first = turns.next(timeout_s)
        ready()
        observed, unexplained = _first_process(shared, record, timeout_s, first)
        if observed is not None:
            for m in record.measurements():
                seen = as_counters(observed.kernels.get(m.case.key, {}))
                if seen:
                    record.replace(replace(m, counters={**m.counters, **seen}))
        for _ in range(1, passes):
            later = _Record(replace(shared, explain=False), lambda m: None)
            later.plan(record.planned.values())  # named, should its worker die before inputs
            settled = [m for m in record.measurements() if complete(m, passes)]
            for m in settled:  # a later worker skips these, as cases another finished
                later.add(m)
            if len(settled) == len(record.taken):
                break
            worker: FileWorker | None = turns.next(timeout_s)
            while not later.complete():
                _one_worker(later.request, later, timeout_s, worker)
                worker = None  # after a death: a fresh one, alone
            for u, m in later.taken.items():
                if not complete(record.taken[u], passes):
                    record.replace(merged(record.taken[u], m))
    finally:
        turns.close(stopping=sys.exc_info()[0] is not None)  # Ctrl-C, a usage error: kill
    # worded over every process's samples, with what the first process observed
    comparison = record.comparison()
    return Outcome(comparison, _explained(comparison, observed, unexplained))


def _first_process(request: RunFile, record: _Record, timeout_s: float, first: FileWorker
                   ) -> tuple[Explained | None, str]:
    """The first process's cases, in `first` (a fresh worker carrying on after one that
    died), then what it observed to explain the run (None where no worker could say),
    with why the worker that was to observe it died, if it did."""
    unexplained = ""
    worker: FileWorker | None = first
    while not record.complete() or (record.profiled() and not unexplained):
        explaining = record.complete()  # nothing to run: a worker only to profile the GPU's
        ended = _one_worker(request, record, timeout_s, worker)
        worker = None
        if isinstance(ended, Explained):
            return ended, ""
        unexplained = ended if explaining else ""
    return None, unexplained


class FileWorker(Child):
    """One worker: the request goes in on stdin, then, once it is ready, the go with the
    cases done so far; its events come back on a pipe of their own (`{fd}`), whose end is
    the worker's. `ahead`: started before its turn, to wait ready for it."""

    def __init__(self, request: RunFile, ahead: bool = False) -> None:
        super().__init__([sys.executable, "-m", "gpuvs.yours.file_worker", "{fd}"],
                         channel="pipe")
        self.ahead = ahead
        self.started = time.monotonic()
        self.ready = False  # it said so
        self.awaited = False
        self.died_waiting = False  # found dead at its turn, having said it was ready
        self.send(request)  # one short line: the pipe holds it, read or not

    def await_ready(self, timeout_s: float) -> None:
        """Wait until the worker has loaded the user's file: until the timeout and the
        start-up allowance have passed since it started (Python, torch, the file, a GPU's
        context), when it is killed. One that refuses the file is a `UsageError`; one that
        dies or is killed is left for its turn to find dead (`_follow`)."""
        if self.awaited:
            return
        self.awaited = True
        event = self.event(self.started + timeout_s + STARTUP_ALLOWANCE_S)
        if isinstance(event, Refused):
            raise UsageError(event.message)
        self.ready = isinstance(event, Ready)

    def go(self, done: Sequence[Measurement]) -> None:
        """Its turn: measure, carrying on after `done`."""
        self.died_waiting = self.ahead and self.ready and self.proc.poll() is not None
        # Sent aside: the cases done hold every sample, more than a pipe holds, and a
        # worker that never reads them must not stop the clock (`event`).
        threading.Thread(target=self._hand_over, args=(Go(tuple(done)),), daemon=True).start()

    def _hand_over(self, message: Go) -> None:
        self.send(message)
        with contextlib.suppress(OSError, ValueError):  # it died first, or was closed
            assert self.proc.stdin is not None
            self.proc.stdin.close()  # the worker reads no more


class _Turns:
    """Each pass's worker, started ahead: every one the run may need at the first pass's
    turn, at most `runner.AHEAD_MOST` alive at once (the limit `gpuvs run`'s pool keeps:
    each holds torch and perhaps a GPU's context); past it, a pass's worker starts at an
    earlier pass's turn, once that pass's worker has ended. Before any worker is told to
    go, every one started is ready, so that nothing is measured while one starts."""

    def __init__(self, request: RunFile, passes: int) -> None:
        # the first process explains the run; a later one would tell nothing new
        self._requests = deque([request, *[replace(request, explain=False)] * (passes - 1)])
        self._waiting: deque[FileWorker] = deque()

    def next(self, timeout_s: float) -> FileWorker:
        """The next pass's worker, ready (or dead, for its turn to find), once every
        worker started is."""
        while self._requests and len(self._waiting) < AHEAD_MOST:
            self._waiting.append(FileWorker(self._requests.popleft(), ahead=True))
        for w in self._waiting:
            w.await_ready(timeout_s)
        return self._waiting.popleft()

    def close(self, stopping: bool) -> None:
        """End the workers whose turn never came: all told first (the end of their input,
        or a kill when stopping), so that they wind down together."""
        for w in self._waiting:
            w.kill() if stopping else w.retire()
        for w in self._waiting:
            w.close()
        self._waiting.clear()


def _one_worker(request: RunFile, record: _Record, timeout_s: float,
                worker: FileWorker | None = None) -> Explained | str:
    """A worker followed to its end: what it observed to explain the run, or why it died.
    `worker`: one started ahead for this turn; else a fresh one, started now, alone."""
    if worker is None:
        worker = FileWorker(request)
    try:
        worker.await_ready(timeout_s)
        worker.go(record.measurements())
        ended = _follow(worker, record, timeout_s)
    except BaseException:  # its usage error, Ctrl-C: no case will follow
        worker.kill()
        raise
    worker.close() if isinstance(ended, Explained) else worker.kill()  # what it started, too
    return ended


def _follow(worker: FileWorker, record: _Record, timeout_s: float) -> Explained | str:
    """The clock runs from the go to the first measurement, and from one measurement to
    the next: setting up a case (building its inputs, copying them to the device) is part
    of it. Python, torch and the user's file loaded before, under the start-up allowance
    (`FileWorker.await_ready`)."""
    in_flight: Case | None = None
    deadline = time.monotonic() + timeout_s
    while (event := worker.event(deadline)) is not None:
        if isinstance(event, (Measured, Again)):
            deadline = time.monotonic() + timeout_s  # a contended case measured again, too
        if isinstance(event, Planned):
            record.plan(event.cases)
        elif isinstance(event, Started):
            in_flight = event.case
        elif isinstance(event, Measured):
            record.add(event.measurement)
            in_flight = None
        elif isinstance(event, Refused):
            raise UsageError(event.message)
        elif isinstance(event, Explained):
            return event
    return record.lost(worker, in_flight, timeout_s)


class _Record:
    """What the parent knows: each case's measurement, in the order taken, and what the
    cases of each size whose inputs a worker built are called."""

    def __init__(self, request: RunFile, on_result: Callable[[Measurement], None]) -> None:
        self.request = request
        self.on_result = on_result
        self.taken: dict[Unit, Measurement] = {}
        self.planned: dict[Unit, Case] = {}

    def measurements(self) -> tuple[Measurement, ...]:
        return tuple(self.taken.values())

    def comparison(self) -> Comparison:
        names = tuple(dict.fromkeys(m.case.workload.removeprefix(YOURS_PREFIX)
                                    for m in self.taken.values()))
        return Comparison(", ".join(names), self.measurements(), self.request.devices,
                          implementations=names)

    def plan(self, cases: Iterable[Case]) -> None:
        self.planned.update((unit(c), c) for c in cases)

    def replace(self, m: Measurement) -> None:
        """A case taken again in a later process, joined with what it had: heard again."""
        self.taken[unit(m.case)] = m
        self.on_result(m)

    def add(self, m: Measurement) -> None:
        new = unit(m.case) not in self.taken
        self.taken[unit(m.case)] = m
        if new:
            self.on_result(m)

    def complete(self) -> bool:
        return len(self.taken) == case_count(self.request)

    def profiled(self) -> bool:
        """Whether a GPU case finished: explaining it profiles the user's function."""
        return any(m.status is Status.OK and m.case.device != "cpu"
                   for m in self.taken.values())

    def lost(self, worker: FileWorker, in_flight: Case | None, timeout_s: float) -> str:
        """Record what a worker's death took with it; returns why it died."""
        status, reason = worker.death(timeout_s)
        if in_flight is not None:
            m = Measurement(in_flight, status, reason)
            self.add(m)
            if in_flight.device != "cpu" and data_of(in_flight) == RESIDENT:
                self.add(skipped_end_to_end(m))
        elif not self.complete():  # else it died explaining: every case is taken
            self._lost_outside_a_case(status, reason, worker.died_waiting)
        return reason

    def _lost_outside_a_case(self, status: Status, reason: str, waited: bool) -> None:
        """The cases not taken at the smallest size with any: named as a worker planned
        them, or else as at the last size planned. A device found unavailable there is
        unavailable here too; every other case is lost with the worker. One that `waited`
        for its turn, ready, and died before it: the same, but the file loaded, so with
        no case named yet (the first pass's) a fresh worker carries on."""
        if not self.planned and waited:
            return
        if not self.planned:
            paths = ", ".join(dict.fromkeys(t.rpartition("::")[0] for t in self.request.targets))
            raise UsageError(f"loading {paths} or building its first inputs ended the worker "
                             f"before any case ran: {reason}")
        last = {(w, device, data): c for (w, _, device, data), c in self.planned.items()}
        workloads = tuple(dict.fromkeys(w for w, _, _ in last))
        sizes = self.request.sizes or tuple(sorted({u[1] for u in self.planned}))
        missing = [(w, size, d, data) for size in sizes for w in workloads
                   for d in self.request.devices
                   for data in placements(d, self.request.end_to_end)
                   if (w, size, d, data) not in self.taken]
        size = missing[0][1]
        where = ("its worker waiting for its turn" if waited else
                 f"loading the file or building the inputs of size {size}")
        for u in (u for u in missing if u[1] == size):
            named = (u[0], *u[2:])
            case = self.planned.get(u) or replace(last[named], size=size)
            seen = self.taken.get(unit(last[named]))
            self.add(replace(seen, case=case) if seen and seen.status is Status.UNAVAILABLE
                     else Measurement(case, status,
                                      f"before the case started ({where}): {reason}"))


def _explained(comparison: Comparison, observed: Explained | None, unexplained: str
               ) -> tuple[str, ...]:
    """Why the cases came out as they did, over every process's samples, with what the
    first process observed (its dispatch costs and kernels; none where no GPU case
    finished, or where the worker observing them died: then the numbers alone)."""
    lines = str(explain(comparison.measurements, list(observed.ceilings), observed.kernels)
                if observed is not None else explain(comparison.measurements, [])
                ).splitlines()
    if unexplained:
        lines.append(f"(dispatch costs and kernels not measured: the worker measuring them "
                     f"died: {unexplained})")
    return tuple(lines)
