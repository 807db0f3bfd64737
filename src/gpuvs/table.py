"""A table of strings: what the report builds (`gpuvs.report.layout`) and what seeds add
(`Seed.extra_tables`), before any renderer draws it in a terminal, HTML or markdown.

It lives below both so that seeds never import the report: the report imports seeds."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Table:
    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    notes: tuple[str, ...] = ()
    wrapping: frozenset[str] = frozenset()  # columns of words, free to wrap when narrow
