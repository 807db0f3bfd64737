"""Layout tables → Rich renderables for the terminal."""

from __future__ import annotations

from collections.abc import Iterable

from rich.console import Console
from rich.table import Table as RichTable

from gpuvs.report.layout import Table

RIGHT = {"size", "threads", "time", "±CI", "wall", "throughput", "GPU vs CPU"}


def to_rich(table: Table) -> RichTable:
    """A Rich table without the columns that are empty in every row (e.g. `wall` on CPUs)."""
    keep = [i for i, _ in enumerate(table.columns) if any(row[i] for row in table.rows)]
    t = RichTable(title=table.title, title_justify="left", caption="\n".join(table.notes),
                  caption_justify="left", show_edge=False, pad_edge=False)
    for i in keep:
        col = table.columns[i]
        t.add_column(col, justify="right" if col in RIGHT else "left",
                     no_wrap=col != "note", overflow="fold")
    for row in table.rows:
        t.add_row(*(row[i] for i in keep))
    return t


def print_tables(tables: Iterable[Table], console: Console) -> None:
    for table in tables:
        console.print(to_rich(table))
        console.print()
