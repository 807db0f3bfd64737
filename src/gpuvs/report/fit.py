"""A table fitted to a terminal's width by whole columns: never a value cut short.

Rich, left to itself, shrinks every column of a table too wide for the terminal and
cuts or folds what no longer fits: at 80 columns a size of 1024 printed as `102`, which
reads as a result. Here each column is either shown whole or not at all:

- a column of values (a size, a time, a ratio) is as wide as its widest value;
- a column of words (a note, a reason, a table's `wrapping` columns) may be narrower
  than its longest cell and wraps at its spaces, never inside a word, down to a floor
  (SENTENCE_MIN, BREAKABLE_MIN, PHRASE_MIN) or its longest word, if longer;
- when even that is too wide, whole columns are left out, in DROP_ORDER (what a reader
  misses least first), and the renderer says which under the table;
- when the columns that are never left out do not fit either, the table is `stacked`:
  each row becomes a block of `column: value` lines, which fits any width.

Pure: a Table and a width in, the columns to show and their widths out.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass

from gpuvs.table import Table

# Between two columns: Rich's padding on each side and its rule (show_edge=False,
# pad_edge=False draws no border and no padding at the table's edges).
GAP = 3
# Sentences: columns of words whatever the table says. A sentence is never squeezed
# narrower than SENTENCE_MIN (unless its longest word is): a note wrapped into an
# 8-character column reads as one word a line.
SENTENCES = frozenset({"note", "why", "reason", "answer"})
SENTENCE_MIN = 20
# Values that read well broken at their spaces ("33.4× [33.2, 33.5]" over two lines):
# every number stays whole, and the figure keeps its place beside the time.
BREAKABLE = frozenset({"GPU vs CPU", "at largest size", "B ÷ A (95 % CI)",
                       "geometric mean B ÷ A (95 % CI)", "GPU predicted [90 % interval]",
                       "speedup predicted"})
BREAKABLE_MIN = 12
# The other columns a table names as words (`Table.wrapping`: a post's claims, short
# phrases) go down to this.
PHRASE_MIN = 10
# What is left out first when a table is too wide, in order: figures derived from the
# time (rates, shares of a peak, resources, costs), the wall clock beside a device's time,
# the note, the thread count, then a GPU's speedup (the crossover and answer tables say
# it again). The size, backend, device, data and time of a case are never left out, nor
# is any column named nowhere here: a table that cannot fit them is stacked instead.
DROP_ORDER = ("throughput", "of peak", "cost/1M calls", "energy/call", "above idle", "power",
              "peak host", "peak device", "peak memory", "energy/step", "energy/epoch",
              "energy/image", "GPU busy", "wall", "graph replay ±CI", "algbw", "loops",
              "kernels/step", "tie band", "model crossover", "asymptotic", "rank test p",
              "note", "threads", "GPU vs CPU")


@dataclass(frozen=True)
class Fit:
    """How a table is drawn at one width: the indices of the columns shown and their
    widths, the names of those left out, or `stacked` when it cannot be a grid."""

    columns: tuple[int, ...]
    widths: tuple[int, ...]
    dropped: tuple[str, ...] = ()
    stacked: bool = False


def fit(table: Table, width: int) -> Fit:
    """The columns of `table` that fit in `width` characters, each whole."""
    shown = [i for i, _ in enumerate(table.columns) if any(row[i].strip() for row in table.rows)]
    natural = {i: _natural(table, i) for i in shown}
    least = {i: _least(table, i) for i in shown}
    dropped: list[str] = []
    order = [name for name in DROP_ORDER if name in {table.columns[i] for i in shown[1:]}]
    while _total(least, shown) > width and order:
        name = order.pop(0)
        shown = [i for i in shown if table.columns[i] != name]
        dropped.append(name)
    if _total(least, shown) > width:  # a block per row shows every column
        return Fit(tuple(i for i, _ in enumerate(table.columns)), (), stacked=True)
    widths = _widened(least, natural, [i for i in shown if not _sentence(table, i)],
                      [i for i in shown if _sentence(table, i)], width - _total(least, shown))
    return Fit(tuple(shown), tuple(widths[i] for i in shown), tuple(dropped))


def _widened(least: dict[int, int], natural: dict[int, int], values: list[int],
             sentences: list[int], spare: int) -> dict[int, int]:
    """The spare width shared out: each column of values (and header) up to one line,
    left to right; then what is left to the sentences, each in proportion to what it
    lacks for one line, so that one long label does not leave a note at its floor."""
    widths = dict(least)
    for i in values:
        more = min(natural[i] - widths[i], spare)
        widths[i] += more
        spare -= more
    lacking = {i: natural[i] - least[i] for i in sentences}
    wanted = sum(lacking.values())
    if wanted <= spare:
        return widths | {i: natural[i] for i in sentences}
    for i in sentences:
        widths[i] += spare * lacking[i] // wanted
    left = spare - sum(spare * lacking[i] // wanted for i in sentences)
    for i in sentences[:left]:  # the remainder of the shares, a column each
        widths[i] += 1
    return widths


def stacked(table: Table, width: int) -> list[str]:
    """Each row as a block: its first cell, then `column: value` lines indented under it,
    each wrapped at its spaces — for a terminal too narrow for the table's grid."""
    keep = [i for i, _ in enumerate(table.columns) if any(row[i].strip() for row in table.rows)]
    lines = [table.title] if table.title else []
    for row in table.rows:
        first, *rest = keep
        lines += _wrapped(_one(row[first]), width, "")
        for i in rest:
            if row[i].strip():
                lines += _wrapped(f"{table.columns[i]}: {_one(row[i])}", width, "    ")
    return lines


def words(table: Table, column: int) -> bool:
    """Whether a column may wrap at its spaces."""
    return _sentence(table, column) or table.columns[column] in BREAKABLE


def _sentence(table: Table, column: int) -> bool:
    name = table.columns[column]
    return name in SENTENCES or name in table.wrapping


def _natural(table: Table, i: int) -> int:
    """The column's width with every cell on one line."""
    return max(len(table.columns[i]), *(len(_one(row[i])) for row in table.rows))


def _least(table: Table, i: int) -> int:
    """The narrowest the column may be: its longest word (the header's too: a header
    wraps at its spaces), and its widest value or, for a column of words, its floor."""
    longest_word = max(len(w) for text in (table.columns[i], *(r[i] for r in table.rows))
                       for w in [*text.split(), ""])
    widest = max(len(_one(row[i])) for row in table.rows)
    name = table.columns[i]
    if not words(table, i):
        return max(longest_word, widest)
    floor = (SENTENCE_MIN if name in SENTENCES else BREAKABLE_MIN if name in BREAKABLE
             else PHRASE_MIN)
    return max(longest_word, min(widest, floor))


def _total(widths: dict[int, int], shown: list[int]) -> int:
    return sum(widths[i] for i in shown) + GAP * max(len(shown) - 1, 0)


def _one(cell: str) -> str:
    """A cell on one line: its own line breaks become spaces."""
    return " ".join(cell.split())


def _wrapped(text: str, width: int, indent: str) -> list[str]:
    """`text` wrapped at its spaces; a word longer than the line stays whole."""
    return textwrap.wrap(text, width, initial_indent=indent, subsequent_indent=indent + "  ",
                         break_long_words=False, break_on_hyphens=False) or [indent]
