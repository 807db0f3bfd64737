"""Reports of real runs, pinned: the same JSON export must render the same page, byte for
byte, whatever the code around the report was reorganised into.

The exports in tests/data/golden are real runs: `gpuvs seeds --quick` and a matmul sweep
on a 2-core CPU, and the collectives and DDP scaling of two H200s. A plot's SVG is
matplotlib's own bytes, which a new matplotlib may change: with the version the pins were
taken with, the whole page must match; with another, the page outside its plots must.

A plot's coordinates are compared to 1/100 of a point, and its clip paths by the order
they come in: Matplotlib names a clip path by a hash of its rectangle at full precision,
so a layout that moved it by 10⁻¹² pt renames it while the rectangle, compared as any
coordinate, stays where it was. The matmul sweep's plots, pinned
byte for byte on one machine, came out with other bytes on the CI machine from the same
code, export and library versions, at every commit back to the pin, while the page
outside its plots matched: Matplotlib writes six decimals, and the last ones belong to
the machine's floating point, not to the page. Anything a reader could see (a moved tick,
label, point or legend, any text) still changes the pin.

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
_DECIMAL = re.compile(rb"-?\d+\.\d+")
_CLIP = re.compile(rb"-p[0-9a-f]{10}\b")  # Matplotlib's clip-path id: "p" and 10 hex digits


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _without_plots(page: bytes) -> bytes:
    return _SVG.sub(b"<svg/>", page)


def _plots_to_a_hundredth(page: bytes) -> bytes:
    """The page with every decimal inside its plots rounded to two places, and each clip
    path named by its place in the page instead of its hash."""
    def rounded(number: re.Match[bytes]) -> bytes:
        return b"%.2f" % (round(float(number.group()), 2) + 0.0)  # + 0.0: no "-0.00"

    clips: dict[bytes, bytes] = {}

    def numbered(clip: re.Match[bytes]) -> bytes:
        return clips.setdefault(clip.group(), b"-clip%d" % len(clips))

    return _SVG.sub(lambda svg: _CLIP.sub(numbered, _DECIMAL.sub(rounded, svg.group())), page)


@pytest.mark.parametrize("name", sorted(PINS["pages"]))
def test_a_real_run_renders_the_pinned_page(name: str, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    import matplotlib

    page = _render(name, tmp_path)
    pin = PINS["pages"][name]
    assert _sha(_without_plots(page)) == pin["without_plots"]
    if matplotlib.__version__ == PINS["matplotlib"]:
        assert _sha(_plots_to_a_hundredth(page)) == pin["page"]


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
                pages[path.stem] = {"page": _sha(_plots_to_a_hundredth(page)),
                                    "without_plots": _sha(_without_plots(page))}
    (GOLDEN / "reports.json").write_text(json.dumps(
        {"matplotlib": matplotlib.__version__, "pages": pages}, indent=1) + "\n")
