"""Predicted GPU series against measured CPU cases, and the validation's error table,
on cases whose times are worked out by hand from the synthetic profile."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from tests.predicting.samples import measured, synthetic

from gpuvs.model import Case
from gpuvs.predicting import forecast, pricing, profile, validation
from gpuvs.predicting.forecast import Target
from gpuvs.predicting.residuals import Prediction, Residual, of_points
from gpuvs.predicting.validation import Check, CrossoverCheck
from gpuvs.predicting.work import Work

SIZES = (1000, 10_000, 100_000, 1_000_000)
SCALE = (("op", "scale"),)


def case(backend: str, device: str, size: int, params: tuple[tuple[str, str], ...] = SCALE
         ) -> Case:
    return Case("elementwise", "correct", backend, device, "float32", size, params)


@pytest.fixture
def target(tmp_path: Path) -> Target:
    return Target(profile.load(str(profile.save(synthetic(), tmp_path))), None)


def test_the_predicted_crossover_is_where_the_gpu_stays_ahead_of_the_cpu(target: Target) -> None:
    # The CPU: 1 ns an element. The GPU: one 10 µs launch until 8 bytes an element at
    # 2 TB/s pass it (past 2.5e6 elements): ahead from 1e5, tied at 1e4.
    cpu = [measured(case("numpy", "cpu", n), n * 1e-9) for n in SIZES]
    predicted = forecast.predict_cases(target, [case("torch", "cuda:0", n) for n in SIZES])
    [s] = forecast.series(cpu, predicted)
    assert [p.speedup for p in s.points] == pytest.approx([0.1, 1.0, 10.0, 100.0])
    assert s.crossover == 100_000 and s.data == "resident"
    assert all(p.speedup_range is None for p in s.points)  # not validated: no interval


def test_the_fastest_cpu_case_of_each_size_is_the_baseline(target: Target) -> None:
    cpu = [measured(case("numpy", "cpu", 1000), 50e-6), measured(case("torch", "cpu", 1000),
                                                                   5e-6)]
    [s] = forecast.series(cpu, forecast.predict_cases(target, [case("cupy", "cuda:0", 1000)]))
    assert s.points[0].cpu.case.backend == "torch" and s.points[0].speedup == pytest.approx(0.5)
    assert s.crossover is None


def test_many_validation_runs_are_counted_with_the_first_and_last_named(target: Target) -> None:
    runs = [f"20261126-0{i}0000-abcd" for i in range(6)]
    points = [Residual("matmul", "launch", f"s{i}", 1.0) for i in range(6)]
    t = dataclasses.replace(target, residuals=of_points("syn", runs, "2026-11-26", points))
    assert ("(6 runs, 20261126-000000-abcd … 20261126-050000-abcd), each against its "
            "prediction made without it") in t.lines()[1]


def test_a_case_the_profile_cannot_predict_says_why(target: Target) -> None:
    bare = dataclasses.replace(target.found.profile, ceilings=tuple(
        c for c in target.found.profile.ceilings if c.backend != "jax"))
    t = Target(dataclasses.replace(target.found, profile=bare), None)
    [p] = forecast.predict_cases(t, [case("jax", "cuda:0", 1000)])
    assert p.prediction is None and "per-op dispatch cost of jax" in p.reason


def check(workload: str, measured_s: float, predicted_s: float,
          spread: tuple[float, float] | None = (0.5, 2.0)) -> Check:
    est = pricing.estimate(Work(bytes=1e3), synthetic())  # 10 µs
    c = Case(workload, "correct", "torch", "cuda:0", "float32", 1)
    return Check(c, measured_s, Prediction(est, predicted_s / est.seconds, spread, "x"))


def test_the_error_table_reads_median_p90_and_interval_per_workload() -> None:
    found = [check("a", 1.0, 1.1), check("a", 1.0, 0.7), check("a", 1.0, 3.0),
             check("b", 2.0, 2.0, None)]
    rows = validation.error_rows(found)
    assert [r.name for r in rows] == ["a", "b", "all"]
    a, b, every = rows
    assert a.cases == 3 and a.median_error == pytest.approx(0.3)
    assert a.p90_error == pytest.approx(float(np.quantile([0.1, 0.3, 2.0], 0.9)))
    assert a.inside == pytest.approx(2 / 3)  # 3.0 s predicted: 1.0 is below its [1.5, 6]
    assert b.inside is None and b.median_error == pytest.approx(0, abs=1e-12)
    assert every.cases == 4 and every.median_error == pytest.approx(0.2)


@pytest.mark.parametrize(("predicted", "measured_at", "steps"), [
    (100_000, 10_000, 1), (None, 1_000_000, 1), (None, None, 0), (1000, None, 4)])
def test_crossovers_are_compared_in_size_steps(predicted: int | None, measured_at: int | None,
                                               steps: int) -> None:
    x = CrossoverCheck(case("torch", "cuda:0", 0), SIZES, predicted, measured_at)
    assert x.steps_apart == steps


def test_a_measured_sweep_is_judged_case_by_case_and_crossover_by_crossover(
        target: Target) -> None:
    """Measured GPU times at 1.2 × the model: each case, predicted without its own
    series, is calibrated by the others' 1.2 and lands on its measurement."""
    cpu = [measured(case("numpy", "cpu", n), n * 1e-9) for n in SIZES]
    gpu = [measured(case(b, "cuda:0", n), 1.2 * target.predict(
        Work(bytes=8.0 * n, backend=b)).seconds) for b in ("torch", "cupy") for n in SIZES]
    gpu += [measured(case("torch", "cuda:0", n, (("op", "chain"),)), 1.2 * 3 * 10e-6)
            for n in SIZES[:2]]
    every = cpu + gpu
    learnt = validation.residuals_of(every, target.found.profile, ["r"], "2026-11-26")
    assert [p.ratio for p in learnt.points] == pytest.approx([1.2] * len(gpu))
    found = validation.checks(every, Target(target.found, learnt))
    assert len(found) == len(gpu)
    assert all(c.error == pytest.approx(0, abs=1e-9) and c.inside for c in found)
    crossed = validation.crossover_checks(every, found)
    assert {(x.gpu.backend, x.predicted, x.measured) for x in crossed} == {
        ("torch", 100_000, 100_000), ("cupy", 100_000, 100_000)}


def test_replays_of_a_post_are_not_judged() -> None:
    replay = measured(dataclasses.replace(case("torch", "cuda:0", 1000), variant="as_written"),
                      1e-6)
    assert validation.judged([replay]) == []


def test_gpu_to_gpu_scales_the_source_measurement_to_the_target() -> None:
    a, b = synthetic("a"), synthetic("b", {"memory": 2.0})
    big = case("torch", "cuda:0", 10**8)  # 800 MB: memory-bound on both
    found = validation.scaled_checks([measured(big, 1e-3)], [measured(big, 0.55e-3)], a, b)
    [c] = found
    assert c.prediction.seconds == pytest.approx(0.5e-3)
    assert c.error == pytest.approx(0.05 / 0.55)
    assert c.inside is None
