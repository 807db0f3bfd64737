"""`gpuvs ceilings` as a function: this machine's peaks and costs, probed once per
environment fingerprint and reused by every later run on the same set-up."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING

from gpuvs.analysis import ceilings as ceiling_probes
from gpuvs.config import RunConfig
from gpuvs.execute import runner
from gpuvs.jobs.recording import QUIET, Done, Job, Listener, Shown, record
from gpuvs.machine import env
from gpuvs.model import RunKind
from gpuvs.store.runs import RunHandle, find_ceilings_run

if TYPE_CHECKING:
    from gpuvs.store.sql import SqlStore

DEFAULTS = {"budget_s": 1.0, "timeout_s": 600.0}
AGAIN = "`gpuvs ceilings --refresh` measures them again."


def probe(store: SqlStore, config: RunConfig, backends: Sequence[str], *, refresh: bool = False,
          listener: Listener = QUIET) -> Done:
    """This machine's ceilings: the stored run of this environment if there is one (and
    not `refresh`), else the probes of `backends` measured into a new run."""
    facts = env.collect()
    found = None if refresh else find_ceilings_run(store, facts)
    if found is not None:
        return Done(RunHandle(store, found), found, tuple(store.measurements(found.run_id)),
                    Counter(), reused=True)
    cases = ceiling_probes.probe_cases(backends)

    def execute(run: RunHandle, shown: Shown) -> Counter[str]:
        with shown(len(cases)) as advance:
            return runner.execute(run, cases, config, on_result=advance).counts

    return record(store, Job(RunKind.CEILINGS, {"budget_s": config.budget_s}, execute, AGAIN,
                             environment=facts), listener)
