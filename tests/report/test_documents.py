"""`--format json` documents: numbers with their units in the keys, CIs as two numbers,
caveats as lists — from synthetic runs whose answers are known, and from real exports
(tests/data/golden) of a seeds run and two `gpuvs dist` runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.report.samples import CEILINGS, GPU, gpu_sweep, run

from gpuvs.report.documents import SCHEMA, cases_document
from gpuvs.store.export import load_json

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "golden"


def test_a_sweep_is_its_cases_crossovers_and_answers_as_numbers() -> None:
    doc = json.loads(json.dumps(cases_document("show", gpu_sweep(), CEILINGS, run())))
    assert (doc["schema"], doc["command"], doc["run"]["run_id"]) == (
        SCHEMA, "show", "20260101-000000-abcd")
    cases = {(c["backend"], c["device"], c["params"].get("data"), c["size"]): c
             for c in doc["cases"]}
    cpu = cases[("numpy", "cpu", None, 100_000)]
    assert cpu["median_s"] == pytest.approx(1e-6 + 1e5 * 1e-9)
    assert cpu["ci_low_s"] < cpu["median_s"] < cpu["ci_high_s"] and cpu["samples"] == 11
    assert cpu["flops"] == 2e5 and cpu["flops_per_s"] == pytest.approx(2e5 / cpu["median_s"])
    assert cpu["of_peak_flops"] == pytest.approx(cpu["flops_per_s"] / 1e11)
    assert cpu["speedup"] is None and cpu["caveats"] == [] and cpu["contended"] is False
    gpu = cases[("torch", GPU, "resident", 1_000_000)]
    assert gpu["speedup"] == pytest.approx((1e-6 + 1e-3) / (2e-5 + 1e-5), rel=1e-3)
    assert gpu["speedup_low"] < gpu["speedup"] < gpu["speedup_high"]
    assert gpu["speedup_over"] == cpu["key"].replace("100000", "1000000")
    oom = cases[("torch", GPU, "resident", 10_000_000)]
    assert (oom["status"], oom["reason"], oom["median_s"]) == (
        "oom", "needs 12 GiB, 8 GiB free", None)
    crossings = {c["data"]: c for c in doc["crossovers"]}
    assert crossings["resident"]["faster_from_size"] == 100_000
    assert crossings["end_to_end"]["faster_from_size"] == 1_000_000
    assert crossings["resident"]["speedup_low"] > 1
    assert doc["answers"][0]["answer"].startswith("GPU (torch, data on the GPU) faster from")
    assert doc["ceilings_contended"] is False and "seeds" not in doc


def test_a_seeds_run_carries_each_posts_figures() -> None:
    record, ms, _ = load_json(GOLDEN / "cpu-seeds-quick.json")
    doc = cases_document("seeds", ms, run=record)
    posts = {p["seed"]: p for p in doc["seeds"]}
    assert "000" in posts
    rows = [r for p in posts.values() for r in p["rows"]]
    timed = [r for r in rows if r.get("correct_s") is not None]
    assert timed and all(isinstance(r["correct_s"], float) and r["why"] for r in timed)
    assert any(r.get("correct_ratio") is not None for r in rows)  # a post's "N× faster"


@pytest.mark.parametrize(("export", "figure"), [("h200x2-collectives.json", "busbw_bytes_per_s"),
                                                ("h200x2-scaling.json", "efficiency")])
def test_a_dist_run_carries_its_bandwidths_and_efficiencies(export: str, figure: str) -> None:
    record, ms, _ = load_json(GOLDEN / export)
    doc = json.loads(json.dumps(cases_document("dist", ms, run=record)))
    found = [c[figure] for c in doc["cases"] if c.get(figure) is not None]
    assert found and all(isinstance(v, float) and v >= 0 for v in found)


def test_json_has_no_infinity_so_one_is_written_null() -> None:
    from gpuvs.report.documents import dumps
    doc = json.loads(dumps({"asymptotic_speedup": float("inf"), "cases": [{"x": float("nan")},
                                                                          {"x": 1.5}]}))
    assert doc == {"asymptotic_speedup": None, "cases": [{"x": None}, {"x": 1.5}]}
