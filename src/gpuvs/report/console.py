"""The console gpuvs prints on, and layout tables → Rich renderables for the terminal."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import IO, Any

from rich.console import Console
from rich.table import Table as RichTable
from rich.text import Text

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


# Columns that may wrap on a narrow terminal (at their ", " and spaces).
WRAPPING = {"throughput", "of peak", "GPU vs CPU", "note"}
RIGHT = {"size", "threads", "time ±CI", "wall", "GPU busy", "throughput", "of peak",
         "GPU vs CPU", "energy/call", "above idle", "power", "peak host", "peak device",
         "cost/1M calls"}


def to_rich(table: Table) -> RichTable:
    """A Rich table without the columns that are empty in every row (e.g. `wall` on CPUs)."""
    keep = [i for i, _ in enumerate(table.columns) if any(row[i] for row in table.rows)]
    # Text, not markup: reasons hold brackets ("pip install 'gpuvs[jax]'").
    t = RichTable(title=Text(table.title), title_justify="left", show_edge=False,
                  pad_edge=False)
    for i in keep:
        col = table.columns[i]
        t.add_column(col, justify="right" if col in RIGHT else "left",
                     no_wrap=col not in WRAPPING | table.wrapping, overflow="fold")
    for row in table.rows:
        t.add_row(*(Text(row[i], overflow="fold") for i in keep))
    return t


def print_tables(tables: Iterable[Table], console: Console) -> None:
    """In a terminal, Rich tables that wrap their sentences at spaces to fit its width; in
    a file or a CI log (no terminal), plain lines at full width that never split a word
    (`report.plain`)."""
    from gpuvs.report.plain import to_plain
    for table in tables:
        if console.is_terminal:
            console.print(to_rich(table))
            for note in table.notes:
                console.print(Text(note), soft_wrap=False)
        else:
            for line in to_plain(table):
                console.print(Text(line), soft_wrap=True)
        console.print()


class Rendered:
    """Tables that print as plain text, render in Rich and show in notebooks."""

    def __init__(self, tables: Sequence[Any], width: int = 120) -> None:
        self.tables, self.width = list(tables), width

    def __rich_console__(self, console: Any, options: Any) -> Any:
        from rich.text import Text

        for table in self.tables:
            yield to_rich(table)
            for note in table.notes:
                yield Text(note)
            yield Text("")

    def __str__(self) -> str:
        import io

        from rich.console import Console

        buf = io.StringIO()
        Console(file=buf, width=self.width, color_system=None, highlight=False).print(self)
        return buf.getvalue().rstrip() + "\n"

    __repr__ = __str__
