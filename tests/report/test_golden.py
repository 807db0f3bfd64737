"""Reports of real runs, pinned: the same JSON export must render the same page, byte for
byte, whatever the code around the report was reorganised into.

The exports in tests/data/golden are real runs: `gpuvs seeds --quick` and a matmul sweep
on a 2-core CPU, and the collectives and DDP scaling of two H200s. A plot's SVG is
matplotlib's own bytes, which a new matplotlib may change: with the version the pins were
taken with, the whole page must match; with another, the page outside its plots must."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpuvs.cli import app

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "golden"
PINS = json.loads((GOLDEN / "reports.json").read_text())
_SVG = re.compile(rb"<svg.*?</svg>", re.S)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _without_plots(page: bytes) -> bytes:
    return _SVG.sub(b"<svg/>", page)


@pytest.mark.parametrize("name", sorted(PINS["pages"]))
def test_a_real_run_renders_the_pinned_page(name: str, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    import matplotlib

    out = tmp_path / f"{name}.html"
    result = CliRunner().invoke(app, ["report", "--from", str(GOLDEN / f"{name}.json"), "-o",
                                      str(out)])
    assert result.exit_code == 0, result.output
    page = out.read_bytes()
    pin = PINS["pages"][name]
    assert _sha(_without_plots(page)) == pin["without_plots"]
    if matplotlib.__version__ == PINS["matplotlib"]:
        assert _sha(page) == pin["page"]
