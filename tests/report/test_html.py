"""The report page: its content and order, self-containment, escaping, determinism; the
`report` and `plot` commands, from the database and from a JSON export, and bad input."""

from __future__ import annotations

import dataclasses
import json
import os
import re
from pathlib import Path

import pytest
from tests.helpers import invoke
from tests.helpers import run_id as run_id_of
from tests.report.samples import CEILINGS, GPU, RealRun, gpu_sweep, measurement, run

from gpuvs.model import Case, Measurement, Status
from gpuvs.report.html import render_html, view
from gpuvs.report.plots import all_plots
from gpuvs.store import open_store
from gpuvs.store.export import load_json, run_document, write_json
from gpuvs.table import Table


@pytest.fixture(scope="module")
def page() -> str:
    return render_html(run(), gpu_sweep(), CEILINGS)


def test_sections_come_in_order_verdict_first(page) -> None:
    order = [page.index(f'<section id="{s}"') for s in
             ("verdict", "sweeps", "roofline", "method", "environment")]
    assert order == sorted(order)
    assert '<section id="seeds">' not in page  # a sweep run, not a seeds run


def _rows(html: str) -> list[list[str]]:
    """The body rows of the tables in `html`, as their cells' text."""
    rows = [re.findall(r"<td[^>]*>(.*?)</td>", r) for r in re.findall(r"<tr>.*?</tr>", html)]
    return [r for r in rows if r]


def test_the_verdict_answers_first_in_one_row_per_sweep_then_details_per_gpu_series(
        page) -> None:
    verdict = page[page.index('id="verdict"'):page.index('id="sweeps"')]
    answer, details = verdict.split("<h3>Per GPU series</h3>")
    ((sweep, said),) = _rows(answer)
    assert sweep == "Square matrix product, float32"
    assert said.startswith("GPU (torch, data on the GPU) faster from n = 1e5; 33.4× [")
    assert "; with copies each call: GPU faster from n = 1e6; " in said
    rows = _rows(details)
    assert len(rows) == 2
    resident = next(r for r in rows if "torch cuda:0 · resident" in r)
    assert resident[1:3] == ["torch cuda:0 · resident", "1e5"]
    assert re.fullmatch(r"33\.4× \[33\.\d, 33\.\d\] at 1e6", resident[3])
    assert resident[4] == "the fastest CPU case"
    e2e = next(r for r in rows if "torch cuda:0 · end-to-end" in r)
    assert e2e[1:3] == ["torch cuda:0 · end-to-end", "1e6"]


def test_a_cases_note_goes_on_its_own_line_under_its_row_and_wraps_there(page) -> None:
    sweep = page[page.index('id="sweeps"'):page.index('id="roofline"')]
    header = re.search(r"<thead><tr>(.*?)</tr></thead>", sweep).group(1)  # type: ignore[union-attr]
    columns = re.findall(r"<th[^>]*>(.*?)</th>", header)
    assert "note" not in columns
    under = re.findall(r'<tr class="noted">.*?</tr>\n<tr class="under"><td colspan="(\d+)">'
                       r"<div>(.*?)</div></td></tr>", sweep, re.S)
    assert under and all(int(span) == len(columns) for span, _ in under)
    assert under[0][1].startswith("memory-bound: 0.25 FLOP/byte")
    assert re.search(r"tr\.under div \{[^}]*overflow-wrap: anywhere", page)


def test_a_number_cells_parts_stack_so_its_column_takes_the_width_of_one() -> None:
    table = view(Table("t", ("size", "time ±CI", "throughput", "GPU vs CPU"), (
        ("1e6", "4.99 µs ±6.2% (unstable, drifting)", "13.8 GFLOP/s, 27.8 GB/s",
         "39.9× [38.9, 41.6] (contended)"),)))
    assert table.rows == (("1e6", "4.99 µs ±6.2%\n(unstable, drifting)",
                           "13.8 GFLOP/s\n27.8 GB/s", "39.9× [38.9, 41.6]\n(contended)"),)
    assert table.wide  # numbers: it may reach past the text's measure
    assert not view(Table("", ("sweep", "answer"), (("a", "b, c (d)"),))).wide
    post = view(Table("", ("post", "it claimed", "correct here", "why"), (
        ("003", "≈14× (1 h 54 min ÷ 7 min 35 s)", "2× [1.98, 2.02]", "a sentence, long"),)))
    assert post.rows[0][1:3] == ("≈14×\n(1 h 54 min ÷ 7 min 35 s)", "2× [1.98, 2.02]")
    assert not post.wide  # its sentences keep to the measure of the page's text


def test_short_notes_stay_in_their_column() -> None:
    short = view(Table("t", ("size", "note"), (("1", "outliers"), ("2", "first call slow"))))
    assert short.columns == ("size", "note") and short.under == ()


def test_every_plot_is_inlined_as_svg_with_its_caption(page) -> None:
    names = [p.name for p in all_plots(gpu_sweep(), CEILINGS)]
    assert re.findall(r'<figure class="plot" data-plot="([^"]+)">\n<svg', page) == names
    assert page.count("<figcaption>") == len(names)


def test_the_page_asks_for_nothing_outside_itself(page) -> None:
    links = re.findall(r'\b(?:src|href)="([^"]*)"', page)
    assert links and all(link.startswith(("#", "data:")) for link in links)
    assert "<script" not in page and "@import" not in page and "url(http" not in page


def test_method_and_environment_say_how_and_where(page) -> None:
    method = page[page.index('id="method"'):page.index('id="environment"')]
    for fact in ("0.5 s of sampling per case", "median-ci", "warm (--cold flushes the caches)",
                 "numpy 2, torch 2", "float32", "<dt>warm-up calls</dt><dd>4</dd>"):
        assert fact in method
    assert "needs 12 GiB, 8 GiB free" in method and ">oom<" in method
    assert "cupy on cuda:0 (every case)" in method and "cupy is not installed" in method
    env = page[page.index('id="environment"'):]
    assert "Test CPU · 2 cores, 4 threads" in env and "Test GPU" in env and "f1ng3rpr1nt" in env


def test_without_ceilings_the_roofline_section_says_how_to_get_them() -> None:
    page = render_html(run(), gpu_sweep())
    section = page[page.index('id="roofline"'):page.index('id="method"')]
    assert "No measured ceilings for this machine: run <code>gpuvs ceilings</code>" in section
    assert 'data-plot="03-roofline-cpu"' in section  # the cases are still placed


def test_values_are_escaped() -> None:
    evil = Measurement(Case("matmul", "correct", "torch", GPU, "float32", 5,
                            (("shape", "square"),)), Status.CRASHED,
                       reason="<script>alert(1)</script> & more")
    page = render_html(run(), [*gpu_sweep(), evil])
    assert "<script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp; more" in page


def test_rendering_is_deterministic(page) -> None:
    assert render_html(run(), gpu_sweep(), CEILINGS) == page
    assert "generated" not in page.lower()


def test_a_seeds_run_shows_the_posts_tables() -> None:
    ms = [dataclasses.replace(measurement("numpy", "cpu", 25600), case=Case(
        "matmul", "correct", "numpy", "cpu", "float64", 25600, (("shape", "seed000"),)))]
    page = render_html(run("seeds"), ms)
    seeds = page[page.index('<section id="seeds">'):page.index('id="sweeps"')]
    assert "seed 000" in seeds and "post claims" in seeds


# The commands. Bad input is one line and exit code 2.

@pytest.fixture
def exported(tmp_path: Path) -> Path:
    path = tmp_path / "synthetic.json"
    write_json(path, run(), gpu_sweep(), CEILINGS)
    return path


def test_report_from_json_keeps_the_ceilings_and_writes_run_id_html(exported, tmp_path,
                                                                    monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = invoke("report", "--from", str(exported))
    assert result.exit_code == 0, result.output
    written = (tmp_path / "20260101-000000-abcd.html").read_text()
    assert written == render_html(run(), gpu_sweep(), CEILINGS)


def test_plot_writes_every_plot_as_png(exported, tmp_path) -> None:
    folder = tmp_path / "slides"
    result = invoke("plot", "--from", str(exported), "--png", str(folder))
    assert result.exit_code == 0, result.output
    names = [p.name for p in all_plots(gpu_sweep(), CEILINGS)]
    assert sorted(f.stem for f in folder.iterdir()) == names
    assert all(f.read_bytes().startswith(b"\x89PNG") for f in folder.iterdir())


def test_a_document_round_trips_exactly(exported) -> None:
    again_run, again_ms, again_ceilings = load_json(exported)
    assert again_run == run() and again_ms == gpu_sweep() and again_ceilings == list(CEILINGS)
    assert run_document(again_run, again_ms, again_ceilings) == json.loads(exported.read_text())


def _write(path: Path, text: str) -> str:
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize(("args", "message"), [
    (["report", "nope"], "unknown run 'nope'"),
    (["plot", "nope"], "unknown run 'nope'"),
    (["report"], "give a RUN_ID or --from RUN.json (one of the two)"),
    (["report", "latest", "--from", "x.json"], "give a RUN_ID or --from RUN.json"),
    (["report", "--from", "{tmp}/missing.json"], "cannot read {tmp}/missing.json: No such file"),
    (["report", "--from", "{tmp}"], "cannot read {tmp}: Is a directory"),
    (["report", "--from", "{bad}"], "{bad} is not JSON: Expecting property name"),
    (["report", "--from", "{list}"], "not a gpuvs run export: expected a JSON object"),
    (["plot", "--from", "{empty}"], "unsupported format_version None; this gpuvs reads 1"),
    (["report", "--from", "{partial}"], "not a gpuvs run export: it has no 'environment'"),
    (["report", "--from", "{good}", "-o", "{blocked}/r.html"],
     "cannot write the report to {blocked}/r.html: {blocked} is a file, not a directory"),
    (["report", "--from", "{good}", "-o", "{tmp}"], "{tmp} is a directory; give a file path"),
    (["plot", "--from", "{good}", "--png", "{blocked}/d"], "cannot write the plot to {blocked}/d/"),
])
def test_bad_input_is_one_line_and_exit_2(args, message, tmp_path, db, exported) -> None:
    paths = {"tmp": str(tmp_path), "good": str(exported),
             "bad": _write(tmp_path / "bad.json", "{oops"),
             "list": _write(tmp_path / "list.json", "[]"),
             "empty": _write(tmp_path / "empty.json", "{}"),
             "partial": _write(tmp_path / "partial.json",
                               '{"format_version": 1, "run": {}, "measurements": []}'),
             "blocked": _write(tmp_path / "a-file", "")}
    open_store(db).close()  # a store without the run asked for
    result = invoke(*(a.format(**paths) for a in args), "--db", db)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1, result.output
    assert message.format(**paths) in " ".join(result.output.split())


# A real run (tests/report/conftest.py): numpy and torch on this CPU.

def test_run_report_writes_the_same_page_as_the_report_command(real_run: RealRun,
                                                              tmp_path) -> None:
    again = tmp_path / "again.html"
    result = invoke("report", real_run.run_id, "--db", real_run.db, "-o", str(again))
    assert result.exit_code == 0, result.output
    assert again.read_bytes() == real_run.report.read_bytes()
    assert f"<title>gpuvs report · run {real_run.run_id}</title>" in again.read_text()


def test_export_then_report_from_json_rebuilds_the_identical_page(real_run: RealRun,
                                                                  tmp_path) -> None:
    exported, page = tmp_path / "exported.json", tmp_path / "from-json.html"
    assert invoke("export", real_run.run_id, "--db", real_run.db, "-o",
                  str(exported)).exit_code == 0
    result = invoke("report", "--from", str(exported), "-o", str(page))
    assert result.exit_code == 0, result.output
    assert page.read_bytes() == real_run.report.read_bytes()
    from_run_json = tmp_path / "from-run-json.html"  # `gpuvs run --json` writes the same
    assert invoke("report", "--from", str(real_run.json), "-o",
                  str(from_run_json)).exit_code == 0
    assert from_run_json.read_bytes() == real_run.report.read_bytes()


def test_plot_png_of_a_real_run(real_run: RealRun, tmp_path) -> None:
    result = invoke("plot", real_run.run_id, "--db", real_run.db, "--png", str(tmp_path))
    assert result.exit_code == 0, result.output
    run_, ms, ceilings = load_json(real_run.json)
    expected = {f"{p.name}.png" for p in all_plots(ms, ceilings)}
    assert {f.name for f in tmp_path.iterdir()} == expected
    assert len(expected) == 11  # 5 sweeps × (time, speedup) + the CPU's roofline


@pytest.mark.usefixtures("worker_env")
def test_a_report_path_under_a_file_fails_before_the_run(db, tmp_path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    result = invoke("run", "-w", "test_spin", "-s", "100", "-b", "numpy", "--budget", "0.05",
                    "--db", db, "--report", str(blocker / "r.html"))
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert result.output.strip() == (f"error: cannot write {blocker}/r.html: {blocker} is a "
                                     "file, not a directory")


@pytest.mark.skipif(os.geteuid() != 0, reason="root alone passes the up-front check on /proc")
def test_a_report_that_fails_after_the_run_keeps_the_run_and_says_how_to_get_the_page(
        db, tmp_path) -> None:
    result = invoke("run", "-w", "test_spin", "-s", "100", "-b", "numpy", "--budget", "0.05",
                    "--db", db, "--report", "/proc/gpuvs-report.html")
    assert result.exit_code == 2 and "Traceback" not in result.output
    run_id = run_id_of(result.output)
    last = result.output.strip().splitlines()[-1]
    assert "cannot write the report to /proc/gpuvs-report.html" in last
    assert f"the run is saved: `gpuvs report {run_id} -o PATH` writes its report" in last
    assert invoke("report", run_id, "--db", db, "-o", str(tmp_path / "r.html")).exit_code == 0


