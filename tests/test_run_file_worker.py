"""`gpuvs run-file` runs the user's function in a worker process: whatever the function
does to its process — a segfault, `os._exit`, a hang, a flood of prints — gpuvs records
the case and carries on. Real workers, real torch on the CPU."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from tests import helpers
from typer.testing import CliRunner

from gpuvs.cli import app

pytest.importorskip("torch")
runner = CliRunner()

SCRIPT = """
import os
import signal
import sys
import time

import torch


def inputs(size):
    return torch.rand(size)


def segfaults(x):
    if len(x) == 20:
        print("the last words before the crash", flush=True)
        os.kill(os.getpid(), signal.SIGSEGV)
    return x * 2


def hangs(x):
    if len(x) == 10:
        time.sleep(1000)
    return x * 2


def exits(x):
    if len(x) == 30:
        os._exit(3)
    return x * 2


def chatty(x):
    print("chatter " * 200)
    print("more chatter", file=sys.stderr)
    return x * 2


def double(x):
    return x * 2


def inputs_die_at_20(size):
    if size == 20:
        os.kill(os.getpid(), signal.SIGSEGV)
    return torch.rand(size)


def inputs_raise_at_30(size):
    if size == 30:
        raise ValueError("no data for size 30")
    return torch.rand(size)


def slow_from_40(x):
    if len(x) >= 40:
        time.sleep(1000)
    return x * 2
"""


# Each worker notes its pid as it imports the file, and again at its first call.
TURNS = """
import os
import signal
import time
from pathlib import Path

import torch

LOG = Path(__file__).with_name("workers.log")
with LOG.open("a") as f:
    f.write(f"import {os.getpid()}\\n")
called = False


def inputs(size):
    return torch.rand(size)


def double(x):
    global called
    if not called:
        called = True
        with LOG.open("a") as f:
            f.write(f"call {os.getpid()}\\n")
    return x * 2


def kills_the_others(x):
    # The first call of all kills every other worker (each waiting for its turn), once.
    try:
        os.close(os.open(LOG.with_name("killed"), os.O_CREAT | os.O_EXCL))
    except FileExistsError:
        return x * 2
    others = [int(line.split()[1]) for line in LOG.read_text().splitlines()
              if line.startswith("import ") and int(line.split()[1]) != os.getpid()]
    for pid in others:
        os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and any(_running(pid) for pid in others):
        time.sleep(0.01)
    return x * 2


def _running(pid):
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return False


def exits(x):
    os._exit(3)
"""


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "risky.py"
    path.write_text(SCRIPT)
    return path


@pytest.fixture
def turns(tmp_path: Path) -> Path:
    path = tmp_path / "turns.py"
    path.write_text(TURNS)
    return path


def workers_log(turns: Path) -> list[tuple[str, int]]:
    """What the workers noted, in order: ("import", pid) as each loaded the file, ("call",
    pid) at each one's first call."""
    lines = (turns.parent / "workers.log").read_text().splitlines()
    return [(what, int(pid)) for what, pid in (line.split() for line in lines)]


def imported(turns: Path) -> list[int]:
    return [pid for what, pid in workers_log(turns) if what == "import"]


def alive(pids: list[int]) -> list[int]:
    """The processes still there, unreaped ones included (a zombie is a leaked child)."""
    return [pid for pid in pids if psutil.pid_exists(pid)]


def invoke(script: Path, func: str, db: str, *args: str):
    return helpers.invoke("run-file", f"{script}::{func}", "--sizes", "10,20,30", "-d", "cpu",
                          "--budget", "0.05", "--db", db, *args)


def stored(db: str) -> dict[int, tuple[str, str]]:
    """The saved run's cases: size → (status, reason)."""
    with sqlite3.connect(db) as conn:
        return {size: (status, reason) for size, status, reason in conn.execute(
            "SELECT size, status, reason FROM measurements WHERE workload != 'calibration'")}


def test_a_segfault_at_one_size_is_that_case_crashed_and_the_other_sizes_run(
        script: Path, db: str) -> None:
    result = invoke(script, "segfaults", db)
    assert result.exit_code == 1, result.output  # a crashed case: the run is incomplete
    cases = stored(db)
    assert {size: status for size, (status, _) in cases.items()} == {
        10: "ok", 20: "crashed", 30: "ok"}
    assert cases[20][1] == "the worker died (signal SIGSEGV). the last words before the crash"
    assert "crashed: the worker died (signal SIGSEGV)" in result.output
    assert " finished: " in result.output


def test_a_hang_outlives_the_timeout_is_killed_and_the_next_size_still_runs(
        script: Path, db: str) -> None:
    """At the first size, too: the start-up allowance covers loading, not the case."""
    started = time.monotonic()
    result = invoke(script, "hangs", db, "--timeout", "3")
    assert time.monotonic() - started < 60  # not the 120 s start-up allowance
    assert result.exit_code == 0, result.output  # a timeout is a result, not a failure
    cases = stored(db)
    assert cases[10] == ("timeout", "no result within the 3 s timeout; the worker was killed")
    assert cases[20][0] == cases[30][0] == "ok"


def test_an_exit_from_the_function_is_crashed_with_its_exit_code(script: Path,
                                                                  db: str) -> None:
    """At the last size: no worker is left to explain the run, and gpuvs explains it from
    the numbers (there is no GPU case to profile)."""
    result = invoke(script, "exits", db)
    assert result.exit_code == 1, result.output
    assert stored(db)[30] == ("crashed", "the worker died (exit code 3).")
    assert "at size 20, cpu: " in result.output and " finished: " in result.output


def test_what_the_function_prints_stays_out_of_the_output(script: Path, db: str) -> None:
    """gpuvs as a command of its own, so that any output of the worker's would show."""
    result = subprocess.run(
        [sys.executable, "-m", "gpuvs", "run-file", f"{script}::chatty", "--sizes", "10,20",
         "-d", "cpu", "--budget", "0.05", "--db", db], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "chatter" not in result.stdout + result.stderr
    assert " finished: " in result.stdout
    assert {status for status, _ in stored(db).values()} == {"ok"}


def test_inputs_that_kill_the_worker_take_their_size_and_the_next_size_runs(
        script: Path, db: str) -> None:
    result = invoke(script, "double", db, "--inputs", "inputs_die_at_20")
    assert result.exit_code == 1, result.output
    cases = stored(db)
    assert cases[20] == ("crashed", "before the case started (loading the file or building "
                                    "the inputs of size 20): the worker died (signal SIGSEGV).")
    assert cases[10][0] == cases[30][0] == "ok"


def test_with_several_implementations_a_death_takes_only_its_own_cases(script: Path,
                                                                     db: str) -> None:
    """One implementation that segfaults at 20 is that case crashed; the other's case at
    20 and every later case still run, each in a fresh worker, each named by its own.
    Inputs that kill the worker take the cases of their size of every implementation."""
    result = helpers.invoke("run-file", f"{script}::double", f"{script}::segfaults",
                            "--sizes", "10,20,30", "-d", "cpu", "--budget", "0.05",
                            "--db", db)
    assert result.exit_code == 1, result.output
    with sqlite3.connect(db) as conn:
        cases = {(w, size): status for w, size, status in conn.execute(
            "SELECT workload, size, status FROM measurements WHERE workload != 'calibration'")}
    assert cases == {("yours:double", 10): "ok", ("yours:segfaults", 10): "ok",
                     ("yours:double", 20): "ok", ("yours:segfaults", 20): "crashed",
                     ("yours:double", 30): "ok", ("yours:segfaults", 30): "ok"}
    died = helpers.invoke("run-file", f"{script}::double", f"{script}::segfaults",
                          "--sizes", "10,20,30", "-d", "cpu", "--budget", "0.05",
                          "--inputs", "inputs_die_at_20", "--db", db)
    assert died.exit_code == 1, died.output
    with sqlite3.connect(db) as conn:
        at_20 = sorted(conn.execute("SELECT workload, status, reason FROM measurements "
                                    "WHERE run_id = ? AND size = 20",
                                    (helpers.run_id(died.output),)))
    assert [(w, status) for w, status, _ in at_20] == [("yours:double", "crashed"),
                                                      ("yours:segfaults", "crashed")]
    assert all(reason.startswith("before the case started (loading the file or building "
                                 "the inputs of size 20)") for _, _, reason in at_20)


def test_a_file_that_kills_the_worker_as_it_loads_is_one_line_and_exit_2(
        tmp_path: Path, db: str) -> None:
    path = tmp_path / "dies.py"
    path.write_text("import os\nprint('loading', flush=True)\nos._exit(7)\n")
    result = runner.invoke(app, ["run-file", f"{path}::f", "--db", db])
    assert result.exit_code == 2, result.output
    assert result.output == (f"error: loading {path} or building its first inputs ended the "
                             "worker before any case ran: the worker died (exit code 7). "
                             "loading\n")


def test_every_pass_has_its_worker_started_before_the_first_case_and_samples_every_case(
        turns: Path, db: str) -> None:
    """Three passes: three processes, each loading the file before any case is measured
    (none starts while another times), each pass in its own, every case sampled in all
    three; none is left when the run ends."""
    result = helpers.invoke("run-file", f"{turns}::double", "--sizes", "10,20", "-d", "cpu",
                            "--budget", "0.05", "--passes", "3", "--db", db)
    assert result.exit_code == 0, result.output
    log = workers_log(turns)
    first_call = [what for what, _ in log].index("call")
    assert log[:first_call] == [("import", pid) for pid in imported(turns)]
    assert len(set(imported(turns))) == first_call == 3
    assert {pid for what, pid in log if what == "call"} == set(imported(turns))
    with sqlite3.connect(db) as conn:
        passes = {size: len(json.loads(data)["passes"]) for size, data in conn.execute(
            "SELECT size, data FROM measurements WHERE workload != 'calibration'")}
    assert passes == {10: 3, 20: 3}
    assert alive(imported(turns)) == []


def test_workers_killed_while_they_wait_for_their_turn_do_not_lose_the_run(
        turns: Path, db: str) -> None:
    """Each is found dead at its turn, as a worker that died outside a case: the smallest
    size its pass had still to sample takes its death, named as a death while waiting;
    a fresh worker samples the rest of that pass, and the run finishes."""
    result = helpers.invoke("run-file", f"{turns}::kills_the_others", "--sizes", "10,20,30",
                            "-d", "cpu", "--budget", "0.05", "--passes", "3", "--db", db)
    assert result.exit_code == 1, result.output  # crashed cases: the run is incomplete
    assert " finished: " in result.output
    cases = stored(db)
    killed = ("before the case started (its worker waiting for its turn): the worker was "
              "killed by SIGKILL, not by gpuvs")
    assert cases[10][0] == cases[20][0] == "crashed"
    assert cases[10][1].startswith(killed) and cases[20][1].startswith(killed)
    assert cases[30] == ("ok", "")
    with sqlite3.connect(db) as conn:
        data = json.loads(conn.execute("SELECT data FROM measurements WHERE size = 30"
                                       ).fetchone()[0])
    assert len(data["passes"]) == 3  # the first process's, then a fresh worker's twice
    assert len(imported(turns)) == 5 and alive(imported(turns)) == []


def test_workers_whose_turn_never_comes_are_closed(turns: Path, db: str) -> None:
    """Every case settled in the first process (each crashed): the later passes' workers,
    started ahead, are ended with the run."""
    result = helpers.invoke("run-file", f"{turns}::exits", "--sizes", "10", "-d", "cpu",
                            "--budget", "0.05", "--passes", "3", "--db", db)
    assert result.exit_code == 1, result.output
    assert stored(db) == {10: ("crashed", "the worker died (exit code 3).")}
    assert len(imported(turns)) == 3 and alive(imported(turns)) == []


@pytest.mark.gpu
def test_on_cuda_a_resident_case_that_kills_the_worker_skips_its_end_to_end_twin(
        tmp_path: Path, db: str) -> None:
    """And the explanation still counts the kernels of the cases that finished: a fresh
    worker, with every case done, profiles them."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    path = tmp_path / "gpu.py"
    path.write_text("import os, signal, torch\n"
                    "def inputs(size):\n"
                    "    return torch.rand(size)\n"
                    "def dies_on_cuda_at_20(x):\n"
                    "    if x.is_cuda and len(x) == 20:\n"
                    "        os.kill(os.getpid(), signal.SIGSEGV)\n"
                    "    return x * 2\n")
    result = helpers.invoke("run-file", f"{path}::dies_on_cuda_at_20", "--sizes", "10,20",
                            "--budget", "0.05", "--db", db)
    assert result.exit_code == 1, result.output
    with sqlite3.connect(db) as conn:
        cases = {(size, device, params): (status, reason) for size, device, params, status,
                 reason in conn.execute("SELECT size, device, params, status, reason FROM "
                                        "measurements")}
    at_20 = {k[1:]: v for k, v in cases.items() if k[0] == 20}
    assert at_20[("cpu", "{}")][0] == "ok"
    assert at_20[("cuda", "{}")] == ("crashed", "the worker died (signal SIGSEGV).")
    assert at_20[("cuda", '{"data": "end_to_end"}')] == (
        "skipped", "not measured: the resident case is crashed")
    assert {v[0] for k, v in cases.items() if k[0] == 10} == {"ok"}
    assert "at size 10, cuda resident: " in result.output
    assert "kernels not counted" not in result.output
    # what the profile saw joins the case's record, as a run's observation does: the
    # kernels are its launches, which `check` reads against the launch probe
    with sqlite3.connect(db) as conn:
        (data,) = conn.execute("SELECT data FROM measurements WHERE size = 10 AND device = "
                               "'cuda' AND params = '{}'").fetchone()
    counters = json.loads(data)["counters"]
    assert counters["launches"] == counters["kernels"] >= 1 and counters["busy_kernels_s"] > 0


def test_inputs_that_raise_at_the_third_size_keep_the_two_finished_sizes(
        script: Path, db: str) -> None:
    result = invoke(script, "double", db, "--inputs", "inputs_raise_at_30")
    assert result.exit_code == 2, result.output
    assert "ValueError" in result.output and "its recorded cases are kept: 2 ok" in result.output
    assert {size: status for size, (status, _) in stored(db).items()} == {10: "ok", 20: "ok"}
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT status FROM runs").fetchone()[0] == "failed"


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_run_file_keeps_every_size_it_finished(script: Path, db: str,
                                                              sig: int) -> None:
    """Each case is saved the moment its worker sends it, as `gpuvs run` saves them; an
    interrupt ends the run `interrupted` and says what was kept and how to go on."""
    proc = helpers.interruptible(
        [sys.executable, "-m", "gpuvs", "run-file", f"{script}::slow_from_40", "--sizes",
         "10,20,30,40", "-d", "cpu", "--budget", "0.05", "--db", db])
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and len(_stored_if_any(db)) < 3:
        time.sleep(0.2)
    proc.send_signal(sig)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 130, out
    assert sorted(stored(db)) == [10, 20, 30]
    assert "its recorded cases are kept: 3 ok" in out and "measures it again" in out
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT status FROM runs").fetchone()[0] == "interrupted"


def _stored_if_any(db: str) -> dict[int, tuple[str, str]]:
    try:
        return stored(db)
    except sqlite3.OperationalError:  # the run has not made its tables yet
        return {}
