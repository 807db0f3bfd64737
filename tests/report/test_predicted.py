"""Predicted series drawn apart from measured ones: dashed and hollow, labelled
predicted, on a page that says which numbers are which."""

from __future__ import annotations

from pathlib import Path

from tests.predicting.samples import measured, synthetic

from gpuvs.model import Case
from gpuvs.predicting import forecast, profile
from gpuvs.predicting.forecast import Target
from gpuvs.report.draw import to_svg
from gpuvs.report.predicted import forecast_tables, predicted_plots, render_forecast


def sweep(tmp_path: Path) -> tuple[Target, list, list]:
    t = Target(profile.load(str(profile.save(synthetic(), tmp_path))), None)
    sizes = (1000, 100_000, 10_000_000)
    cpu = [measured(Case("elementwise", "correct", "numpy", "cpu", "float32", n,
                         (("op", "scale"),)), n * 1e-9) for n in sizes]
    gpu = [Case("elementwise", "correct", "torch", "cuda:0", "float32", n, params)
           for n in sizes for params in ((("op", "scale"),),
                                         (("data", "end_to_end"), ("op", "scale")))]
    return t, cpu, forecast.series(cpu, forecast.predict_cases(t, gpu))


def test_measured_cpu_lines_are_solid_predicted_gpu_lines_dashed_and_labelled(
        tmp_path: Path) -> None:
    _, cpu, found = sweep(tmp_path)
    [plot] = predicted_plots(cpu, found)
    styles = {s.label: (s.style, s.marker) for s in plot.series}
    assert styles == {"numpy cpu · measured": ("solid", "o"),
                      "torch cuda:0 · resident · predicted": ("predicted", "o"),
                      "torch cuda:0 · end-to-end · predicted": ("predicted", "s")}
    assert all(not s.low for s in plot.series if s.style == "predicted")  # not validated
    assert "stroke-dasharray" in to_svg(plot)


def test_the_page_and_tables_keep_predicted_and_measured_apart(tmp_path: Path) -> None:
    t, cpu, found = sweep(tmp_path)
    tables = forecast_tables(found, t)
    assert tables[0].columns[3:6] == ("CPU measured (fastest)", "GPU predicted [90 % interval]",
                                      "speedup predicted")
    assert tables[-1].title == "predicted crossovers · syn"
    page = render_forecast(t, tables, predicted_plots(cpu, found))
    assert "<dt>GPU numbers</dt><dd>predicted</dd>" in page
    assert "<dt>CPU numbers</dt><dd>measured here</dd>" in page
