"""The pieces a page is drawn from, for every page gpuvs writes (a run's report, a
comparison, a history, a prediction): a `Table` as the template draws it (`TableView`,
made by `view`), a plot as inline SVG (`Figure`), and a section of tables and figures
under one heading (`Sweep`)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from gpuvs.report.draw import to_svg
from gpuvs.report.plain import INLINE_MAX
from gpuvs.report.plots import Plot
from gpuvs.table import Table

# Columns of numbers: right-aligned so that digits line up, never wrapped (a figure's
# parts stack instead: see TableView). A post's figures are numbers too.
NUMERIC = frozenset({"size", "threads", "time ±CI", "wall", "GPU busy", "throughput", "of peak",
                     "GPU vs CPU", "from size", "by (95 % CI)", "per call ±CI",
                     "graph replay ±CI", "algbw", "busbw", "loops", "N", "step ±CI",
                     "samples/s", "compute", "energy/call", "above idle", "power",
                     "peak host", "peak device", "cost/1M calls", "post claims",
                     "as written here", "correct here", "written ÷ correct", "it claimed",
                     "its method here"})
# Columns of sentences: a table with one keeps to the measure of the page's text, where
# they wrap, however wide its numbers.
PROSE = frozenset({"why", "answer", "reason"})
# Columns of sentences: each on a full-width line under its row, where it wraps inside
# the page; as a column beside a dozen columns of numbers it ran out of the page. Short
# ones (a few caveats' names) stay in their column, as in the plain-text tables.
UNDER_ROW = frozenset({"note"})


@dataclass(frozen=True)
class TableView:
    """A layout Table as the template draws it: empty columns dropped, numbers marked (a
    number cell's parts, "13.8 GFLOP/s, 27.8 GB/s", one above the other: the column then
    takes the width of one), and the sentences of UNDER_ROW columns taken out of the row
    to go under it. A table with columns of numbers and none of PROSE is `wide`: it may
    reach past the measure of the page's text to the window's edge."""

    title: str
    columns: tuple[str, ...]
    numeric: tuple[bool, ...]
    rows: tuple[tuple[str, ...], ...]
    notes: tuple[str, ...]
    under: tuple[str, ...] = ()  # per row: the line under it ("" for none); () if none
    wide: bool = False


@dataclass(frozen=True)
class Figure:
    name: str
    svg: Any  # markupsafe.Markup: the only unescaped text on the page
    caption: str


NO_CPU = ("No speedup plot: no CPU case of this sweep finished, so its GPU series have "
          "nothing to be set against.")
ONE_SERIES = "No speedup plot: only one series finished in this sweep."


@dataclass(frozen=True)
class Sweep:
    title: str
    figures: tuple[Figure, ...]
    tables: tuple[TableView, ...]
    # A sweep of GPU against CPU draws time and speedup; one figure means a series is
    # missing. A section a view draws itself (`views.View.sections`) may draw one by design.
    one_figure_by_design: bool = False
    no_speedup: str = ONE_SERIES  # why, where one figure is drawn and not by design

    @property
    def anchor(self) -> str:
        """The section's id: "sweep-square-matrix-product-float32", a link's target."""
        return "sweep-" + re.sub(r"[^a-z0-9]+", "-", self.title.lower()).strip("-")


def figure_of(p: Plot) -> Figure:
    from markupsafe import Markup

    return Figure(p.name, Markup(to_svg(p)), p.caption)


def view(table: Table) -> TableView:
    keep = [i for i, _ in enumerate(table.columns) if any(row[i] for row in table.rows)]
    under = [i for i in keep if table.columns[i] in UNDER_ROW
             and any(len(row[i]) > INLINE_MAX for row in table.rows)]
    inline = [i for i in keep if i not in under]
    columns = tuple(table.columns[i] for i in inline)
    numeric = tuple(c in NUMERIC for c in columns)
    rows = tuple(tuple(_stacked(row[i]) if n else row[i] for i, n in zip(inline, numeric,
                                                                          strict=True))
                 for row in table.rows)
    return TableView(table.title, columns, numeric, rows, table.notes,
                     tuple(" ".join(row[i] for i in under if row[i]) for row in table.rows)
                     if under else (), any(numeric) and not PROSE & set(columns))


# ", " between a number cell's parts (not inside a CI's brackets or a remark's
# parentheses), and " (" before the remark: "4.99 µs ±6.2% (unstable, drifting)".
_PARTS = re.compile(r", (?![^\[\]()]*[\])])| (?=\()")


def _stacked(cell: str) -> str:
    return _PARTS.sub("\n", cell)
