"""Tables as markdown: one line per row whatever the cell holds, numbers right-aligned,
empty columns left out, notes kept."""

from __future__ import annotations

from gpuvs.report.markdown import to_markdown
from gpuvs.table import Table

TABLE = Table("matmul · correct · float32", ("size", "backend", "wall", "note"),
              (("1024", "torch", "", "a | b\nsecond line"), ("2048", "numpy", "", "")),
              notes=("fair comparison: dtype float32 on every backend",))


def test_a_table_in_markdown_keeps_each_row_on_one_line() -> None:
    assert to_markdown([TABLE]).splitlines() == [
        "**matmul · correct · float32**",
        "",
        "| size | backend | note |",
        "|---:|:---|:---|",
        "| 1024 | torch | a \\| b second line |",
        "| 2048 | numpy |  |",
        "",
        "fair comparison: dtype float32 on every backend",
    ]

