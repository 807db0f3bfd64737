"""The report of a real run, opened in headless Chromium: it loads without a single
request beyond its own file, draws every plot, and screenshots to a non-blank page.

`make test` installs Debian's chromium; a machine without it (and without root to
install it) skips these tests — except under CI, where a missing browser is a failure.
"""

from __future__ import annotations

import dataclasses
import io
import os

import pytest
from benchmarks.report_screenshots import (
    CHROMIUM,
    DOCS,
    DOCS_SCALE,
    LAPTOP_WIDTH,
    Chromium,
    main,
    retake_docs,
)
from tests.report.samples import CEILINGS, RealRun, gpu_sweep, run

from gpuvs.report.html import render_html
from gpuvs.report.plots import all_plots
from gpuvs.store.export import load_json

if not CHROMIUM.exists():
    reason = (f"{CHROMIUM} is not installed; `make test` installs it with apt-get when run "
              "as root (apt-get install chromium)")
    if os.environ.get("CI"):
        raise RuntimeError(f"CI must run the browser test: {reason}")
    pytest.skip(reason, allow_module_level=True)


@pytest.fixture(scope="module")
def browser():
    with Chromium() as chromium:
        yield chromium


def test_the_report_loads_self_contained_with_every_plot_drawn(real_run: RealRun, browser,
                                                               tmp_path) -> None:
    from PIL import Image

    loaded = browser.load(real_run.report)
    assert loaded.failed == ()
    assert loaded.requests == (real_run.report.resolve().as_uri(),)  # no CDN, font, icon
    _, ms, ceilings = load_json(real_run.json)
    expected = [p.name for p in all_plots(ms, ceilings)]
    assert list(loaded.plots) == expected and len(expected) == 11
    assert loaded.title == f"gpuvs report · run {real_run.run_id}"
    shot = Image.open(io.BytesIO(loaded.png))
    (tmp_path / "report.png").write_bytes(loaded.png)
    assert shot.width == LAPTOP_WIDTH and shot.height > 3000  # the whole page, not a view
    colours = shot.convert("RGB").getcolors(maxcolors=1 << 20)
    assert colours is not None and len(colours) > 100  # text and plots, not a blank page


@pytest.mark.parametrize("width", [LAPTOP_WIDTH, 900])
def test_every_note_wraps_inside_the_window_even_under_a_row_of_many_numbers(
        browser, tmp_path, width) -> None:
    page = tmp_path / "gpu.html"
    page.write_text(render_html(run(), gpu_sweep(), CEILINGS))
    loaded = browser.load(page, width)
    assert loaded.cut_off == ()


def test_the_screenshot_script_renders_a_json_export(real_run: RealRun, tmp_path) -> None:
    assert main([str(real_run.json), str(tmp_path), "--width", "900"]) == 0
    html = tmp_path / f"report-{real_run.run_id}.html"
    assert html.read_bytes() == real_run.report.read_bytes()
    png = tmp_path / f"report-{real_run.run_id}-900px.png"
    assert png.read_bytes().startswith(b"\x89PNG")


def test_the_screenshot_script_rejects_an_unknown_run_in_one_line(tmp_path, capsys) -> None:
    from gpuvs.store import open_store
    open_store(str(tmp_path / "r.sqlite")).close()
    assert main(["nope", str(tmp_path), "--db", str(tmp_path / "r.sqlite")]) == 2
    assert capsys.readouterr().err.startswith("error: unknown run 'nope'")


def test_a_docs_screenshot_shows_every_column_at_twice_the_pixels(tmp_path, capsys) -> None:
    """The H100 matmul sweep's section, from its export in docs/runs: wide enough for its
    whole table, twice the CSS pixels so that half its size reads as the page."""
    from PIL import Image

    assert retake_docs(["report-h100-matmul-sweep.png"], tmp_path) == 0
    said = capsys.readouterr().out
    assert "tables cut" not in said and f"at {DOCS_SCALE}x" in said
    shot = Image.open(tmp_path / "report-h100-matmul-sweep.png")
    assert shot.width >= DOCS_SCALE * LAPTOP_WIDTH and shot.height > 1000


def test_a_docs_screenshot_without_its_export_is_skipped_and_says_how_to_make_it(
        tmp_path, capsys, monkeypatch) -> None:
    import benchmarks.report_screenshots as shots

    seeds = next(s for s in DOCS if s.png == "report-h100-seeds-verdict.png")
    monkeypatch.setattr(shots, "DOCS", (dataclasses.replace(
        seeds, source="docs/runs/not-there.json"),))
    assert retake_docs([], tmp_path) == 1
    assert capsys.readouterr().out.startswith(
        "skipped docs/report-h100-seeds-verdict.png: docs/runs/not-there.json is not there "
        "yet (on the GPU machine: gpuvs export RUN_ID -f json -o docs/runs/not-there.json)")
    assert list(tmp_path.iterdir()) == []


def test_the_check_sees_a_request_that_leaves_the_page(browser, tmp_path) -> None:
    """The control: a page that asks for a stylesheet (on the loopback's discard port,
    where nothing listens) shows the request and its failure."""
    page = tmp_path / "leaky.html"
    page.write_text('<!DOCTYPE html><link rel="icon" href="data:,">'
                    '<link rel="stylesheet" href="http://127.0.0.1:9/style.css"><p>hi</p>')
    loaded = browser.load(page)
    assert "http://127.0.0.1:9/style.css" in loaded.requests
    assert any(f.startswith("http://127.0.0.1:9/style.css: net::ERR_") for f in loaded.failed)
