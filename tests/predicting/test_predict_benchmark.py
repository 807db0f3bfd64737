"""benchmarks/predict.py offline (`--from-run`), on the H100 and H200 sweeps exported in
docs/runs/: its files, and its table's numbers recomputed from the cases it wrote."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tests.helpers import REPO, benchmark, pythonpath
from tests.predicting.samples import synthetic

from gpuvs.predicting import profile

H100 = REPO / "docs" / "runs" / "h100-sweep.json"
H200 = REPO / "docs" / "runs" / "h200-sweep.json"


def bench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(REPO / "benchmarks" / "predict.py"), *args],
                          capture_output=True, text=True, timeout=300,
                          env={"PYTHONPATH": pythonpath(), "PATH": "/usr/bin:/bin"})


@pytest.fixture
def syn(tmp_path: Path) -> Path:
    return profile.save(synthetic(), tmp_path / "given")


def test_offline_it_writes_residuals_predictions_and_the_error_table(syn: Path,
                                                                     tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = bench("--target", str(syn), "--out", str(out), "--from-run", str(H100))
    assert done.returncode == 0, done.stderr
    cases: list[dict[str, Any]] = json.loads((out / "predictions.json").read_text())
    assert len(cases) == 25  # the sweep's finished GPU cases (two were skipped)
    for c in cases:
        assert c["error"] == pytest.approx(abs(c["predicted_s"] - c["measured_s"])
                                           / c["measured_s"])
        low, high = c["interval_s"]
        assert c["inside"] == (low <= c["measured_s"] <= high)
    errors = [c["error"] for c in cases]
    table = (out / "errors.md").read_text()
    assert done.stdout.strip() == table.strip()  # printed last, as written
    row = next(line for line in table.splitlines() if line.startswith("| all |"))
    cells = [x.strip() for x in row.strip("|").split("|")]
    assert cells[:4] == ["all", "25", f"{np.median(errors):.1%}",
                         f"{np.quantile(errors, 0.9):.1%}"]
    assert cells[4] == f"{np.mean([c['inside'] for c in cases]):.0%}"
    saved = json.loads((out / "profiles" / "syn.residuals.json").read_text())
    assert len(saved["points"]) == 25 and saved["runs"] == ["20261123-234930-ccbb"]
    assert (out / "profiles" / "syn.json").read_text() == syn.read_text()


def test_held_out_runs_are_judged_against_the_calibration_of_other_runs(
        syn: Path, tmp_path: Path) -> None:
    """The H200 sweep, gzipped as docs/runs/predict/ keeps runs, judged by the H100
    sweep's calibration: the residuals written are the calibration's, and the table names
    the runs it rests on."""
    gz = tmp_path / "h200.json.gz"
    gz.write_bytes(gzip.compress(H200.read_bytes()))
    out = tmp_path / "out"
    done = bench("--target", str(syn), "--out", str(out), "--from-run", str(gz),
                 "--calibration", str(H100))
    assert done.returncode == 0, done.stderr
    assert "calibrated by other runs: 20261123-234930-ccbb" in done.stdout
    saved = json.loads((out / "profiles" / "syn.residuals.json").read_text())
    assert saved["runs"] == ["20261123-234930-ccbb"]  # the H100's, not the judged H200's
    judged = json.loads((out / "predictions.json").read_text())
    h200 = json.loads(H200.read_text())["measurements"]
    assert len(judged) == sum(m["case"]["device"] != "cpu" and m["status"] == "ok"
                              for m in h200) > 0  # every finished H200 GPU case, judged


def test_gpu_to_gpu_adds_the_scaled_table(tmp_path: Path) -> None:
    source = profile.save(synthetic("a"), tmp_path)
    target = profile.save(synthetic("b", {"memory": 1.4}), tmp_path)
    out = tmp_path / "out"
    done = bench("--target", str(target), "--out", str(out), "--from-run", str(H200),
                 "--source", str(source), "--source-run", str(H100))
    assert done.returncode == 0, done.stderr
    assert "**a → b (GPU → GPU): each case measured on Synthetic GPU, scaled term by term**" \
        in done.stdout
    gpu_rows = done.stdout.split("(GPU → GPU)")[1]
    assert "| all | 25 |" in gpu_rows


def test_measuring_runs_each_plan_through_the_command_line(
        syn: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """The plans shrunk to two CPU cases: each one a gpuvs command with its log and its
    export; a CPU has no GPU case to judge, and the benchmark says so."""
    bench_module = benchmark("predict")
    monkeypatch.setattr(bench_module, "PLANS", {"tiny": (
        "run", "-w", "elementwise", "-a", "op=scale", "-s", "1000,2000", "-b", "numpy",
        "-d", "cpu", "--budget", "0.05", "--passes", "1")})
    monkeypatch.setenv("PYTHONPATH", pythonpath())
    out = tmp_path / "out"
    assert bench_module.main(["--target", str(syn), "--out", str(out)]) == 2
    assert "no GPU case finished in" in capsys.readouterr().err
    assert "finished: 6 ok" in (out / "tiny.log").read_text()  # 2 cases after 4 probes
    doc = json.loads((out / "tiny.json").read_text())
    assert {m["case"]["size"] for m in doc["measurements"]
            if m["case"]["workload"] != "calibration"} == {1000, 2000}
