"""Tables as plain text for a file or a CI log: never wrapped, never a word split.

A terminal has a width to fit; a file does not, and a table wrapped at 80 columns there
turns a sentence into one character a line. Here every column keeps its full width, and
a long sentence (a note, a why) goes on its own indented line under its row instead of
stretching the row. Pure: a Table in, lines out.
"""

from __future__ import annotations

from collections.abc import Iterable

from gpuvs.table import Table

# A sentence column is printed under its row when any of its cells is longer than this.
INLINE_MAX = 48
SENTENCE_COLUMNS = frozenset({"note", "why", "reason"})
# Columns of numbers, aligned to the right.
RIGHT = frozenset({"size", "threads", "time ±CI", "wall", "GPU busy", "throughput", "of peak",
                   "GPU vs CPU", "ok", "failed", "cases", "loops", "algbw", "busbw", "N",
                   "samples/s", "compute", "A", "B", "rank test p", "step ±CI",
                   "energy/call", "above idle", "power", "peak host", "peak device",
                   "cost/1M calls"})
GAP = "  "
UNDER = "    "


def to_plain(table: Table) -> list[str]:
    """The table's lines: title, header, rule, rows (each followed by its long sentences),
    then its notes. Columns empty in every row are left out."""
    keep = [i for i, _ in enumerate(table.columns) if any(r[i].strip() for r in table.rows)]
    under = [i for i in keep if table.columns[i] in SENTENCE_COLUMNS
             and any(len(r[i]) > INLINE_MAX for r in table.rows)]
    inline = [i for i in keep if i not in under]
    widths = {i: max([len(table.columns[i]), *(len(_one(r[i])) for r in table.rows)])
              for i in inline}
    lines = [table.title] if table.title else []
    lines.append(_line([table.columns[i] for i in inline], inline, widths, table))
    lines.append(GAP.join("-" * widths[i] for i in inline))
    for row in table.rows:
        lines.append(_line([_one(row[i]) for i in inline], inline, widths, table))
        lines += [f"{UNDER}{table.columns[i]}: {_one(row[i])}" for i in under if row[i]]
    lines += list(table.notes)
    return lines


def _one(cell: str) -> str:
    """A cell on one line: its own line breaks become spaces."""
    return " ".join(cell.split())


def _line(cells: Iterable[str], columns: list[int], widths: dict[int, int], t: Table) -> str:
    out = []
    for cell, i in zip(cells, columns, strict=True):
        right = t.columns[i] in RIGHT
        out.append(cell.rjust(widths[i]) if right else cell.ljust(widths[i]))
    return GAP.join(out).rstrip()
