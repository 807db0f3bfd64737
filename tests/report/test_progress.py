"""What a run shows as cases finish, off a terminal: one flushed line each, and a time
left paced by the cases measured so far — not by the first one, which paid its worker's
start-up and, with passes, every earlier pass."""

from __future__ import annotations

import io

from rich.console import Console

from gpuvs.model import Case, Measurement, Status
from gpuvs.report import progress


def _ok(size: int) -> Measurement:
    return Measurement(Case("matmul", "correct", "numpy", "cpu", "float32", size),
                       Status.OK, samples=(1e-3,) * 20)


def test_the_time_left_is_paced_by_the_cases_after_the_first(monkeypatch) -> None:
    clock = iter([100.0, 101.0, 102.0, 103.0])  # the first case came 100 s in
    monkeypatch.setattr("time.monotonic", lambda: next(clock))
    buffer = io.StringIO()
    advance = progress._case_lines(6, Console(file=buffer, width=10_000, soft_wrap=True))
    gone = Measurement(Case("matmul", "correct", "cupy", "cuda:0", "float32", 64),
                       Status.UNAVAILABLE, reason="no CUDA device")
    advance(gone)
    advance(Measurement(gone.case, Status.UNAVAILABLE, reason="no CUDA device"))
    for size in (64, 128, 256, 512):
        advance(_ok(size))
    lines = buffer.getvalue().splitlines()
    assert lines[0] == ("[1/6] cupy on cuda:0 unavailable: no CUDA device (its other "
                        "cases are not listed)")
    assert len(lines) == 5  # the second unavailable case is not listed again
    assert lines[1].startswith("[3/6] matmul/correct/numpy/cpu/float32/64 ok 1 ms ±")
    assert "left" not in lines[1]  # one case sets no pace
    assert lines[2].endswith("(about 0:02 left)")  # 1 s a case, 2 cases left
    assert lines[3].endswith("(about 0:01 left)")
    assert "left" not in lines[4]  # the last one


def test_the_runners_time_left_is_shown_where_it_gives_one() -> None:
    buffer = io.StringIO()
    advance = progress._case_lines(3, Console(file=buffer, width=10_000, soft_wrap=True))
    advance(_ok(64), 95.0)  # the runner paces each pass apart: its estimate is shown
    advance(_ok(128), None)  # a producer without one: the pace of the cases so far
    advance(_ok(256), 3.0)  # the last case: nothing left to estimate
    lines = buffer.getvalue().splitlines()
    assert lines[0].endswith("(about 1:35 left)")
    assert lines[1].endswith("(about 0:00 left)")  # one case, microseconds after the first
    assert "left" not in lines[2]
