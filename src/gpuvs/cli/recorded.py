"""The one skeleton of every command that makes a run (`run`, `sweep`, `seeds`, `dist`,
`ceilings`, `run-file`): start the run → say what it is → execute it guarded, each case
saved as it ends → finish → the tables → the closing line → the JSON and report asked
for, and the exit code.

Guarded means Ctrl-C and SIGTERM end the run as `interrupted`, every case recorded so far
kept, with the line that finishes it (`store.runs.guarded`); a storage failure marks it
`failed`. A command gives only what is its own: its header, how it executes, its tables
and how it says it is done.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpuvs.cli.app import emit_tables, narration, usage_errors, wrap_up
from gpuvs.model import Environment, Measurement, RunKind
from gpuvs.report.console import console
from gpuvs.report.documents import cases_document
from gpuvs.report.progress import progress

Advance = Callable[..., None]
# The progress a command shows for `n` cases: a context giving the function each finished
# case is told to.
Shown = Callable[[int], AbstractContextManager[Advance]]


@dataclass(frozen=True)
class Recording:
    """What a command that makes a run says about it: its name (`command`, as the JSON
    document names it), the run's kind and config, and the steps below.

    `header(run_id)` gives its first lines; `execute(run, shown)` measures, records each
    case into `run` as it ends and returns the count of each status; `tables(ms,
    ceilings)` gives the tables of the measurements, placed against the machine's
    `ceilings(run)`; `closing(run_id, counts)` its last lines; `again` how to finish it
    after an interrupt; `complete(m)` whether a recorded case needs nothing more (a case
    stored after one pass of two does); `failed_statuses` the statuses that make the
    command's exit code 1."""

    command: str
    kind: RunKind
    config: Mapping[str, Any]
    header: Callable[[str], Sequence[str]]
    execute: Callable[[Any, Shown], Mapping[str, int]]
    tables: Callable[[list[Measurement], Sequence[Any]], Sequence[Any]]
    closing: Callable[[str, Mapping[str, int]], Sequence[str]]
    again: str
    complete: Callable[[Measurement], bool] | None = None
    environment: Environment | None = None
    ceilings: Callable[[Any], Sequence[Any]] = field(default=lambda run: ())
    failed_statuses: frozenset[str] = frozenset({"crashed", "wrong_result"})
    # Written at its first case: input found bad before any case leaves no run behind.
    lazily: bool = False


def executed(run: Any, execute: Callable[[Any, Shown], Mapping[str, int]], again: str,
             out: Any, complete: Callable[[Measurement], bool] | None = None
             ) -> Counter[str]:
    """The skeleton's middle, every case recorded as it ends: `execute(run, shown)`
    guarded (an interrupt leaves the run `interrupted`, its cases kept, and says `again`:
    how to finish it), then the run finished. `gpuvs predict` measures its CPU cases
    through this alone: its tables are predictions, not the run's."""
    from gpuvs.store.runs import guarded

    def shown(n: int) -> AbstractContextManager[Advance]:
        return progress(n, out.stderr)

    def finished() -> int:
        done = run.measurements()
        return sum(map(complete, done)) if complete else len(done)

    with usage_errors(), guarded(run, again, finished):
        counts = Counter(execute(run, shown))
    run.finish()
    return counts


def recorded(store: Any, recording: Recording, *, fmt: str = "plain",
             json_path: Path | None = None, report_path: Path | None = None,
             resumed: Any = None) -> int:
    """The skeleton, for one command: returns its exit code."""
    from gpuvs.store.runs import start_run

    out = narration(fmt)

    def announce(run_id: str) -> None:
        for line in recording.header(run_id):
            out.print(line, markup=False, highlight=False)

    run = resumed or start_run(store, recording.kind, recording.config, recording.environment,
                               lazily=recording.lazily, on_create=announce)
    if run.created:
        announce(run.run_id)
    counts = executed(run, recording.execute, recording.again, out, recording.complete)
    measurements = run.measurements()
    ceilings = list(recording.ceilings(run))
    emit_tables(recording.tables(measurements, ceilings), fmt, console(),
                lambda: cases_document(recording.command, measurements, ceilings,
                                       run.stored()))
    for line in recording.closing(run.run_id, counts):
        out.print(line, markup=False, highlight=False)
    return wrap_up(out, run, measurements, counts, json_path, report_path, ceilings,
                   recording.failed_statuses)
