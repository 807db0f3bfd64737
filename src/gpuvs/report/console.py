"""The console gpuvs prints on, and layout tables → Rich renderables for the terminal."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from typing import IO, Any

from rich.console import Console, RenderableType
from rich.table import Table as RichTable
from rich.text import Text

from gpuvs.report.fit import Fit, fit, stacked, words
from gpuvs.table import Table

UNWRAPPED = 10_000  # columns: "no limit" for output that is not a terminal


def console(stderr: bool = False) -> Console:
    """Rich's console; on a file or a pipe (a CI log) it never wraps: lines keep their
    length, so no number or word is split across lines."""
    out = _Console(stderr=stderr, highlight=False)
    if not out.is_terminal:
        out = _Console(stderr=stderr, highlight=False, width=UNWRAPPED, soft_wrap=True)
    return out


def reader_gone(stream: IO[str]) -> None:
    """A reader that has gone (`gpuvs show | head -1`: a closed pipe) is not an error: what
    is left to print goes nowhere, and the command carries on to its own end and exit code
    (a run still finishes and is stored)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, stream.fileno())
    os.close(devnull)


class _Console(Console):
    """Rich's console, but a closed pipe ends nothing: Rich's own answer to one is to exit
    with code 1, which fails a `pipefail` pipeline for a command that did all it was asked."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        reader_gone(self.file)


RIGHT = {"size", "threads", "time ±CI", "wall", "GPU busy", "throughput", "of peak",
         "GPU vs CPU", "energy/call", "above idle", "power", "peak host", "peak device",
         "cost/1M calls"}


def renderables(table: Table, width: int) -> Iterator[RenderableType]:
    """The table as a terminal `width` columns wide shows it (`report.fit`): a Rich table
    of whole columns, a line naming those left out, and its notes; or, where even the
    columns never left out do not fit, one block of lines per row."""
    fitted = fit(table, width)
    if fitted.stacked:
        yield from (Text(line) for line in stacked(table, width))
    else:
        yield _grid(table, fitted)
    if fitted.dropped:
        yield Text(f"not shown at {width} columns: {', '.join(fitted.dropped)} (a wider "
                   "terminal shows them, as does piping the output, e.g. to `less -S`)")
    for note in table.notes:
        yield Text(note)


def _grid(table: Table, fitted: Fit) -> RichTable:
    """A Rich table of the columns `fitted` keeps, each at its width: a value is never
    wider than its column, and a column of words wraps at its spaces only."""
    # Text, not markup: reasons hold brackets ("pip install 'gpuvs[jax]'").
    t = RichTable(title=Text(table.title), title_justify="left", show_edge=False,
                  pad_edge=False)
    for i, width in zip(fitted.columns, fitted.widths, strict=True):
        col = table.columns[i]
        # A header wraps at its spaces; a value is never wrapped (its column is as wide).
        t.add_column(col, justify="right" if col in RIGHT else "left", width=width,
                     overflow="fold")
    for row in table.rows:
        t.add_row(*(Text(" ".join(row[i].split()), no_wrap=not words(table, i))
                    for i in fitted.columns))
    return t


def print_tables(tables: Iterable[Table], console: Console) -> None:
    """In a terminal, tables fitted to its width by whole columns (`renderables`); in a
    file or a CI log (no terminal), plain lines at full width that never split a word
    (`report.plain`)."""
    from gpuvs.report.plain import to_plain
    for table in tables:
        if console.is_terminal:
            for part in renderables(table, console.width):
                console.print(part)
        else:
            for line in to_plain(table):
                console.print(Text(line), soft_wrap=True)
        console.print()


class Rendered:
    """Tables that print as plain text, render in Rich and show in notebooks."""

    def __init__(self, tables: Sequence[Any], width: int = 120) -> None:
        self.tables, self.width = list(tables), width

    def __rich_console__(self, console: Any, options: Any) -> Any:
        for table in self.tables:
            yield from renderables(table, options.max_width)
            yield Text("")

    def __str__(self) -> str:
        import io

        from rich.console import Console

        buf = io.StringIO()
        Console(file=buf, width=self.width, color_system=None, highlight=False).print(self)
        return buf.getvalue().rstrip() + "\n"

    __repr__ = __str__
