"""Layout tables → Rich renderables for the terminal."""

from __future__ import annotations

from collections.abc import Iterable

from rich.console import Console
from rich.table import Table as RichTable

from gpuvs.report.layout import Table

RIGHT = {"size", "time", "±CI", "wall", "throughput", "GPU vs CPU"}


def to_rich(table: Table) -> RichTable:
    t = RichTable(title=table.title, title_justify="left", caption="\n".join(table.notes),
                  caption_justify="left")
    for col in table.columns:
        t.add_column(col, justify="right" if col in RIGHT else "left",
                     overflow="fold", max_width=60 if col == "note" else None)
    for row in table.rows:
        t.add_row(*row)
    return t


def print_tables(tables: Iterable[Table], console: Console) -> None:
    for table in tables:
        console.print(to_rich(table))
        console.print()
