"""The result object of `gpuvs.compare`, on synthetic measurements with a GPU series (so
the speedups, crossover, summary and explanation are tested exactly on a CPU machine)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from gpuvs.analysis.speedup import Speedup
from gpuvs.model import Case, Measurement, Status
from gpuvs.report.plots import PALETTE
from gpuvs.yours.comparison import Comparison

SIZES = (10, 100, 1000, 10000)


def _m(device: str, size: int, median: float, data: str = "resident",
       status: Status = Status.OK, reason: str = "") -> Measurement:
    params = (("data", "end_to_end"),) if data == "end_to_end" else ()
    case = Case("yours:f", "correct", "torch", device, "float32", size, params)
    if status is not Status.OK:
        return Measurement(case, status, reason)
    rng = np.random.default_rng(size)
    samples = tuple(median * (1 + 0.002 * rng.standard_normal(30)))
    return Measurement(case, Status.OK, samples=samples, wall_samples=samples,
                       first_call_s=median * 100, timer="cuda_events",
                       counters={"rel_error": 1e-7} if device != "cpu" else {})


def sweep() -> Comparison:
    ms = []
    for n in SIZES:
        ms += [_m("cpu", n, 1e-6 * n), _m("cuda", n, 1e-4 + 1e-8 * n),
               _m("cuda", n, 2e-4 + 2e-6 * n, "end_to_end")]
    return Comparison("f", ms, ("cpu", "cuda"))


def test_speedups_carry_a_ci_and_a_verdict() -> None:
    c = sweep()
    s = c.speedup
    assert isinstance(s, Speedup) and s.size == 10000 and s.data == "resident"
    assert s.low < s.estimate < s.high and s.verdict == "gpu"
    assert float(s) == pytest.approx(1e-2 / (1e-4 + 1e-4), rel=0.02)
    assert c.speedup_end_to_end is not None and c.speedup_end_to_end.verdict == "cpu"
    assert str(s).endswith(": GPU faster")


def test_the_crossover_is_where_the_gpu_ci_stays_above_one() -> None:
    c = sweep()
    assert c.crossover == 1000
    by_data = {x.data: x for x in c.crossovers}
    assert by_data["end_to_end"].size is None


def test_the_summary_reads_as_a_table_then_the_answers() -> None:
    text = repr(sweep())
    lines = text.splitlines()
    assert lines[0] == "gpuvs.compare: f · float32 · sizes 10–1e4 (4)"
    assert any(line.split()[:3] == ["1e4", "cuda", "resident"] for line in lines)
    assert "outputs agree with cpu's (largest relative error 1.0e-07)" in text
    assert "cuda resident: GPU faster from 1000; " in text
    assert "cuda end_to_end: GPU never faster in this range" in text


def test_failed_and_skipped_cases_are_named_with_their_reasons() -> None:
    ms = [_m("cpu", 10, 1e-5),
          _m("cuda:1", 10, 0, status=Status.UNAVAILABLE, reason="no device cuda:1"),
          _m("cuda", 10, 0, status=Status.WRONG_RESULT, reason="output on cuda differs"),
          _m("cuda", 10, 0, "end_to_end", Status.SKIPPED, "not measured")]
    c = Comparison("f", ms, ("cpu", "cuda", "cuda:1"))
    text = repr(c)
    assert "cuda:1: skipped: no device cuda:1" in text
    assert "cuda resident: wrong_result: output on cuda differs" in text
    assert c.failed == (ms[2],) and c.speedup is None


def test_json_has_everything_to_redraw_it() -> None:
    doc = json.loads(sweep().to_json())
    assert len(doc["measurements"]) == 12
    assert {s["verdict"] for s in doc["speedups"]} >= {"gpu", "cpu"}
    resident = next(x for x in doc["crossovers"] if x["data"] == "resident")
    assert resident["size"] == 1000 and len(resident["points"]) == 4


def test_explain_names_transfer_bound_end_to_end_cases() -> None:
    text = str(sweep().explain())
    assert "at size 1e4, cuda end_to_end" in text
    assert "transfer-bound" in text


def test_the_plot_of_a_sweep_is_drawn_as_the_reports_plots_are() -> None:
    pytest.importorskip("matplotlib")
    ax = sweep().plot().axes[0]
    lines = {line.get_label(): line for line in ax.get_lines()}
    assert list(lines)[:3] == ["torch cpu", "torch cuda · end-to-end", "torch cuda · resident"]
    assert lines["torch cpu"].get_color() == PALETTE[0]
    assert lines["torch cuda · resident"].get_color() == PALETTE[1]
    assert lines["torch cuda · end-to-end"].get_linestyle() == "--"  # pays the copies
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("size", "time per call (median)")
    ax.figure.draw_without_rendering()
    assert {t.get_text() for t in ax.get_yticklabels()} >= {"100 µs", "1 ms"}


def test_on_a_callers_axes_the_plot_keeps_its_legend_off_the_data() -> None:
    pytest.importorskip("matplotlib")
    from matplotlib.figure import Figure

    fig = Figure(layout="constrained")
    assert sweep().plot(fig.add_subplot()) is fig
    fig.draw_without_rendering()
    assert fig.axes[0].get_legend().get_window_extent().x0 >= fig.axes[0].get_window_extent().x1


def test_the_plot_of_one_size_is_a_point_per_case_with_its_ci_named_on_the_x_axis() -> None:
    pytest.importorskip("matplotlib")
    one = Comparison("f", [_m("cpu", 1000, 1e-3), _m("cuda", 1000, 1e-4),
                           _m("cuda", 1000, 3e-4, "end_to_end")], ("cpu", "cuda"))
    ax = one.plot().axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == [
        "torch cpu", "torch cuda · resident", "torch cuda · end-to-end"]
    assert ax.get_legend() is None and ax.get_title(loc="left").startswith(
        "time per call at size 1000")


def test_a_notebook_shows_the_answer_then_the_tables_as_html() -> None:
    html = sweep()._repr_html_()
    assert html.startswith("<p><b>gpuvs.compare: f")
    assert "<table>" in html and "<th" in html and "torch cuda" in html
    assert "<script" not in html


def test_to_pandas_has_one_row_per_case_with_the_csv_columns() -> None:
    pytest.importorskip("pandas")
    r = sweep()
    frame = r.to_pandas()
    assert len(frame) == len(r.measurements)
    assert {"backend", "device", "size", "median_s", "ci_low_s", "status"} <= set(frame.columns)
    assert sorted(frame["size"].unique()) == list(SIZES)


def test_its_json_is_the_one_run_format_that_report_and_compare_read(tmp_path) -> None:
    """`Comparison.to_json` writes a run export (format_version, run, environment,
    measurements), so `gpuvs report --from` draws it like any run's."""
    from typer.testing import CliRunner

    from gpuvs.cli import app
    from gpuvs.store.export import load_json

    path = tmp_path / "mine.json"
    path.write_text(sweep().to_json())
    run, measurements, _ = load_json(path)
    assert run.kind.value == "yours" and len(measurements) == 12
    page = tmp_path / "mine.html"
    result = CliRunner().invoke(app, ["report", "--from", str(path), "-o", str(page)],
                                env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert page.stat().st_size > 0
