"""`benchmarks/repeat_agreement.py`, which judges issue 40's "the same answer every time":
two runs' medians each inside the other's interval, and their answers alike."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from tests.helpers import benchmark

from gpuvs.model import Case, Measurement, Status
from gpuvs.workloads.calibration import probe

NOISE = 1 + np.random.default_rng(51).normal(0, 0.002, 60)  # one pattern: a repeat's own


def _script() -> Any:
    return benchmark("repeat_agreement")


def _m(size: int, median: float, variant: str = "correct") -> Measurement:
    samples = tuple(float(x) for x in median * NOISE)
    return Measurement(Case("w", variant, "numpy", "cpu", "float32", size), Status.OK,
                       samples=samples)


def test_two_runs_are_counted_both_ways_without_probes_or_replays() -> None:
    bench = _script()
    a = [_m(1, 1e-3), _m(2, 2e-3), _m(3, 3e-3), _m(4, 4e-3), _m(5, 5e-3),
         _m(6, 6e-3, "as_written")]
    b = [_m(1, 1e-3), _m(2, 2e-3), _m(3, 3e-3), _m(4, 4.8e-3), _m(5, 6.5e-3),
         _m(6, 9e-3, "as_written")]
    probes = [Measurement(probe("launch", "numpy", "cpu"), Status.OK, samples=(1e-6,) * 9)]
    found = bench.agreement(a + probes, b)
    assert found["cases"] == 5  # the replay and the probe left out
    assert found["both_ways"] == found["b_in_a"] == found["a_in_b"] == 3  # not the two moved
    assert found["median_apart"] == 0.0
    assert abs(found["p90_apart"] - 0.2) < 1e-9  # of 0, 0, 0, 0.2, 0.3


def test_an_answer_is_the_same_with_one_winner_and_crossovers_a_step_apart() -> None:
    same = _script().same_answer
    sizes = (10, 100, 1000, 10_000)
    assert same(("gpu", 100, sizes), ("gpu", 1000, sizes))
    assert not same(("gpu", 100, sizes), ("gpu", 10_000, sizes))
    assert not same(("gpu", 100, sizes), ("tie", 100, sizes))
    assert not same(("gpu", None, sizes), ("gpu", 100, sizes))
    assert same(("cpu", None, sizes), ("cpu", None, sizes))


def test_files_that_are_no_exports_are_one_line_and_exit_2(tmp_path: Path, capsys: Any) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"a": 1}')
    assert _script().main([str(bad), str(tmp_path / "missing.json")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1


def test_the_committed_gzipped_pair_reads_as_docs_accuracy_reports_it(capsys: Any) -> None:
    """docs/runs keeps exports gzipped, as `gpuvs check` reads them; the script read only
    plain JSON, so the committed H200 pair could not be re-read as the docs report it."""
    runs = Path(__file__).resolve().parents[1] / "docs" / "runs"
    assert _script().main([str(runs / "seeds-h200-a.json.gz"),
                           str(runs / "seeds-h200-b.json.gz")]) == 0
    out = capsys.readouterr().out
    assert "B's median in A's interval: 149 of 160 (93%)" in out
    assert "both ways: 142 of 160 (89%)" in out
    # with speedup intervals that hold a repeat (docs/accuracy.md, "A speedup's interval
    # did not hold a repeat's speedup"), seed 004's naive Jacobian is a winner in A and
    # no clear winner in B; under the old intervals it read 10 of 10
    assert "answers (winner at the largest size; crossover within one size step): 9 of 10" in out
    assert "jacobian/correct/float32 torch cuda:0 resident: A cpu from None, B tie" in out
