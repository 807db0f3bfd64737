"""The middle every job shares: start the run (or resume it), execute it guarded, each
case recorded as it ends, finish it, and hand back what a command shows (`Done`).

Guarded means Ctrl-C and SIGTERM end the run as `interrupted`, every case recorded so far
kept, with the line that finishes it (`store.runs.guarded`); a storage failure marks it
`failed`. A job gives only what is its own (`Job`): the run's kind and config, how it
executes, how it is finished after an interrupt, which recorded case needs nothing more.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gpuvs.model import Ceiling, Environment, Measurement, Run, RunKind
from gpuvs.store.runs import RunHandle, guarded, start_run

if TYPE_CHECKING:
    from gpuvs.store.sql import SqlStore

# Told of each finished case, and (where the job knows it) the seconds its run has left.
Advance = Callable[..., None]
# The progress shown over `n` cases: a context giving the function each case is told to.
Shown = Callable[[int], AbstractContextManager[Advance]]


def _silent(*said: Any) -> None:
    return None


@contextmanager
def _no_progress(n: int) -> Any:
    yield _silent


@dataclass(frozen=True)
class Listener:
    """Who hears a job while it runs: `started(run_id)` once the run exists (a command
    prints its header), `shown(n)` the progress over its n cases, `said(line)` a line the
    job says on its way (refined sizes, a busy machine). A benchmark or a test hears
    nothing by default."""

    started: Callable[[str], None] = _silent
    shown: Shown = _no_progress
    said: Callable[[str], None] = _silent


QUIET = Listener()


@dataclass(frozen=True)
class Job:
    """What one job records: its run's `kind` and `config`, `execute(run, shown)` (measure,
    record each case into `run` as it ends, return the count of each status), `again`
    (how to finish it after an interrupt), `complete(m)` (whether a recorded case needs
    nothing more: a case stored after one pass of two does not), the `environment` it
    runs in, the machine's `ceilings(run)`, and `lazily` (written at its first case:
    input found bad before any case leaves no run behind)."""

    kind: RunKind
    config: Mapping[str, Any]
    execute: Callable[[RunHandle, Shown], Mapping[str, int]]
    again: str
    complete: Callable[[Measurement], bool] | None = None
    environment: Environment | None = None
    ceilings: Callable[[RunHandle], Sequence[Ceiling]] = field(default=lambda run: ())
    lazily: bool = False


@dataclass(frozen=True)
class Done:
    """A job's run, finished: its record, every case it holds, the count of each status
    the job executed, the machine's ceilings the run is read against, the lines the job
    adds after its tables (run-file's explanation, the ranks a dist run ran with), and
    whether it is a run found already done and not measured again (`reused`)."""

    run: RunHandle
    record: Run
    measurements: tuple[Measurement, ...]
    counts: Counter[str]
    ceilings: tuple[Ceiling, ...] = ()
    notes: tuple[str, ...] = ()
    reused: bool = False

    @property
    def run_id(self) -> str:
        return self.run.run_id


def executed(run: RunHandle, execute: Callable[[RunHandle, Shown], Mapping[str, int]],
             again: str, listener: Listener = QUIET,
             complete: Callable[[Measurement], bool] | None = None) -> Counter[str]:
    """The run executed guarded (an interrupt leaves it `interrupted`, its cases kept, and
    says `again`: how to finish it), then finished. `gpuvs predict` measures its CPU
    cases through this alone: its tables are predictions, not the run's."""
    def finished() -> int:  # the cases that need nothing more; the probes are apart
        done = [m for m in run.measurements() if not m.case.calibrates]
        return sum(map(complete, done)) if complete else len(done)

    with guarded(run, again, finished):
        counts = Counter(execute(run, listener.shown))
    run.finish()
    return counts


def record(store: SqlStore, job: Job, listener: Listener = QUIET,
           resumed: RunHandle | None = None, notes: Callable[[], Sequence[str]] = tuple
           ) -> Done:
    """Start (or resume) the run, execute it guarded, finish it: what a command shows.
    `notes()` are the lines the job adds after its tables, read once it is done."""
    run = resumed or start_run(store, job.kind, job.config, job.environment,
                               lazily=job.lazily, on_create=listener.started)
    if run.created:  # a run written lazily is announced when it is written
        listener.started(run.run_id)
    counts = executed(run, job.execute, job.again, listener, job.complete)
    return Done(run, run.stored(), tuple(run.measurements()), counts,
                tuple(job.ceilings(run)), tuple(notes()))


def machine_ceilings(store: SqlStore, record: Run) -> list[Ceiling]:
    """This machine's measured ceilings, if `gpuvs ceilings` has run on its set-up (a
    quiet machine's before a contended one's): what a run's cases are read against."""
    from gpuvs.analysis.ceilings import read
    from gpuvs.store.runs import find_ceilings_run
    found = find_ceilings_run(store, record.environment)
    return read(store.measurements(found.run_id)) if found else []
