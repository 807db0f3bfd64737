"""Calibration, intervals and confidence come from a validation run's residuals, and
from nothing else: without them a prediction has no interval and says so."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from tests.predicting.samples import synthetic

from gpuvs.errors import UsageError
from gpuvs.predicting import pricing, profile
from gpuvs.predicting.forecast import Target
from gpuvs.predicting.residuals import Residual, Residuals, beside, conformal, of_points, save
from gpuvs.predicting.work import Work

LAUNCH = pricing.estimate(Work(bytes=1e3, launches=1), synthetic())   # 10 µs, launch-bound


def residuals(points: list[tuple[str, str, str, float]]) -> Residuals:
    return of_points("syn", ["run-a"], "2026-11-26", [Residual(*p) for p in points])


def steady(workload: str, ratio: float, series: int = 6, regime: str = "launch"
           ) -> list[tuple[str, str, str, float]]:
    """`series` series of one case each, all measured at `ratio` × the model."""
    return [(workload, regime, f"{workload}/{i}", ratio) for i in range(series)]


def test_a_validated_workload_is_calibrated_by_its_own_cases() -> None:
    r = residuals(steady("elementwise", 0.7) + steady("matmul", 1.5))
    p = r.predict(LAUNCH, "elementwise")
    assert p.seconds == pytest.approx(0.7 * 10e-6)
    assert p.why().endswith("× 0.7, the median of 6 launch-bound elementwise cases")
    assert r.predict(LAUNCH, "matmul").seconds == pytest.approx(1.5 * 10e-6)


def test_code_no_validation_saw_is_calibrated_by_every_case_of_its_regime() -> None:
    r = residuals(steady("elementwise", 0.5) + steady("matmul", 2.0, series=7))
    p = r.predict(LAUNCH, "")  # the user's own code
    assert p.seconds == pytest.approx(2.0 * 10e-6)  # median of 13: the 7th, a matmul's 2.0
    assert "13 launch-bound cases" in p.why()


def test_the_users_code_is_calibrated_by_every_validated_function() -> None:
    """`benchmarks/corpus.py` measures ordinary functions on the target: their residuals
    (workload "") calibrate the user's code, whatever their regime, and its interval is
    where its regime's fell."""
    functions = [("", "launch", f"corpus/f{i}/resident", x)
                 for i, x in enumerate([2.0, 2.2, 2.4, 2.6, 2.8, 3.0])]
    memory = [("", "memory", f"corpus/m{i}/resident", 2.5) for i in range(5)]
    r = residuals(steady("elementwise", 0.5, series=9) + functions + memory)
    p = r.predict(LAUNCH, "")
    assert p.seconds == pytest.approx(2.5 * 10e-6)  # their median, not the workloads' 0.5
    assert "11 validated function cases" in p.why()
    p = residuals(steady("elementwise", 0.5, series=9) + functions).predict(LAUNCH, "")
    ratios = [x for *_, x in functions]
    own = [x / float(np.median([y for y in ratios if y != x])) for x in ratios]
    low, high = p.interval  # type: ignore[misc]  # where they fell, each without itself
    assert (low / p.seconds, high / p.seconds) == pytest.approx((min(own), max(own)))


def test_the_users_code_is_calibrated_by_the_functions_measured_on_the_target() -> None:
    """A profile's probes are one VM's: its functions' ratios belong to it. Five or more
    measured on the target calibrate alone; fewer, and every function's case does; the
    target's are saved with the GPU they ran on, and read back so."""
    here = [Residual("", "launch", f"corpus/h{i}/resident", 0.8, "syn") for i in range(5)]
    there = [Residual("", "launch", f"corpus/o{i}/resident", 1.4, "other") for i in range(9)]
    r = of_points("syn", ["run-a"], "2026-11-28", [*here, *there])
    p = r.predict(LAUNCH, "")
    assert p.seconds == pytest.approx(0.8 * 10e-6)
    assert "5 validated functions measured on syn" in p.why()
    few = of_points("syn", ["run-a"], "2026-11-28", [*here[:4], *there])
    assert few.predict(LAUNCH, "").seconds == pytest.approx(1.4 * 10e-6)  # median of 13
    again = Residuals.from_dict(json.loads(json.dumps(r.to_dict())), "r.json")
    assert again == r and {p.measured_on for p in again.points} == {"syn", "other"}


def test_gpuvss_workloads_are_calibrated_without_the_functions() -> None:
    """The suite's predictions stay as they were when the functions' residuals ship
    beside the workloads'."""
    functions = [("", "launch", f"corpus/f{i}/resident", 5.0) for i in range(20)]
    workloads = steady("matmul", 2.0, series=3) + steady("gru", 1.0, series=3)
    with_them, without = residuals(workloads + functions), residuals(workloads)
    for workload in ("matmul", "elementwise"):
        assert with_them.predict(LAUNCH, workload) == without.predict(LAUNCH, workload)


def test_a_regime_with_too_few_cases_falls_back_to_every_case() -> None:
    r = residuals(steady("matmul", 3.0, series=2, regime="compute")
                  + steady("matmul", 1.0, series=5, regime="memory"))
    assert "7 validated cases" in r.predict(LAUNCH, "matmul").why()


def test_the_interval_is_where_like_cases_fell_against_their_own_prediction() -> None:
    ratios = [0.8, 0.9, 1.0, 1.0, 1.1, 1.2, 1.0, 1.0]
    r = residuals([("w", "launch", f"w/{i}", x) for i, x in enumerate(ratios)])
    p = r.predict(LAUNCH, "w")
    low, high = p.interval  # type: ignore[misc]
    assert low < p.seconds < high
    # Every case's others have a median of 1.0, so each one's measured ÷ predicted is its
    # own ratio; eight of them cannot place a new case's 5th and 95th percentile, so the
    # interval spans them all (`conformal`).
    assert (low / p.seconds, high / p.seconds) == pytest.approx((0.8, 1.2))


def test_the_interval_holds_a_new_case_nine_times_in_ten() -> None:
    """Split conformal ranks: of n ratios, the ⌊0.05(n + 1)⌋-th and ⌈0.95(n + 1)⌉-th. Drawn
    again and again, a new ratio from the same spread falls inside about 90 % of the time,
    where the 5th and 95th percentiles of the n held it less often, the fewer the n."""
    rng = np.random.default_rng(44)
    held = {"conformal": [], "percentiles": []}
    for _ in range(4000):
        ratios = rng.lognormal(0, 0.4, 24)
        new = rng.lognormal(0, 0.4)
        low, high = conformal(list(ratios))
        held["conformal"].append(low <= new <= high)
        q5, q95 = np.quantile(ratios, [0.05, 0.95])
        held["percentiles"].append(q5 <= new <= q95)
    assert float(np.mean(held["conformal"])) == pytest.approx(0.92, abs=0.015)
    assert float(np.mean(held["percentiles"])) < 0.87
    assert conformal([3.0, 1.0, 2.0]) == (1.0, 3.0)  # too few for the ranks: the extremes
    assert conformal(list(range(1, 40))) == (2.0, 38.0)  # n = 39: the 2nd and the 38th


def test_leaving_a_series_out_predicts_it_as_if_it_had_never_been_measured() -> None:
    r = residuals(steady("w", 1.0) + [("w", "launch", "odd", 9.0)])
    assert r.predict(LAUNCH, "w", leave_out="odd").seconds == pytest.approx(10e-6)


def test_a_workload_the_model_misses_is_marked_low_confidence_with_its_number() -> None:
    r = residuals([("gru", "launch", f"g/{i}", x) for i, x in enumerate([2, 9, 25, 4, 14, 6])]
                  + steady("elementwise", 1.0))
    assert r.low_confidence("elementwise", "launch") == ""
    said = r.predict(LAUNCH, "gru").low_confidence
    assert said.startswith("low confidence: syn's validation missed gru cases by ")
    assert "(median of 6, each predicted without its series)" in said


def test_the_users_code_missed_by_its_regimes_functions_says_functions() -> None:
    """It read "missed launch-bound functions cases by 29%" for a lambda on h200."""
    functions = [("", "launch", f"corpus/f{i}/resident", x)
                 for i, x in enumerate([1.0, 3.0, 1.0, 3.0, 1.0, 3.0])]
    said = residuals(functions).predict(LAUNCH, "").low_confidence
    assert said.startswith("low confidence: syn's validation missed launch-bound functions "
                           "by "), said


def test_without_residuals_there_is_no_interval_and_the_target_says_so(tmp_path: Path) -> None:
    path = profile.save(synthetic(), tmp_path)
    t = Target(profile.load(str(path)), None)
    p = t.predict(Work(bytes=1e3))
    assert p.interval is None and not p.validated and p.factor == 1
    assert p.why() == LAUNCH.why
    assert t.lines()[1].startswith("interval: not yet validated for syn: no residuals beside "
                                   "its profile")


def test_residuals_are_found_beside_their_profile(tmp_path: Path) -> None:
    path = profile.save(synthetic(), tmp_path)
    found = profile.load(str(path))
    assert beside(found) is None
    r = residuals(steady("w", 1.0))
    save(r, tmp_path / "syn.residuals.json")
    assert beside(found) == r
    assert profile.available() == [] or all(f.profile.name != "syn.residuals"
                                            for f in profile.available())


def test_a_file_that_is_not_residuals_is_refused_in_one_line(tmp_path: Path) -> None:
    path = profile.save(synthetic(), tmp_path)
    (tmp_path / "syn.residuals.json").write_text(json.dumps({"format_version": 7}))
    with pytest.raises(UsageError, match="is not a gpuvs residuals file of format 1"):
        beside(profile.load(str(path)))


@pytest.mark.parametrize(("content", "message"), [
    ("[" * 100_000, "nests arrays or objects too deeply|cannot read residuals"),
    (json.dumps({"format_version": 1, "target": "syn", "runs": ["r"], "measured_at": "t",
                 "points": ["x"]}), "is not a complete residuals file"),
    (json.dumps({"format_version": 1, "target": "syn", "runs": 3, "measured_at": "t",
                 "points": []}), "is not a complete residuals file"),
])
def test_hostile_residuals_are_one_line(content: str, message: str, tmp_path: Path) -> None:
    path = profile.save(synthetic(), tmp_path)
    (tmp_path / "syn.residuals.json").write_text(content)
    with pytest.raises(UsageError, match=message) as err:
        beside(profile.load(str(path)))
    assert "\n" not in str(err.value)


def test_a_ratio_that_says_nothing_is_dropped() -> None:
    r = residuals([("w", "launch", "a", 1.0), ("w", "launch", "b", 0.0),
                   ("w", "launch", "c", float("inf"))])
    assert [p.series for p in r.points] == ["a"]
