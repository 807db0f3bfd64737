"""The history page's plots as data: cases in the order of their sizes as numbers, one
label per run that tells it from the others, and runs on another environment never
joined to these by a line or a step."""

from __future__ import annotations

from dataclasses import replace

from tests.report.samples import run

from gpuvs.model import Case, Environment, Measurement, Run, Status
from gpuvs.report.pages import history_plots, render_history, x_labels


def _run(run_id: str, started: str, fingerprint: str = "f1ng3rpr1nt") -> Run:
    base = run(run_id=run_id)
    return replace(base, started_at=started,
                   environment=Environment(fingerprint, base.environment.facts))


def _m(size: int, seconds: float) -> Measurement:
    return Measurement(Case("matmul", "correct", "numpy", "cpu", "float32", size,
                            (("shape", "square"),)), Status.OK,
                       samples=tuple(seconds * (1 + 0.001 * k) for k in range(-5, 6)))


def test_runs_started_in_one_minute_are_labelled_to_the_second_and_then_by_id() -> None:
    runs = [_run("20260101-000000-aaaa", "2026-01-01T10:00:05+0000"),
            _run("20260101-000000-bbbb", "2026-01-01T10:00:41+0000")]
    assert x_labels(runs, "date") == ("2026-01-01 10:00:05", "2026-01-01 10:00:41")
    same = [_run("20260101-000000-aaaa", "2026-01-01T10:00:05+0000"),
            _run("20260101-000000-bbbb", "2026-01-01T10:00:05+0000")]
    assert x_labels(same, "date") == ("2026-01-01 10:00:05 · aaaa", "2026-01-01 10:00:05 · bbbb")
    apart = [_run("20260101-000000-aaaa", "2026-01-01T10:00:05+0000"),
             _run("20260101-000000-bbbb", "2026-01-01T11:30:00+0000")]
    assert x_labels(apart, "date") == ("2026-01-01 10:00", "2026-01-01 11:30")


def test_cases_come_in_the_order_of_their_sizes_as_numbers() -> None:
    order = [(_run("20260101-000000-aaaa", "2026-01-01T10:00:00+0000"),
              [_m(1024, 1e-2), _m(256, 1e-4), _m(4096, 1.0)])]
    plots, _ = history_plots(order, "date", None)
    assert [p.title.rsplit("/", 1)[-1] for p in plots] == [
        "256,shape=square", "1024,shape=square", "4096,shape=square"]


def test_each_environment_is_a_line_of_its_own_and_no_step_is_counted_across_two() -> None:
    a1 = _run("20260101-000000-aaaa", "2026-01-01T10:00:00+0000", "machine-a")
    b1 = _run("20260101-000000-bbbb", "2026-01-01T11:00:00+0000", "machine-b")
    a2 = _run("20260101-000000-cccc", "2026-01-01T12:00:00+0000", "machine-a")
    a3 = _run("20260101-000000-dddd", "2026-01-01T13:00:00+0000", "machine-a")
    order = [(a1, [_m(256, 1e-3)]), (b1, [_m(256, 5e-3)]), (a2, [_m(256, 1e-3)]),
             (a3, [_m(256, 2e-3)])]
    (plot,), steps = history_plots(order, "date", None)
    assert [(s.label, s.x) for s in plot.series] == [
        ("environment machine-a", (0.0, 2.0, 3.0)), ("environment machine-b", (1.0,))]
    assert plot.series[0].color != plot.series[1].color
    assert [(a, b, round(x, 3)) for _, a, b, x in steps] == [
        ("2026-01-01 12:00", "2026-01-01 13:00", 2.0)]  # not a1 → b1, nor b1 → a2
    assert "one line per environment fingerprint" in plot.caption


def test_the_page_names_each_environment_it_draws() -> None:
    order = [(_run("20260101-000000-aaaa", "2026-01-01T10:00:00+0000", "machine-a"),
              [_m(256, 1e-3)]),
             (_run("20260101-000000-bbbb", "2026-01-01T11:00:00+0000", "machine-b"),
              [_m(256, 1e-3)])]
    page = render_history(list(reversed(order)), "date", None)
    assert "<dt>environments</dt><dd>2: machine-a (" in page and "; machine-b (" in page


def _wide(size: int, seconds: float) -> Measurement:
    """A median with a wide CI (1.5 ms: [0.66, 2.22] ms): samples from 0.2× to 1.8× of it."""
    return Measurement(Case("matmul", "correct", "numpy", "cpu", "float32", size,
                            (("shape", "square"),)), Status.OK,
                       samples=tuple(seconds * (0.2 + 0.08 * k) for k in range(21)))


def test_a_step_is_claimed_only_between_intervals_apart_and_runs_not_contended() -> None:
    """Issue 42: the history marked a ×5.09 step on one run measured under contention."""
    from gpuvs.model import Caveat
    times = [f"2026-01-01T1{h}:00:00+0000" for h in range(5)]
    runs = [_run(f"20260101-000000-000{h}", t) for h, t in enumerate(times)]
    contended = replace(_m(256, 5.09e-3), caveats=(Caveat.CONTENDED,))
    order = [(runs[0], [_m(256, 1e-3)]), (runs[1], [contended]), (runs[2], [_m(256, 1e-3)]),
             (runs[3], [_wide(256, 1.5e-3)]), (runs[4], [_m(256, 2e-3)])]
    _, steps = history_plots(order, "date", None)
    # 0 → 1 and 1 → 2 touch the contended run; 2 → 3 and 3 → 4 overlap the wide interval
    assert steps == []
    order[3] = (runs[3], [_m(256, 1e-3)])
    _, steps = history_plots(order, "date", None)
    assert [(b, round(x, 3)) for _, _, b, x in steps] == [("2026-01-01 14:00", 2.0)]
