"""One view per kind of run: the one place that says how a run of each kind is shown.

A run is shown in three places — the tables its command prints and `gpuvs show` prints
again, its report page, and its `--format json` document — and each once decided by a
switch on the run's kind what to draw. Here each kind names its `View` once; the
command, `show`, the page and the document ask `of(run.kind)`, and nothing else in
report/ names a kind's own tables (a seeds run's posts, a dist run's bandwidths and
scaling): those modules know their tables, not when they are drawn.

Every view shows the run's calibration first, and hands its own parts the run's cases
without the calibration's probes (`calibrated`): a probe describes the machine.

`gpuvs predict` makes no run of its own (its CPU cases are a sweep's): its tables, page
and document are `report.predicted`'s.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from gpuvs.analysis.calibration import cases_of
from gpuvs.analysis.cost import Prices
from gpuvs.model import Ceiling, Measurement, Run, RunKind
from gpuvs.report.sections import Sweep
from gpuvs.table import Table

Tables = Callable[[Run, Sequence[Measurement], Sequence[Ceiling]], list[Table]]


def _no_table(ms: Sequence[Measurement]) -> Table | None:
    return None


def _no_tables(ms: Sequence[Measurement]) -> list[Table]:
    return []


def _no_extras(ms: Sequence[Measurement]) -> dict[str, Any]:
    return {}


def _no_numbers(m: Measurement, ms: Sequence[Measurement]) -> dict[str, Any]:
    return {}


@dataclass(frozen=True)
class View:
    """How one kind of run is shown.

    `tables(run, ms, ceilings)` are what its command prints after the run and `gpuvs show`
    prints again, with `more(run, ms, ceilings)` after them where the command leaves
    detail to `show` (a seeds run: every case's table). The page opens with
    `first_screen(ms)` under `first_heading` (a seeds run: the posts answered) and the
    kind's `own_tables(ms)` under `own_heading` (at `own_anchor`, linked as `own_link`),
    then
    its measurements: `sections(ms)` where the kind draws its own (then no CPU-against-GPU
    verdict, sweep plots or roofline is drawn), else each sweep's plots and tables under
    the verdict. The JSON document adds `extras(ms)` to its body and `case_numbers(m, ms)`
    to each case's record."""

    tables: Tables
    more: Tables | None = None
    first_screen: Callable[[Sequence[Measurement]], Table | None] = _no_table
    first_heading: str = ""
    own_tables: Callable[[Sequence[Measurement]], list[Table]] = _no_tables
    own_heading: str = ""
    own_anchor: str = ""
    own_link: str = ""
    sections: Callable[[Sequence[Measurement]], list[Sweep]] | None = None
    extras: Callable[[Sequence[Measurement]], dict[str, Any]] = _no_extras
    case_numbers: Callable[[Measurement, Sequence[Measurement]], dict[str, Any]] = _no_numbers

    @property
    def verdict(self) -> bool:
        """Whether the page answers GPU against CPU (verdict, sweep plots, roofline)."""
        return self.sections is None


def _sweep_tables(run: Run, ms: Sequence[Measurement], ceilings: Sequence[Ceiling]
                  ) -> list[Table]:
    from gpuvs.report.layout import result_tables
    from gpuvs.report.verdict import answer_table
    prices = Prices.of(run.config.get("prices"))
    return [*result_tables(ms, ceilings, prices), answer_table(ms, prices)]


def _ceiling_tables(run: Run, ms: Sequence[Measurement], ceilings: Sequence[Ceiling]
                    ) -> list[Table]:
    from gpuvs.report.layout import ceilings_table
    return [ceilings_table(ms, run.run_id, run.environment.fingerprint)]


def _seed_tables(run: Run, ms: Sequence[Measurement], ceilings: Sequence[Ceiling]
                 ) -> list[Table]:
    from gpuvs.report.seed_tables import seed_answers, seed_tables
    return [*seed_tables(ms), seed_answers(ms)]


def _posts_answered(ms: Sequence[Measurement]) -> Table:
    """A seeds page's first screen; its heading says what the table is."""
    from gpuvs.report.seed_tables import seed_answers
    return replace(seed_answers(ms), title="")


def _posts(ms: Sequence[Measurement]) -> list[Table]:
    from gpuvs.report.seed_tables import seed_tables
    return seed_tables(ms)


def _post_rows(ms: Sequence[Measurement]) -> dict[str, Any]:
    from gpuvs.report.seed_tables import seed_records
    return {"seeds": seed_records(ms)}


def _winners(ms: Sequence[Measurement]) -> dict[str, Any]:
    from gpuvs.report.implementations import winner_records
    return winner_records(ms)


def _dist_tables(run: Run, ms: Sequence[Measurement], ceilings: Sequence[Ceiling]
                 ) -> list[Table]:
    from gpuvs.report.dist_tables import dist_tables
    return dist_tables(ms)


def _dist_sections(ms: Sequence[Measurement]) -> list[Sweep]:
    from gpuvs.report.dist_plots import dist_sections
    return dist_sections(ms)


def _dist_numbers(m: Measurement, ms: Sequence[Measurement]) -> dict[str, Any]:
    from gpuvs.report.dist_plots import dist_numbers
    return dist_numbers(m, ms)


# A sweep (`gpuvs run`, `sweep`), the fixture's run: each sweep's tables and the answer
# per sweep.
SWEEPS = View(_sweep_tables)
# The user's own code (run-file, `Comparison.save`): as a sweep (with several
# implementations, their table side by side is one of the sweep's, `layout`), and in its
# document the winner at each size.
YOURS = View(_sweep_tables, extras=_winners)
# `gpuvs ceilings`: the ceilings read off the probes.
CEILINGS = View(_ceiling_tables)
# `gpuvs seeds`: each post's table and the posts answered (`gpuvs show` adds every case's
# table), the answers first on its page, and each post's rows in its document.
SEEDS = View(_seed_tables, more=_sweep_tables, first_screen=_posts_answered,
             first_heading="The posts, answered here", own_tables=_posts,
             own_heading="The posts: claim, as written here, correct here",
             own_anchor="seeds", own_link="the posts", extras=_post_rows)
# `gpuvs dist`: its collectives' and its scaling's tables, the page's sections of
# bandwidth and scaling (no CPU-against-GPU verdict), and each case's own figures.
DIST = View(_dist_tables, sections=_dist_sections, case_numbers=_dist_numbers)
_BY_KIND = {RunKind.CEILINGS: CEILINGS, RunKind.SEEDS: SEEDS, RunKind.DIST: DIST,
            RunKind.YOURS: YOURS}


def of(kind: RunKind) -> View:
    """The view of a run of `kind`, calibrated (`calibrated`)."""
    return calibrated(_BY_KIND.get(kind, SWEEPS))


def calibrated(view: View) -> View:
    """`view` with the run's calibration table first among its tables, and each of its
    parts given the run's cases without the calibration's probes: a probe describes the
    machine, and is in no sweep, answer, post or crossover."""
    from gpuvs.report.calibration import table

    def tables(run: Run, ms: Sequence[Measurement], ceilings: Sequence[Ceiling]
               ) -> list[Table]:
        first = table(ms)
        return [*([first] if first else []), *view.tables(run, cases_of(ms), ceilings)]

    more = view.more
    sections = view.sections
    return replace(
        view, tables=tables,
        more=None if more is None else lambda run, ms, ceilings: more(run, cases_of(ms),
                                                                      ceilings),
        first_screen=_of_cases(view.first_screen), own_tables=_of_cases(view.own_tables),
        sections=None if sections is None else _of_cases(sections),
        extras=_of_cases(view.extras),
        case_numbers=lambda m, ms: view.case_numbers(m, cases_of(ms)))


R = TypeVar("R")


def _of_cases(part: Callable[[Sequence[Measurement]], R]
              ) -> Callable[[Sequence[Measurement]], R]:
    return lambda ms: part(cases_of(ms))
