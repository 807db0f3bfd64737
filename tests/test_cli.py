"""The command end to end: real workers, the real SQLite store, every bad-input message."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.helpers import invoke, stored_count
from tests.helpers import run_id as run_id_of

QUICK = ["--budget", "0.1", "--backend", "numpy", "--device", "cpu"]


@pytest.mark.parametrize(("args", "message"), [
    (["run", "-w", "matmull"],
     "unknown workload 'matmull'; known: calibration, cnn, copy, dispatch"),
    (["run", "-b", "cpy"], "unknown backend 'cpy'; known: cupy, jax, numpy, sim, torch"),
    (["run", "--dtype", "float8"], "unknown dtype 'float8'; known: float16, bfloat16"),
    (["run", "-s", "1.5"], "size '1.5' is not a positive integer"),
    (["run", "-s", "-3"], "size '-3' is not a positive integer"),
    (["run", "-b", "numpy", "--dtype", "bfloat16"],
     "numpy has no bfloat16; it supports float16, float32, float64"),
    (["run", "-d", "gpu"], "unknown device 'gpu'; accepted: cpu, cuda, cuda:N"),
    (["run", "--budget", "0"], "--budget must be a positive number of seconds"),
    (["run", "--criterion", "fast"], "unknown criterion 'fast'"),
    (["show", "nope"], "no results database at"),
])
def test_bad_input_is_one_line_naming_the_value_and_exit_2(args, message, db) -> None:
    result = invoke(*args, "--db", db)
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_an_unwritable_database_path_is_bad_usage(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    result = invoke("run", "--db", str(blocker / "x.sqlite"), *QUICK)
    assert result.exit_code == 2
    assert "cannot open the results database" in result.output


@pytest.mark.usefixtures("worker_env")
def test_run_measures_saves_and_prints_a_table_then_show_prints_it_again(db, tmp_path) -> None:
    out_json = tmp_path / "run.json"
    result = invoke("run", "-w", "matmul", "-s", "64,128", *QUICK, "--db", db,
                    "--json", str(out_json))
    assert result.exit_code == 0, result.output
    assert "Square matrix product, float32" in result.output
    assert "FLOP/s" in result.output
    run_id = run_id_of(result.output)
    doc = json.loads(out_json.read_text())
    assert doc["run"]["run_id"] == run_id
    assert {m["status"] for m in doc["measurements"]} == {"ok"}
    # the calibration's four probes first (NumPy's launch, its product on one thread and
    # all, a copy), then both shapes (seed000's 1×k×100, square) at 2 sizes
    workloads = [m["case"]["workload"] for m in doc["measurements"]]
    assert workloads == ["calibration"] * 4 + ["matmul"] * 4
    shown = invoke("show", run_id, "--db", db)
    assert shown.exit_code == 0 and "Square matrix product, float32" in shown.output


def test_show_prints_a_committed_export_as_its_run_printed_it_with_no_store(tmp_path) -> None:
    """docs/runs keeps seeds runs from GPU machines gzipped; `show` read only a store's run
    ids, so a reader could draw them (`report --from`) but not print their tables."""
    export = Path(__file__).resolve().parents[1] / "docs" / "runs" / "seeds-h200-c.json.gz"
    never = tmp_path / "never.sqlite"
    shown = invoke("show", str(export), "--db", str(never))
    assert shown.exit_code == 0, shown.output
    assert shown.output.startswith("run 20261128-185321-9e6d · seeds · finished")
    assert "the posts, answered here" in shown.output and "004: GPU vs CPU, naive" in shown.output
    assert not never.exists()


@pytest.mark.usefixtures("worker_env")
def test_a_plan_measured_before_is_estimated_from_what_it_cost(db) -> None:
    """The estimate reads this machine's stored cases: the same plan again is estimated
    from them, not from the model; a larger size of the series follows their trend."""
    args = ["-w", "matmul", "-a", "shape=square", "--passes", "1", *QUICK, "--db", db]
    assert invoke("run", "-s", "64,128", *args).exit_code == 0
    again = invoke("run", "-s", "64,128", *args, "--dry-run")
    assert "from this machine's past runs;" in again.output, again.output
    larger = invoke("run", "-s", "64,128,256", *args, "--dry-run")
    assert "from this machine's past runs;" in larger.output, larger.output
    other = invoke("run", "-w", "elementwise", "-s", "1e3", "-b", "numpy", "-d", "cpu",
                   "--db", db, "--dry-run")  # its calibration was measured before, not it
    assert "from this machine's past runs for 4 of 7 cases" in other.output, other.output
    assert "calibration: 4 cases; numpy on cpu" in other.output


@pytest.mark.usefixtures("worker_env")
def test_gpu_cases_on_a_cpu_machine_are_unavailable_with_the_reason(db) -> None:
    pytest.importorskip("torch")
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA device")
    # One pass: the GPU cases are decided before any worker starts, and a second pass would
    # only start torch again to sample the CPU cases once more.
    result = invoke("run", "-w", "matmul", "-s", "64", "-b", "torch", "--budget", "0.1",
                    "--passes", "1", "--db", db)
    assert result.exit_code == 0, result.output
    # One note per backend and device, not one row per size.
    assert result.output.count("unavailable: torch on cuda:0: no CUDA device") == 2
    assert "no speedup or crossover can be computed without a GPU series" in result.output


def test_list_and_env_describe_what_is_here() -> None:
    listed = invoke("list")
    assert listed.exit_code == 0
    assert "matmul" in listed.output and "elementwise" in listed.output
    assert "median-ci" in listed.output
    env = invoke("env")
    assert env.exit_code == 0, env.output
    assert "numpy" in env.output


def test_env_prints_each_reason_as_written_brackets_included() -> None:
    """A reason is text, not markup: rich read `[jax]` in "pip install 'gpuvs[jax]'" as a
    style and printed "pip install 'gpuvs'"."""
    from gpuvs import backends
    from gpuvs.machine import env
    reasons = [r["reason"] for r in env.backend_rows(backends.REGISTRY.all())
               if not r["available"]]
    shown = invoke("env").output
    for reason in reasons:
        assert reason in shown


def test_version_answers_as_an_installed_tool_does() -> None:
    from gpuvs import __version__
    result = invoke("--version")
    assert result.exit_code == 0
    assert result.output.strip() == f"gpuvs {__version__}"


@pytest.mark.usefixtures("worker_env")
def test_a_run_killed_halfway_keeps_its_cases_and_resume_finishes_it(db) -> None:
    # Calls of 20-100 ms, and a criterion no case meets within the budget: every case
    # samples its whole 0.4 s, so the three left after the second is recorded hold the
    # run open for over a second — the kill lands mid-run, and `--resume` has only those
    # three to measure.
    cmd = [sys.executable, "-m", "gpuvs", "run", "-w", "test_spin", "-s", "2e4,4e4,6e4,8e4,1e5",
           "-b", "numpy", "-d", "cpu", "--budget", "0.4", "--criterion", "fixed:n=40",
           "--passes", "1", "--db", db]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            start_new_session=True)
    deadline = time.time() + 60
    while time.time() < deadline and stored_count(db) < 2:
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    kept = stored_count(db)
    assert 2 <= kept < 5
    run_id = sqlite3.connect(db).execute("select run_id from runs").fetchone()[0]
    result = invoke("run", "--resume", run_id, "--db", db)
    assert result.exit_code == 0, result.output
    assert f"{kept} already recorded" in result.output
    assert stored_count(db) == 5


@pytest.mark.usefixtures("worker_env")
def test_sweep_refines_sizes_until_the_crossover_is_bracketed_within_the_factor(db) -> None:
    result = invoke("sweep", "test_linear", "-b", "numpy,sim", "-s", "1e3:1e6", "--budget",
                    "0.2", "--refine", "--factor", "2", "--db", db)
    assert result.exit_code == 0, result.output
    assert "refining: 2 cases at sizes 31623" in result.output
    row = next(line for line in result.output.splitlines() if line.startswith("sim cuda:0"))
    measured = row.split()[3]  # GPU series, data, GPU faster from: the true crossover ≈ 15152
    assert measured in ("17783", "31623"), row


def test_sweep_rejects_a_refine_factor_of_one_or_less(db) -> None:
    result = invoke("sweep", "matmul", "--refine", "--factor", "1", "--db", db)
    assert result.exit_code == 2
    assert "--factor must be a number above 1; got 1.0" in result.output


@pytest.mark.usefixtures("worker_env")
def test_export_writes_json_that_round_trips_and_a_tidy_csv(db, tmp_path) -> None:
    import csv

    from gpuvs.model import Measurement
    ran = invoke("run", "-w", "test_spin", "-s", "100,200", "-b", "numpy", "--budget", "0.1",
                 "--db", db)
    assert ran.exit_code == 0, ran.output
    as_json, as_csv = tmp_path / "r.json", tmp_path / "r.csv"
    assert invoke("export", "latest", "--db", db, "-o", str(as_json)).exit_code == 0
    assert invoke("export", "latest", "-f", "csv", "--db", db, "-o", str(as_csv)).exit_code == 0
    doc = json.loads(as_json.read_text())
    again = [Measurement.from_dict(m) for m in doc["measurements"]]
    assert all(m.samples for m in again)
    assert [m.case.size for m in again if not m.case.calibrates] == [100, 200]
    assert [m.case.workload for m in again[:4]] == ["calibration"] * 4  # the probes first
    rows = list(csv.DictReader(as_csv.open()))  # a row per case, the probes' first
    assert [r["size"] for r in rows if r["workload"] == "test_spin"] == ["100", "200"]
    assert {r["started_at"] for r in rows} == {doc["run"]["started_at"]}  # rows line up in time
    assert float(rows[0]["median_s"]) == pytest.approx(again[0].summary.median)
    bad = invoke("export", "latest", "-f", "xml", "--db", db)
    assert bad.exit_code == 2 and "unknown format 'xml'; accepted: json, csv" in bad.output


def test_tables_as_markdown_also_reach_the_github_step_summary(tmp_path, monkeypatch) -> None:
    from rich.console import Console

    from gpuvs.cli.output import emit_tables
    from gpuvs.table import Table
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    out = Console(file=(tmp_path / "out.md").open("w"), width=80)
    emit_tables([Table("t", ("size", "note"), (("1", "ok"),))], "md", out, dict)
    out.file.close()
    printed = (tmp_path / "out.md").read_text()
    assert printed == "**t**\n\n| size | note |\n|---:|:---|\n| 1 | ok |\n"
    assert summary.read_text() == printed + "\n"


@pytest.mark.parametrize("fmt", ["json", "md"])
def test_run_with_a_machine_format_writes_only_tables_on_stdout(fmt, tmp_path) -> None:
    """`--format json|md` leaves stdout to the tables (a pipe into jq or a PR comment);
    the progress and the run's lines go to stderr."""
    proc = subprocess.run(
        [sys.executable, "-m", "gpuvs", "run", "-w", "matmul", "-a", "shape=square", "-b",
         "numpy", "-d", "cpu", "-s", "64", "--budget", "0.05", "--passes", "1", "--db",
         str(tmp_path / "r.sqlite"), "--format", fmt],
        capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    if fmt == "json":  # data, not the tables' strings
        doc = json.loads(proc.stdout)
        assert (doc["schema"], doc["command"]) == ("gpuvs.output/1", "run")
        (case,) = doc["cases"]
        assert (case["backend"], case["size"], case["status"]) == ("numpy", 64, "ok")
        assert case["ci_low_s"] <= case["median_s"] <= case["ci_high_s"]
        assert case["flops"] == 2 * 64**3 and case["flops_per_s"] > 0
        assert isinstance(case["caveats"], list) and doc["run"]["status"] == "finished"
    else:
        assert proc.stdout.startswith("**") and "| size |" in proc.stdout
    assert "[5/5] matmul/correct/numpy/cpu/float32/64" in proc.stderr  # after 4 probes
    assert " finished: 5 ok" in proc.stderr and " finished: 5 ok" not in proc.stdout
