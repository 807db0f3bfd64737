"""`gpuvs dist` as a function: the ranks started through torchrun (or, with --launched,
this process as rank 0 of the user's torchrun), each case saved as it ends."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from gpuvs.distributed import launch, rank_main
from gpuvs.distributed.spec import Spec
from gpuvs.jobs.recording import QUIET, Done, Job, Listener, Shown, record
from gpuvs.model import RunKind
from gpuvs.store.runs import RunHandle

if TYPE_CHECKING:
    from gpuvs.store.sql import SqlStore

AGAIN = "The same `gpuvs dist` command measures every case again."
# A case whose ranks the watchdog had to kill did not finish: it fails the command as a
# crash does.
FAILED = frozenset({"crashed", "wrong_result", "timeout"})


def measure(store: SqlStore, spec: Spec, *, listener: Listener = QUIET) -> Done:
    """Every case of `spec` on its ranks, into a new run; the notes say what the ranks
    ran with (versions, NCCL variables) and what went wrong after every case was saved."""
    from gpuvs.report.dist_tables import ranks_note
    info: dict[str, Any] = {}

    def execute(run: RunHandle, shown: Shown) -> Counter[str]:
        ranked = replace(spec, run_id=run.run_id, db=store.location)
        with shown(len(spec.cases)) as advance:
            info.update(rank_main.serve(ranked, advance) if spec.launched
                        else launch.execute(ranked, run, advance))
        return Counter(m.status.value for m in run.measurements())

    return record(store, Job(RunKind.DIST, spec.config(), execute, AGAIN), listener,
                  notes=lambda: [ranks_note(info)] if info else [])


def take_part(spec: Spec) -> dict[str, Any]:
    """A rank other than 0 of the user's torchrun: it measures with the others, and rank
    0 records. Returns what the ranks ran with (rank 0's run and store among it), with
    `lost` where a failure ended the world."""
    return rank_main.serve(spec)
