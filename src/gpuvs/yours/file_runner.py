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
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace

from gpuvs.analysis.explain import explain
from gpuvs.analysis.speedup import RESIDENT, data_of
from gpuvs.errors import UsageError
from gpuvs.execute.runner import complete, merged
from gpuvs.execute.supervisor import STARTUP_ALLOWANCE_S, Child
from gpuvs.execute.wire import (
    Again,
    Explained,
    Measured,
    Planned,
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
        on_result: Callable[[Measurement], None] = lambda m: None, passes: int = 1
        ) -> Outcome:
    """Every case of `request`, each measured in a worker, whatever becomes of them, in
    `passes` processes of its own, in turns, each with its share of the budget (a later
    process samples only the cases that may differ by process: `runner.complete`).
    `on_result` hears of each measurement as it arrives, and again as a later process
    adds to it."""
    shared = replace(request, sampling=request.sampling.shared(passes))
    record = _Record(shared, on_result)
    observed, unexplained = _first_process(shared, record, timeout_s)
    for _ in range(1, passes):
        later = _Record(replace(shared, explain=False), lambda m: None)
        settled = [m for m in record.measurements() if complete(m, passes)]
        for m in settled:  # a later worker skips these, as cases another finished
            later.add(m)
        if len(settled) == len(record.taken):
            break
        while not later.complete():
            _one_worker(later.request, later, timeout_s)
        for u, m in later.taken.items():
            if not complete(record.taken[u], passes):
                record.replace(merged(record.taken[u], m))
    # worded over every process's samples, with what the first process observed
    comparison = record.comparison()
    return Outcome(comparison, _explained(comparison, observed, unexplained))


def _first_process(request: RunFile, record: _Record, timeout_s: float
                   ) -> tuple[Explained | None, str]:
    """The first process's cases (a fresh worker carrying on after one that died), then
    what it observed to explain the run (None where no worker could say), with
    why the worker that was to observe it died, if it did."""
    unexplained = ""
    while not record.complete() or (record.profiled() and not unexplained):
        explaining = record.complete()  # nothing to run: a worker only to profile the GPU's
        ended = _one_worker(request, record, timeout_s)
        if isinstance(ended, Explained):
            return ended, ""
        unexplained = ended if explaining else ""
    return None, unexplained


class FileWorker(Child):
    """One worker: the request and the cases done so far go in on stdin; its events come
    back on a pipe of their own (`{fd}`), whose end is the worker's."""

    def __init__(self, request: RunFile, done: Sequence[Measurement]) -> None:
        super().__init__([sys.executable, "-m", "gpuvs.yours.file_worker", "{fd}"],
                         channel="pipe")
        message = replace(request, done=tuple(done))
        # Sent aside: a worker that never reads it must not stop the clock (`event`).
        threading.Thread(target=self._hand_over, args=(message,), daemon=True).start()

    def _hand_over(self, message: RunFile) -> None:
        self.send(message)
        with contextlib.suppress(OSError, ValueError):  # it died first, or was closed
            assert self.proc.stdin is not None
            self.proc.stdin.close()  # the worker reads one line


def _one_worker(request: RunFile, record: _Record, timeout_s: float) -> Explained | str:
    """A worker followed to its end: what it observed to explain the run, or why it died."""
    worker = FileWorker(request, record.measurements())
    try:
        ended = _follow(worker, record, timeout_s)
    except BaseException:  # its usage error, Ctrl-C: no case will follow
        worker.kill()
        raise
    worker.close() if isinstance(ended, Explained) else worker.kill()  # what it started, too
    return ended


def _follow(worker: FileWorker, record: _Record, timeout_s: float) -> Explained | str:
    """The clock runs from one measurement to the next: setting up a case (building its
    inputs, copying them to the device) is part of it. Until its first word (its first
    inputs built), a fresh worker has the start-up allowance on top: Python, torch and
    the user's file load before any case; the cases then have the timeout."""
    in_flight: Case | None = None
    fresh = True
    deadline = time.monotonic() + timeout_s + STARTUP_ALLOWANCE_S
    while (event := worker.event(deadline)) is not None:
        if fresh or isinstance(event, (Measured, Again)):
            deadline = time.monotonic() + timeout_s  # a contended case measured again, too
            fresh = False
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
            self._lost_outside_a_case(status, reason)
        return reason

    def _lost_outside_a_case(self, status: Status, reason: str) -> None:
        """The cases not taken at the smallest size with any: named as a worker planned
        them, or else as at the last size planned. A device found unavailable there is
        unavailable here too; every other case is lost with the worker."""
        if not self.planned:
            paths = ", ".join(dict.fromkeys(t.rpartition("::")[0] for t in self.request.targets))
            raise UsageError(f"loading {paths} or building its first inputs ended the worker "
                             f"before any case ran: {reason}")
        last = {(w, device, data): c for (w, _, device, data), c in self.planned.items()}
        workloads = tuple(dict.fromkeys(w for w, _, _ in last))
        sizes = self.request.sizes or tuple(sorted({u[1] for u in self.planned}))
        missing = [(w, size, d, data) for size in sizes for w in workloads
                   for d in self.request.devices for data in placements(d)
                   if (w, size, d, data) not in self.taken]
        size = missing[0][1]
        for u in (u for u in missing if u[1] == size):
            named = (u[0], *u[2:])
            case = self.planned.get(u) or replace(last[named], size=size)
            seen = self.taken.get(unit(last[named]))
            self.add(replace(seen, case=case) if seen and seen.status is Status.UNAVAILABLE
                     else Measurement(case, status, f"before the case started (loading the "
                                                    f"file or building the inputs of size "
                                                    f"{size}): {reason}"))


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
