"""What the report's plots show (as data), and that they draw deterministically."""

from __future__ import annotations

import math
import re
from dataclasses import replace

import pytest
from tests.report.samples import CEILINGS, SIZES, gpu_sweep, measurement

from gpuvs.model import Case, Measurement, Status
from gpuvs.report.draw import FIGSIZE, PNG_DPI, ROOFLINE_FIGSIZE, onto, to_png, to_svg
from gpuvs.report.plots import Plot, Series, all_plots

SWEEP = "Square matrix product, float32"


def by_kind(plots):
    """The first plot of each kind: time, speedup, roofline."""
    found = {}
    for p in plots:
        found.setdefault(p.name.split("-")[1], p)
    return found


def test_a_sweep_gets_time_and_speedup_plots_and_each_device_a_roofline() -> None:
    plots = all_plots(gpu_sweep(), CEILINGS)
    assert [p.name for p in plots] == [
        "01-time-square-matrix-product-float32",
        "02-speedup-square-matrix-product-float32",
        "03-roofline-cpu", "04-roofline-cuda-0"]
    assert [p.section for p in plots] == [SWEEP, SWEEP, "roofline", "roofline"]


def test_the_time_plot_has_one_line_per_series_with_ci_bands_and_the_crossovers_marked(
) -> None:
    time = by_kind(all_plots(gpu_sweep(), CEILINGS))["time"]
    lines = {s.label: s for s in time.series}
    assert set(lines) == {"numpy cpu", "torch cuda:0 · resident", "torch cuda:0 · end-to-end"}
    assert lines["torch cuda:0 · end-to-end"].style == "dashed"
    assert lines["torch cuda:0 · resident"].style == "solid"
    cpu = lines["numpy cpu"]
    assert cpu.x == tuple(float(n) for n in SIZES)  # the OOM case adds no point
    assert all(lo <= y <= hi for lo, y, hi in zip(cpu.low, cpu.y, cpu.high, strict=True))
    assert cpu.y[0] == measurement("numpy", "cpu", SIZES[0]).summary.median
    assert {(m.x, m.label) for m in time.marks} == {
        (1e5, "torch cuda:0 · resident faster from 1e5"),
        (1e6, "torch cuda:0 · end-to-end faster from 1e6")}
    resident = lines["torch cuda:0 · resident"]
    ring = next(m for m in time.marks if m.label.startswith("torch cuda:0 · resident"))
    assert ring.y == resident.y[resident.x.index(1e5)]  # on the series' own point
    assert time.title == "time per call" and time.subject == SWEEP
    assert "dashed lines pay the host↔device copies" in time.caption
    assert "A ring marks the size from which" in time.caption


def test_the_speedup_plot_sets_each_gpu_series_against_the_fastest_cpu_with_the_1x_line(
) -> None:
    speedup = by_kind(all_plots(gpu_sweep(), CEILINGS))["speedup"]
    assert speedup.unity and speedup.yunit == "×"
    resident = next(s for s in speedup.series if s.label == "torch cuda:0 · resident")
    assert resident.x == tuple(float(n) for n in SIZES)
    assert resident.y[-1] == (1e-6 + 1e6 * 1e-9) / (2e-5 + 1e6 * 1e-11)  # ratio of medians
    assert resident.low[0] < resident.y[0] < resident.high[0] < 1  # the CPU wins at 1e3


def test_without_a_gpu_cpu_backends_are_set_against_numpy() -> None:
    ms = [measurement(b, "cpu", n) for n in SIZES for b in ("numpy", "torch")]
    speedup = by_kind(all_plots(ms))["speedup"]
    assert (speedup.title, speedup.subject) == ("speedup over numpy cpu", SWEEP)
    assert [s.label for s in speedup.series] == ["torch cpu"]
    assert speedup.marks == () and "ring" not in speedup.caption


def test_a_cpu_sweeps_caption_describes_only_the_lines_it_has() -> None:
    ms = [measurement(b, "cpu", n) for n in SIZES for b in ("numpy", "torch")]
    time = by_kind(all_plots(ms))["time"]
    assert time.caption == ("Median time per call with its 95 % CI band, one line per "
                            "backend and device.")


def test_the_x_axis_says_what_size_counts_in_each_sweep() -> None:
    ms = [measurement(b, "cpu", n) for n in SIZES for b in ("numpy", "torch")]
    elementwise = [replace(m, case=replace(m.case, workload="elementwise", params=(
        ("op", "scale"),))) for m in ms]
    matmul, scale = all_plots(ms)[:2], all_plots(elementwise)[:2]
    assert {p.xlabel for p in matmul} == {"matrix size n (n×n×n)"}
    assert {p.xlabel for p in scale} == {"elements"}
    assert scale[0].subject == "Elementwise x·5 in place, float32"


def test_a_sweep_with_one_series_has_no_speedup_plot() -> None:
    plots = all_plots([measurement("numpy", "cpu", n) for n in SIZES])
    assert [p.name.split("-")[1] for p in plots] == ["time", "roofline"]


def test_the_roofline_places_cases_by_intensity_under_the_measured_roofs() -> None:
    roofline = by_kind(all_plots(gpu_sweep(), CEILINGS))["roofline"]
    assert roofline.title == "roofline · cpu"
    (roof,) = [s for s in roofline.series if s.style == "ceiling"]
    assert roof.label == "float32 peak 100 GFLOP/s, bandwidth 20 GB/s"
    assert all(math.isclose(y, min(1e11, 2e10 * x)) for x, y in zip(roof.x, roof.y, strict=True))
    (cases,) = [s for s in roofline.series if s.style == "points"]
    assert cases.x == (0.25,) * len(SIZES)  # 2n FLOP over 8n bytes
    assert cases.y[-1] == 2e6 / measurement("numpy", "cpu", 1_000_000).summary.median
    assert "grey roofs are this machine's measured ceilings" in roofline.caption


def test_without_ceilings_the_roofline_says_so_and_leaves_out_cases_without_flops() -> None:
    no_flops = Measurement(Case("elementwise", "correct", "numpy", "cpu", "float32", 10,
                                (("op", "ones"),)), Status.OK, samples=(1e-6,) * 5,
                           counters={"flops": 0.0, "bytes_moved": 40.0})
    roofline = by_kind(all_plots([measurement("numpy", "cpu", 1000), no_flops]))["roofline"]
    assert all(s.style == "points" for s in roofline.series)
    assert roofline.caption.startswith("No measured ceilings for cpu, so no roofs")
    assert "1 case(s) without arithmetic or bytes counted are not shown" in roofline.caption


def test_svg_is_deterministic_inline_ready_and_its_ids_belong_to_its_plot() -> None:
    plots = all_plots(gpu_sweep(), CEILINGS)
    svgs = [to_svg(p) for p in plots]
    assert svgs == [to_svg(p) for p in plots]
    for plot, svg in zip(plots, svgs, strict=True):
        assert svg.startswith("<svg") and svg.rstrip().endswith("</svg>")
        assert f'id="{plot.name}"' in svg.split(">", 1)[0]
        assert "<dc:date>" not in svg
        ids = re.findall(r'\bid="([^"]+)"', svg)
        assert ids and all(i == plot.name or i.startswith(f"{plot.name}-") for i in ids)
        refs = re.findall(r'href="#([^"]+)"|url\(#([^)]+)\)', svg)
        assert all(any(r) and set(filter(None, r)) <= set(ids) for r in refs)


def test_png_is_a_png() -> None:
    png = to_png(all_plots(gpu_sweep(), CEILINGS)[0])
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 10_000


def _width(png: bytes) -> int:
    return int.from_bytes(png[16:20], "big")  # the IHDR chunk's width


def _height(png: bytes) -> int:
    return int.from_bytes(png[20:24], "big")


def _zigzag() -> Plot:
    """Two series that cross the whole axes back and forth: no corner is free of data."""
    x = tuple(float(2**i) for i in range(12))
    up, down = tuple(10.0 ** (i % 2) for i in range(12)), tuple(10.0 ** (1 - i % 2)
                                                                 for i in range(12))
    return Plot("zigzag", "zigzag", "zigzag", "size", "time", (
        Series("one", x, up), Series("two", x, down, color="#E69F00")))


def test_a_legend_of_one_or_two_series_sits_inside_only_where_it_hides_no_data() -> None:
    pytest.importorskip("matplotlib")
    cpu_sweep = [measurement(b, "cpu", n) for n in SIZES for b in ("numpy", "torch")]
    time = all_plots(cpu_sweep)[0]
    png = to_png(time)
    assert len(time.series) == 2 and (_width(png), _height(png)) == (
        FIGSIZE[0] * PNG_DPI, FIGSIZE[1] * PNG_DPI)
    moved = to_png(_zigzag())  # below the axes, on a taller figure of the same width
    assert _width(moved) == FIGSIZE[0] * PNG_DPI and _height(moved) > FIGSIZE[1] * PNG_DPI


def test_many_series_put_the_legend_below_the_axes_and_a_roofline_beside_them() -> None:
    pytest.importorskip("matplotlib")
    from gpuvs.report.draw import figure
    time, _, roofline, _ = all_plots(gpu_sweep(), CEILINGS)
    fig = figure(time)  # three series: below
    fig.draw_without_rendering()
    (legend,) = fig.legends
    assert legend.get_window_extent().y1 <= fig.axes[0].get_window_extent().y0
    assert _width(to_png(roofline)) == ROOFLINE_FIGSIZE[0] * PNG_DPI


def test_a_png_names_what_the_plot_is_of_and_the_page_leaves_that_to_its_heading() -> None:
    pytest.importorskip("matplotlib")
    from gpuvs.report.draw import figure
    time = all_plots(gpu_sweep(), CEILINGS)[0]
    assert figure(time).axes[0].get_title(loc="left") == f"time per call\n{SWEEP}"
    # The page's SVG draws no subject: another one changes not a byte of it.
    assert to_svg(time) == to_svg(replace(time, subject="another sweep"))


def test_on_a_callers_axes_a_legend_that_would_hide_data_goes_beside_them() -> None:
    pytest.importorskip("matplotlib")
    from matplotlib.figure import Figure

    ax = Figure(layout="constrained").add_subplot()
    onto(_zigzag(), ax)
    ax.figure.draw_without_rendering()
    assert ax.get_legend().get_window_extent().x0 >= ax.get_window_extent().x1


def test_an_axis_spanning_less_than_a_decade_labels_more_than_its_power_of_ten() -> None:
    pytest.importorskip("matplotlib")
    from gpuvs.report.draw import figure
    narrow = Plot("narrow", "narrow", "narrow", "size", "speedup", (
        Series("torch cpu", (64.0, 256.0, 1024.0), (0.96, 0.91, 0.86)),), unity=True, yunit="×")
    ax = figure(narrow).axes[0]
    ax.figure.draw_without_rendering()
    lo, hi = ax.get_ylim()
    shown = [t.get_text() for t in ax.get_yticklabels() if lo <= t.get_position()[1] <= hi]
    assert shown == ["0.9×", "1×"]
