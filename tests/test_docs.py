"""The README and docs/ stand on their own: a clone has no `../shared`, so nothing may
point outside the repository, and every file they link or name by path exists."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)#\s]+)\)")
# A repository path named in backticks: docs/…, benchmarks/…, src/…, tests/…
NAMED = re.compile(r"`((?:docs|benchmarks|src|tests)/[\w./-]+?\.\w+)`")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_no_page_points_outside_the_repository(page: Path) -> None:
    text = page.read_text()
    assert "../" not in text, [line for line in text.splitlines() if "../" in line]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_linked_or_named_file_exists(page: Path) -> None:
    text = page.read_text()
    missing = [t for t in LINK.findall(text)
               if not t.startswith(("http://", "https://")) and not (page.parent / t).exists()]
    missing += [t for t in NAMED.findall(text) if "*" not in t and not (REPO / t).exists()]
    assert not missing
