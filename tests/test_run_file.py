"""`gpuvs run-file SCRIPT.py::FUNC`: your own function from the shell, end to end."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from tests.helpers import invoke, run_id

pytest.importorskip("torch")

SCRIPT = """
import torch

torch.manual_seed(0)
net = torch.nn.Sequential(torch.nn.Linear(1, 8), torch.nn.Tanh(), torch.nn.Linear(8, 4))


def inputs(size):
    return net, torch.rand(size, 1)


def fixed():
    return (torch.rand(16, 16),)


def forward(model, t):
    return model(t)


def square(x):
    return x @ x


def broken(model, t):
    raise RuntimeError("mat1 and mat2 shapes cannot be multiplied")


def forward_loop(model, t):
    return torch.cat([model(t[i:i + 1]) for i in range(len(t))])
"""

RAISE_LINE = SCRIPT.splitlines().index('    raise RuntimeError("mat1 and mat2 shapes cannot be '
                                       'multiplied")') + 1


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "mlp.py"
    path.write_text(SCRIPT)
    return path


def test_a_sweep_prints_tables_why_and_saves_the_run(script: Path, db: str,
                                                     tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    result = invoke("run-file", f"{script}::forward", "--sizes", "10,100", "--budget", "0.05",
                    "--db", db, "--json", str(out))
    assert result.exit_code == 0, result.output
    assert "yours:forward · correct · float32" in result.output
    assert " finished: " in result.output
    with sqlite3.connect(db) as conn:
        config = json.loads(conn.execute("SELECT config FROM runs").fetchone()[0])
        sizes = [r[0] for r in conn.execute(
            "SELECT size FROM measurements WHERE device = 'cpu' AND workload != 'calibration' "
            "ORDER BY size")]
        probes = {(r[0], json.loads(r[1])["bound"]) for r in conn.execute(
            "SELECT backend, params FROM measurements WHERE workload = 'calibration'")}
    assert config["kind"] == "yours" and config["target"].endswith("mlp.py::forward")
    assert sizes == [10, 100]
    # the machine calibrated with the run, as `gpuvs run` is: torch's and NumPy's launch
    # on the CPU, and the CPU's own probes
    assert {("torch", "launch"), ("numpy", "launch"), ("numpy", "cpu"),
            ("numpy", "host_memory")} == probes
    assert "the machine, calibrated" in result.output
    doc = json.loads(out.read_text())  # the one run format, which `report --from` reads
    assert doc["run"]["config"]["sizes"] == [10, 100] and doc["format_version"] == 1
    page = tmp_path / "page.html"
    shown = invoke("report", "--from", str(out), "-o", str(page))
    assert shown.exit_code == 0, shown.output
    assert page.stat().st_size > 0


def test_without_sizes_the_builder_is_called_once(script: Path, db: str) -> None:
    result = invoke("run-file", f"{script}::square", "--inputs", "fixed", "-d", "cpu",
                    "--budget", "0.05", "--db", db)
    assert result.exit_code == 0, result.output
    assert re.search(r"^\s*16\s+torch\s+cpu\b", result.output, re.M), result.output


def test_a_busy_machine_is_named_before_the_run(script: Path, db: str,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """As `gpuvs run` does: the user's figures on a loaded machine say so first."""
    monkeypatch.setattr(os, "getloadavg", lambda: (4.0 * psutil.cpu_count(), 0.0, 0.0))
    result = invoke("run-file", f"{script}::square", "--inputs", "fixed", "-d", "cpu",
                    "--budget", "0.02", "--passes", "1", "--db", db)
    assert result.exit_code == 0, result.output
    busy, started = result.output.splitlines()[:2]
    assert busy.startswith("this machine is busy: load ")
    assert started.startswith("run ") and "square" in started


def _other_jobs_busy_loops(n: int) -> list[psutil.Process]:
    """`n` busy loops that are not this process's descendants, as another job's are: `sh`
    starts them in the background and exits, and they are reparented away from it."""
    loop = f"'{sys.executable}' -c 'while True: pass' </dev/null >/dev/null 2>&1 & echo $!"
    started = subprocess.run(["sh", "-c", "; ".join([loop] * n)], capture_output=True,
                             text=True, check=True)
    return [psutil.Process(int(pid)) for pid in started.stdout.split()]


def test_a_load_begun_seconds_before_the_run_is_named_though_the_load_average_lags(
        script: Path, db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two busy loops started 3 s before `gpuvs run-file` marked its case contended, and
    no line said the machine was busy: the 1-minute load had not caught up yet, and what
    other processes took since the command began was not read."""
    monkeypatch.setattr(os, "getloadavg", lambda: (0.0, 0.0, 0.0))  # not caught up yet
    loops = _other_jobs_busy_loops(2)
    try:
        mine = {p.pid for p in psutil.Process().children(recursive=True)}
        assert not mine & {p.pid for p in loops}
        time.sleep(2)  # busy before the command starts, as reported
        result = invoke("run-file", f"{script}::square", "--inputs", "fixed", "-d", "cpu",
                        "--budget", "0.02", "--passes", "1", "--db", db)
    finally:
        for p in loops:
            p.kill()
        psutil.wait_procs(loops, timeout=5)
    assert result.exit_code == 0, result.output
    busy, started = result.output.splitlines()[:2]
    assert busy.startswith("this machine is busy: other processes took "), result.output
    assert started.startswith("run ") and "square" in started


def test_run_files_own_workers_do_not_name_a_quiet_machine_busy(
        script: Path, db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """By its first case, run-file's workers and its calibration have taken CPU time and
    raised the load: read then as another job's, a quiet 2-core box read 'busy: python
    (99 %)', its own worker."""
    monkeypatch.setattr(os, "getloadavg", lambda: (0.0, 0.0, 0.0))  # quiet before it began
    result = invoke("run-file", f"{script}::square", "--inputs", "fixed", "-d", "cpu",
                    "--budget", "0.02", "--passes", "3", "--db", db)
    assert result.exit_code == 0, result.output
    assert result.output.startswith("run "), result.output


def test_the_explanation_is_worded_over_every_process_not_the_first(script: Path, db: str
                                                                    ) -> None:
    """The last line said the first process's figure, the table the figure over all."""
    result = invoke("run-file", f"{script}::square", "--inputs", "fixed", "-d", "cpu",
                    "--budget", "0.1", "--passes", "3", "--db", db)
    assert result.exit_code == 0, result.output
    figure = re.search(r"^\s*16\s+torch\s+cpu\s+\d+\s+([\d.]+ µs)", result.output, re.M)
    assert figure is not None, result.output
    assert f"cpu: {figure.group(1)} per call" in result.output


@pytest.mark.parametrize(("args", "message"), [
    (["{script}"], "expected SCRIPT.py::FUNC, e.g. mlp.py::jacobian; got"),
    (["{dir}/nope.py::f"], "no file '"),
    (["{script}::forwardd"], "has no function 'forwardd'; functions defined there: broken, "
                             "fixed, forward, forward_loop, inputs, square"),
    (["{script}::forward", "{script}::forward"], "two targets name the function 'forward': "
                                                 "each implementation compared is named by "
                                                 "its function"),
    (["{script}::forward", "{dir}/nope.py::f"], "no file '"),
    (["{script}::forward", "--inputs", "make"], "has no function 'make' to build forward's "
                                               "arguments; define make(size)"),
    (["{script}::forward"], "inputs() takes a size: pass --sizes, e.g. --sizes 1e2:1e4"),
    (["{script}::square", "--inputs", "fixed", "-s", "10"], "fixed(size) must take one "
                                                           "argument, the size"),
    (["{script}::forward", "-s", "10", "-d", "gpu"], "unknown device 'gpu'; accepted: cpu, "
                                                     "cuda, cuda:N"),
    (["{script}::forward", "-s", "10", "--budget", "0"], "--budget must be a positive number"),
    (["{script}::forward", "-s", "10", "--timeout", "-1"], "--timeout must be a positive "
                                                           "number"),
    (["{script}::broken", "-s", "10"], "broken raised RuntimeError on cpu at "
                                       "{script}:{raise_line}: mat1 and mat2 shapes cannot be "
                                       "multiplied"),
    (["{dir}/bad.py::f"], "importing {dir}/bad.py raised NameError: name 'undefined' is not "
                          "defined"),
])
def test_bad_input_is_one_line_and_exit_2(script: Path, db: str, args: list[str],
                                          message: str) -> None:
    (script.parent / "bad.py").write_text("undefined\n")
    fill = {"script": str(script), "dir": str(script.parent), "raise_line": RAISE_LINE}
    result = invoke("run-file", *(a.format(**fill) for a in args), "--db", db)
    assert result.exit_code == 2, result.output
    assert result.output.startswith("error: ") and result.output.count("\n") == 1  # no traceback
    assert message.format(**fill) in " ".join(result.output.split())


def test_several_targets_are_implementations_side_by_side(script: Path, db: str,
                                                          tmp_path: Path) -> None:
    """Issue 42: `gpuvs run-file m.py::f m.py::g` prints one table with each implementation
    × device per size and the winner; `show`, `--format json` and the report carry it."""
    result = invoke("run-file", f"{script}::forward", f"{script}::forward_loop", "-s", "10,100",
                    "-d", "cpu", "--budget", "0.05", "--db", db)
    assert result.exit_code == 0, result.output
    out = result.output
    assert f"{script}::forward {script}::forward_loop, 4 cases" in out
    assert "yours:forward · correct · float32" in out and "yours:forward_loop · correct" in out
    table = out[out.index("forward, forward_loop side by side · float32"):]
    header = table.splitlines()[1].split()
    assert header[:6] == ["size", "forward", "cpu", "forward_loop", "cpu", "fastest"]
    assert re.search(r"^\s*100\s+\S+ [nµm]?s ±.+\s+forward cpu\s+[\d.]+× \[[\d.]+, "
                     r"[\d.]+\] over forward_loop cpu", table, re.M), table
    assert "forward_loop: at size 100, cpu: " in out  # the explanation names each
    run = run_id(out)
    assert "forward, forward_loop side by side" in invoke("show", run, "--db", db).output
    doc = json.loads(invoke("show", run, "--db", db, "--format", "json").stdout)
    assert [w["size"] for w in doc["winners"]] == [10, 100]
    assert doc["winners"][-1]["fastest"]["implementation"] == "forward"
    with sqlite3.connect(db) as conn:
        config = json.loads(conn.execute("SELECT config FROM runs").fetchone()[0])
    assert config["functions"] == ["forward", "forward_loop"]
    page = tmp_path / "page.html"
    assert invoke("report", run, "--db", db, "-o", str(page)).exit_code == 0
    assert "forward, forward_loop side by side" in page.read_text()


def test_help_documents_the_convention() -> None:
    result = invoke("run-file", "--help")
    assert result.exit_code == 0
    text = " ".join(result.output.split())
    assert "SCRIPT.py::FUNC" in text and "BUILDER(size)" in text
