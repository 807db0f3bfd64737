"""What a seed is: one post, what it claimed, the cases that replay and correct it.

A seed names its cases (`cases(quick)`), and its table rows: each row quotes the post's
number, picks the `as_written` replay and the `correct` measurement that answer it, and
explains the difference in one sentence written from the numbers measured here — so the
sentence stays true on hardware where the difference goes the other way.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar

from gpuvs import units
from gpuvs.model import Case, Measurement, Params, Status
from gpuvs.table import Table


@dataclass(frozen=True)
class Pick:
    """One case of a seed's run, by its cell. Without `size`: the post's size if it was
    measured, else the largest size measured (a `--quick` run measures smaller ones)."""

    workload: str
    variant: str
    backend: str
    device: str
    dtype: str
    params: Params = ()
    size: int | None = None
    stat: str = "time"  # or "first_call": the first call's seconds, timed alone

    def find(self, ms: Sequence[Measurement], exact: bool = False) -> Measurement | None:
        """The case picked; with `exact`, only at `size` itself."""
        want = dict(self.params)
        found = [m for m in ms if (m.case.workload, m.case.variant, m.case.backend,
                                   m.case.device, m.case.dtype)
                 == (self.workload, self.variant, self.backend, self.device, self.dtype)
                 and dict(m.case.params) == want]
        at_size = [m for m in found if m.case.size == self.size]
        if exact:
            return at_size[0] if at_size else None
        return (at_size or sorted(found, key=lambda m: m.case.size))[-1] if found else None


@dataclass(frozen=True)
class Ratio:
    """A speedup as the post computed it: the slow case's time ÷ the fast case's."""

    slow: Pick
    fast: Pick


Figure = Pick | Ratio


@dataclass(frozen=True)
class Found:
    """What a row's sentence is written from: its two values, and any other figure."""

    written: float | None
    correct: float | None
    ms: Sequence[Measurement]

    def of(self, figure: Figure) -> float | None:
        return value_of(figure, self.ms)


SIZE = "{size}"  # in a row's label: the size its figures were measured at


@dataclass(frozen=True)
class Row:
    label: str                 # SIZE in it is filled in by `shown`
    claim: str                 # the post's number, quoted; "—" where it gave none
    written: Figure | None     # the as_written replay, None where the post had no such line
    correct: Figure | None
    why: Callable[[Found], str]

    def shown(self, ms: Sequence[Measurement]) -> str:
        """The label, its SIZE the size the row's figures were measured at: a --quick run
        measures smaller sizes than the post's, and a row must not name a size it was
        not measured at. Where nothing was measured, the size the row asks for."""
        pick = next((p for figure in (self.correct, self.written)
                     if (p := _first(figure)) is not None), None)
        if SIZE not in self.label or pick is None:
            return self.label
        found = pick.find(ms)
        size = found.case.size if found is not None else pick.size
        return self.label.replace(SIZE, units.size(size) if size is not None else "—")


def _first(figure: Figure | None) -> Pick | None:
    return figure.slow if isinstance(figure, Ratio) else figure


@dataclass(frozen=True)
class Headline:
    """A post's conclusion on the first screen of a report: the row of its table that
    holds the number the post concluded with, and the reason in a phrase, written from
    the numbers measured here, why the correct figure here is not the post's."""

    row: Row
    reason: Callable[[Found], str]


def seconds_of(m: Measurement | None, stat: str = "time") -> float | None:
    """What the case's method reports: the mean for a replay (as %timeit prints it, or the
    one `time.time()` difference), the median for the gpuvs protocol."""
    if m is None or m.status is not Status.OK or m.summary is None:
        return None
    if stat == "first_call":
        return m.first_call_s
    return m.summary.mean if m.case.variant == "as_written" else m.summary.median


def value_of(figure: Figure | None, ms: Sequence[Measurement]) -> float | None:
    if isinstance(figure, Pick):
        return seconds_of(figure.find(ms), figure.stat)
    if isinstance(figure, Ratio):
        slow, fast = value_of(figure.slow, ms), value_of(figure.fast, ms)
        return slow / fast if slow and fast else None
    return None


@dataclass(frozen=True)
class SeedOptions:
    """What `gpuvs seeds` passes to every seed: a short run, and seed 003's options."""

    quick: bool = False
    cifar: str | None = None   # path to cifar-100-python.tar.gz; None: synthetic data
    epochs: int = 0            # >0: seed 003 also trains for real, epoch by epoch
    compile: bool = False      # seed 003 also times its tuned step under torch.compile


class Seed(ABC):
    """One post. A plug-in: one file under `gpuvs/seeds/`, registered with `@register`."""

    name: ClassVar[str]        # "000"
    title: ClassVar[str]       # what the post set out to show
    hardware: ClassVar[str]    # as the post states it
    mistake: ClassVar[str]     # what the post got wrong, in one line (docs/seeds.md)

    @abstractmethod
    def cases(self, options: SeedOptions) -> tuple[Case, ...]:
        """Every case of this seed; `options.quick` trims sizes for a short run. Cases on
        devices the user did not ask for are dropped by the caller."""

    @abstractmethod
    def rows(self) -> tuple[Row, ...]:
        """The claim / as-written / correct rows of its table."""

    def headline(self) -> Headline:
        """The post's conclusion, for the report's first screen. By default the first
        row that quotes the post, with its own sentence; a seed names its headline row
        and a shorter reason."""
        row = next((r for r in self.rows() if r.claim != "—"), self.rows()[0])
        return Headline(row, row.why)

    def extra_tables(self, ms: Sequence[Measurement]) -> list[Table]:
        """Tables only this post needs (a speedup-by-size table, an overlap table…)."""
        return []

    def workloads(self) -> frozenset[str]:
        return frozenset(c.workload for c in self.cases(SeedOptions(quick=True)))
