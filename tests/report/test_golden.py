"""Reports of real runs, pinned: the same JSON export must render the same page, byte for
byte, whatever the code around the report was reorganised into.

The exports in tests/data/golden are real runs: `gpuvs seeds --quick` and a matmul sweep
on a 2-core CPU, and the collectives and DDP scaling of two H200s. A plot's SVG is
matplotlib's own bytes, which a new matplotlib may change: with the version the pins were
taken with, the whole page must match; with another, the page outside its plots must.

A change that alters a page on purpose re-pins it: `PYTHONPATH=src:. python -m
tests.report.test_golden` rewrites reports.json; the commit says why the pages changed."""

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

    page = _render(name, tmp_path)
    pin = PINS["pages"][name]
    assert _sha(_without_plots(page)) == pin["without_plots"]
    if matplotlib.__version__ == PINS["matplotlib"]:
        assert _sha(page) == pin["page"]


def _render(name: str, folder: Path) -> bytes:
    out = folder / f"{name}.html"
    result = CliRunner().invoke(app, ["report", "--from", str(GOLDEN / f"{name}.json"), "-o",
                                      str(out)])
    assert result.exit_code == 0, result.output
    return out.read_bytes()


if __name__ == "__main__":
    import tempfile

    import matplotlib

    with tempfile.TemporaryDirectory() as tmp:
        pages = {}
        for path in sorted(GOLDEN.glob("*.json")):
            if path.name != "reports.json":
                page = _render(path.stem, Path(tmp))
                pages[path.stem] = {"page": _sha(page),
                                    "without_plots": _sha(_without_plots(page))}
    (GOLDEN / "reports.json").write_text(json.dumps(
        {"matplotlib": matplotlib.__version__, "pages": pages}, indent=1) + "\n")
