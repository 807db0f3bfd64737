"""Tables as GitHub-flavoured markdown (a pull request, `$GITHUB_STEP_SUMMARY`) and as an
HTML fragment (a notebook's display). Pure: strings in, a string out; the console draws
the same tables. A script reads numbers instead: `report.documents` (`--format json`)."""

from __future__ import annotations

import re
from collections.abc import Iterable

from gpuvs.table import Table

# Columns that hold numbers: right-aligned in markdown, as in the terminal.
_LEFT = frozenset({"backend", "device", "data", "note", "why", "sweep", "who wins", "over",
                   "GPU series", "collective", "case", "verdict", "workload"})


# What markdown (and the HTML GitHub renders within it) would read as its own in text
# from data: a workload or run name with `|`, backticks, `<script>`, `*`, `[x](y)`,
# `&lt;` (an entity, shown as the character it names).
_SPECIAL = re.compile(r"([\\`*_\[\]<>|~&])")
# What begins a heading, a list, a quote or a rule when a line starts with it.
_BLOCK = re.compile(r"^(\d+)([.)])|^([#+=-])")


def _cell(text: str) -> str:
    """Text from data as markdown shows it, character for character: on one line (no
    row breaks the table), every character markdown would read as its own escaped."""
    return _SPECIAL.sub(r"\\\1", " ".join(text.split()))


def line(text: str) -> str:
    """A line of text from data, escaped as a cell is, whose start begins no heading,
    list or quote: for the notes under a table and a step summary's lines."""
    return _BLOCK.sub(lambda m: f"{m[1]}\\{m[2]}" if m[1] else f"\\{m[3]}", _cell(text),
                      count=1)


def to_markdown(tables: Iterable[Table]) -> str:
    """Each table under its title in bold, then its notes; columns empty in every row are
    left out, as the console leaves them out."""
    out: list[str] = []
    for t in tables:
        keep = [i for i, _ in enumerate(t.columns) if any(row[i].strip() for row in t.rows)]
        if t.title:
            out += [f"**{_cell(t.title)}**", ""]
        out.append("| " + " | ".join(_cell(t.columns[i]) for i in keep) + " |")
        out.append("|" + "|".join(":---" if t.columns[i] in _LEFT or not _numeric(t, i)
                                  else "---:" for i in keep) + "|")
        out += ["| " + " | ".join(_cell(row[i]) for i in keep) + " |" for row in t.rows]
        out += [""] + [f"{line(n)}  " for n in t.notes] + [""]
    return "\n".join(out).rstrip() + "\n"


def to_html(tables: Iterable[Table]) -> str:
    """Each table as a plain HTML table under its title, notes beneath: what a notebook
    shows for a result (`_repr_html_`), columns empty in every row left out."""
    from html import escape

    out: list[str] = []
    for t in tables:
        keep = [i for i, _ in enumerate(t.columns) if any(row[i].strip() for row in t.rows)]
        if t.title:
            out.append(f"<p><b>{escape(t.title)}</b></p>")
        align = ["left" if t.columns[i] in _LEFT or not _numeric(t, i) else "right"
                 for i in keep]
        out.append("<table><thead><tr>" + "".join(
            f'<th style="text-align:{a}">{escape(t.columns[i])}</th>'
            for i, a in zip(keep, align, strict=True)) + "</tr></thead><tbody>")
        out += ["<tr>" + "".join(f'<td style="text-align:{a}">{escape(row[i])}</td>'
                                 for i, a in zip(keep, align, strict=True)) + "</tr>"
                for row in t.rows]
        out.append("</tbody></table>")
        out += [f"<p><small>{escape(n)}</small></p>" for n in t.notes]
    return "\n".join(out)


def _numeric(t: Table, i: int) -> bool:
    """A column whose filled cells start with a digit (or a sign, or '≤'/'≈')."""
    cells = [row[i].strip() for row in t.rows if row[i].strip()]
    return bool(cells) and all(c[0].isdigit() or c[0] in "+-−≤≈<>~" for c in cells)

