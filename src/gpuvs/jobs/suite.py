"""`gpuvs run` and `gpuvs sweep` as a function: a config's cases measured in workers, each
case recorded as it ends, with `--refine`'s further rounds of sizes around each crossover,
and `--resume`'s run finished where it stopped."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gpuvs.config import RunConfig
from gpuvs.errors import UsageError
from gpuvs.execute import plan, runner
from gpuvs.jobs.recording import QUIET, Done, Job, Listener, Shown, machine_ceilings, record
from gpuvs.model import Case, Environment, Run, RunKind
from gpuvs.store.runs import RunHandle, latest_unfinished

if TYPE_CHECKING:
    from gpuvs.store.sql import SqlStore

AGAIN = "`gpuvs run --resume latest` finishes it."
# A sweep refined around its crossovers adds at most this many rounds of sizes.
MAX_REFINE_ROUNDS = 6


@dataclass(frozen=True)
class Suite:
    """A suite about to be measured: its config, every case of its plan, the cases a
    resumed run recorded already (`skip`), and the run it resumes, if any."""

    config: RunConfig
    cases: tuple[Case, ...]
    skip: frozenset[str] = frozenset()
    resumed: RunHandle | None = None

    @property
    def todo(self) -> list[Case]:
        return [c for c in self.cases if c.key not in self.skip]


def planned(config: RunConfig, resumed: RunHandle | None = None) -> Suite:
    """The suite `config` asks for, its calibration first (`calibrated`); with a resumed
    run, the cases it has not finished (a case stored after one pass of two is measured
    again)."""
    cases = calibrated(plan.expand(config))
    skip = frozenset(m.case.key for m in resumed.measurements()
                     if runner.complete(m, config.passes)) if resumed else frozenset()
    return Suite(config, cases, skip, resumed)


def calibrated(cases: Sequence[Case]) -> tuple[Case, ...]:
    """`cases` after the probes that calibrate them (`workloads.calibration`): measured
    first, in the same workers, so that `compare` and `check` can tell what of a change
    the machine explains. A plan that names the calibration itself runs it once."""
    from gpuvs.workloads.calibration import probe_cases
    keys = {c.key for c in cases}
    return (*(p for p in probe_cases(cases) if p.key not in keys), *cases)


def resumable(store: SqlStore, resume: str) -> tuple[RunHandle, RunConfig]:
    """The sweep `--resume` names (`latest`: the most recent that did not finish) and the
    config it was started with, checked again."""
    found: Run | None = (latest_unfinished(store, RunKind.SWEEP) if resume == "latest"
                         else store.get_run(resume))
    if found is None:
        raise UsageError("--resume latest: no interrupted run in this database; "
                         "`gpuvs runs` lists them")
    if found.kind is not RunKind.SWEEP:
        raise UsageError(f"run {resume!r} is a {found.kind} run, not a sweep; "
                         f"`gpuvs {found.kind} --refresh` measures it again")
    fields: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v
                              for k, v in dict(found.config).items()}
    return RunHandle(store, found), RunConfig(**fields).validate()


def measure(store: SqlStore, suite: Suite, *, environment: Environment | None = None,
            refine_factor: float | None = None, listener: Listener = QUIET,
            expected: Mapping[str, Sequence[float]] | None = None) -> Done:
    """Measure the suite into a new run (or the one it resumes). With `refine_factor`,
    sizes are added around each crossover until it is bracketed within that factor.
    `expected`: the plan's estimate of each case's passes, which the countdown follows
    (`runner.Pace`)."""
    config = suite.config

    def execute(run: RunHandle, shown: Shown) -> Counter[str]:
        counts: Counter[str] = Counter()
        now: list[Case] = list(suite.cases)
        rounds = 0
        while now:
            with shown(sum(c.key not in suite.skip for c in now)) as advance:
                # a refinement's sizes are new: the plan's estimate costed none of them
                counts += runner.execute(run, now, config, on_result=advance,
                                         skip_keys=suite.skip,
                                         expected=None if rounds else expected).counts
            now = _refinement(store, run.run_id, refine_factor, rounds, listener)
            rounds += 1
        return counts

    return record(store, Job(
        RunKind.SWEEP, config.to_dict(), execute, AGAIN,
        complete=lambda m: runner.complete(m, config.passes), environment=environment,
        ceilings=lambda run: machine_ceilings(store, run.started)), listener, suite.resumed)


def _refinement(store: SqlStore, run_id: str, factor: float | None, rounds: int,
                listener: Listener) -> list[Case]:
    """The next round of sizes around the crossovers, or [] when done."""
    if factor is None or rounds >= MAX_REFINE_ROUNDS:
        return []
    from gpuvs.analysis.refine import refined_cases
    cases = refined_cases(store.measurements(run_id), factor)
    if cases:
        listener.said(f"refining: {len(cases)} cases at sizes "
                      f"{', '.join(sorted({str(c.size) for c in cases}))}")
    return cases
