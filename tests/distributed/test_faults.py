"""A rank that dies or hangs ends its case with a status — never a hung command — and the
ranks are started again for the cases left. Faults are planted through the worker's
test hook (GPUVS_DIST_FAULT), in real Gloo ranks under torchrun."""

from __future__ import annotations

import os
from pathlib import Path

import psutil
import pytest
from tests.helpers import run_id as run_id_of

from gpuvs.distributed.launch import crash_reason
from gpuvs.distributed.rank_main import FAULT_VARIABLE
from gpuvs.model import Status
from gpuvs.store import open_store


def _workers() -> set[int]:
    found = set()
    for p in psutil.process_iter(["cmdline"]):
        if "gpuvs.distributed.rank_main" in " ".join(p.info["cmdline"] or ()):
            found.add(p.pid)
    return found


def test_a_dead_rank_crashes_its_case_a_hung_one_times_out_and_the_rest_run(
        dist, db, monkeypatch) -> None:
    before = _workers()
    monkeypatch.setenv(FAULT_VARIABLE, "exit:1:/1024,collective=all_gather;"
                                       "hang:1:/4096,collective=all_gather")
    result = dist("collectives", "--backend", "gloo", "--nproc", "2", "--sizes", "1KiB,4KiB",
                  "-c", "all_reduce,all_gather", "--samples", "2", "--budget", "0",
                  "--timeout", "3")
    assert result.exit_code == 1, result.output  # a crashed case fails the run, as `run` does
    assert "Traceback" not in result.output
    run_id = run_id_of(result.output)
    got = {(m.case.size, m.case.param("collective")): m
           for m in open_store(db).measurements(run_id)}
    crashed, hung = got[(1024, "all_gather")], got[(4096, "all_gather")]
    assert crashed.status is Status.CRASHED
    assert crashed.reason == "rank 1 of 2 died (exit code 1)"
    assert hung.status is Status.TIMEOUT
    assert hung.reason == "no result within 3 s; torchrun and every rank were killed"
    for ok in ((1024, "all_reduce"), (4096, "all_reduce")):  # before and after the crash
        assert got[ok].status is Status.OK, (ok, got[ok].reason, result.output)
    assert "timeout: no result within 3 s" in result.output
    assert _workers() <= before  # no rank left behind


@pytest.mark.parametrize(("command", "wait_s"), [
    # Every case of the launch waits on the hung rank: any wait ends them all.
    (("collectives", "--sizes", "1KiB", "-c", "all_reduce", "--budget", "0"), 4),
    (("scaling", "--steps", "1", "--batch", "2", "--rounds", "1"), 4),
])
def test_a_rank_that_hangs_in_set_up_ends_every_case_it_owed_as_timeout(
        dist, db, monkeypatch, command: tuple[str, ...], wait_s: int) -> None:
    before = _workers()
    monkeypatch.setenv(FAULT_VARIABLE, "hang:1:setup")
    result = dist(*command, "--backend", "gloo", "--nproc", "2", "--setup-timeout",
                  str(wait_s))
    # Ranks the watchdog had to kill did not finish their cases: the run is no success.
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    ms = open_store(db).measurements(run_id_of(result.output))
    assert ms and all(m.status is Status.TIMEOUT for m in ms)
    assert ms[0].reason == (
        f"the 2 ranks were not ready within {wait_s} s (set-up: importing torch, the rendezvous, "
        "the process groups); torchrun and every rank were killed")
    assert _workers() <= before


def test_a_dead_rank_at_n_2_leaves_the_n_1_scaling_results(dist, db, monkeypatch) -> None:
    monkeypatch.setenv(FAULT_VARIABLE, "exit:1:/float32/2,")
    result = dist("scaling", "--backend", "gloo", "--nproc", "2", "--steps", "1", "--batch",
                  "2", "--rounds", "2")
    assert result.exit_code == 1, result.output
    ms = open_store(db).measurements(run_id_of(result.output))
    # The ranks are started again for the cases left: round 2 runs, and rank 1 dies again.
    assert [(m.case.size, m.case.param("round"), m.status) for m in ms] == [
        (1, "1", Status.OK), (2, "1", Status.CRASHED), (1, "2", Status.OK),
        (2, "2", Status.CRASHED)]
    assert "2 of 2 rounds crashed: rank 1 of 2 died (exit code 1)" in result.output


TORCHRUN_TAIL = """\
gpuvs-dist-error rank 0: crashed: RuntimeError: [pair.cc:537] Read error: Connection reset by peer
gpuvs-dist-error rank 1: oom: OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
Failures:
[1]:
  rank      : 0 (local_rank: 0)
  exitcode  : -15 (pid: 5181)  (SIGTERM)
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-11-23_09:02:31
  host      : localhost
  rank      : 1 (local_rank: 1)
  exitcode  : 1 (pid: 5182)
  error_file: <N/A>
"""


def test_the_reason_names_the_first_rank_to_fail_and_the_status_its_policy_gave() -> None:
    assert crash_reason(TORCHRUN_TAIL.splitlines(), 2, 1) == (Status.OOM, (
        "rank 1 of 2 died (exit code 1): OutOfMemoryError: CUDA out of memory. Tried to "
        "allocate 2.00 GiB"))


def test_out_of_memory_needs_the_ranks_evidence_not_a_word_in_its_message() -> None:
    """The rank's policy saw the exception: a RuntimeError that only mentions memory is
    `crashed`, whatever its text says."""
    said = TORCHRUN_TAIL.replace("rank 1: oom: OutOfMemoryError: CUDA out of memory.",
                                 "rank 1: crashed: RuntimeError: OutOfMemoryError in a log.")
    status, reason = crash_reason(said.splitlines(), 2, 1)
    assert status is Status.CRASHED and "OutOfMemoryError in a log" in reason


def test_a_rank_killed_by_a_signal_and_a_torchrun_without_a_report() -> None:
    killed = TORCHRUN_TAIL.replace("exitcode  : 1 (pid: 5182)", "exitcode  : -9 (pid: 5182)")
    assert crash_reason(killed.splitlines()[2:], 2, 1) == (
        Status.CRASHED, "rank 1 of 2 died (signal SIGKILL)")
    assert crash_reason(["gpuvs-dist-error rank 0: crashed: ValueError: bad"], 2, 1) == (
        Status.CRASHED, "torchrun ended with exit code 1: rank 0: ValueError: bad")


def test_the_ranks_inherit_the_environment_and_this_gpuvs(monkeypatch) -> None:
    import gpuvs
    from gpuvs.distributed.launch import rank_environment
    monkeypatch.setenv("NCCL_NVLS_ENABLE", "0")
    monkeypatch.setenv("PYTHONPATH", "elsewhere")
    env = rank_environment()
    assert env["NCCL_NVLS_ENABLE"] == "0"
    source = env["PYTHONPATH"].split(os.pathsep)
    assert source[1] == "elsewhere"
    assert (Path(source[0]) / "gpuvs" / "__init__.py").resolve() == Path(
        gpuvs.__file__).resolve()


def test_a_killed_gpuvs_dist_leaves_no_torchrun_no_rank_and_no_folder(tmp_path: Path,
                                                                      db: str) -> None:
    """SIGKILL of the parent, while rank 1 hangs in a case whose timeout is far off: the
    parent's own watchdog cannot run, so torchrun (dying with its parent) and the ranks
    (dying with torchrun) must end by themselves, and the launch's folder in $TMPDIR with
    them; torchrun's logs went into that folder, not a torchelastic_* of their own."""
    import subprocess
    import sys
    import time

    from tests.helpers import pythonpath

    pytest.importorskip("torch")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = os.environ | {"PYTHONPATH": pythonpath(), "TMPDIR": str(tmp),
                        FAULT_VARIABLE: "hang:1:/4096,collective=all_reduce"}
    parent = subprocess.Popen(
        [sys.executable, "-m", "gpuvs", "dist", "collectives", "--backend", "gloo", "--nproc",
         "2", "--sizes", "1KiB,4KiB", "-c", "all_reduce", "--samples", "2", "--budget", "0",
         "--timeout", "600", "--db", db], env=env, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 180
        while not (Path(db).exists() and (store := open_store(db)).latest_run_id()
                   and store.measurements(store.latest_run_id())):
            assert time.monotonic() < deadline and parent.poll() is None, "no case saved"
            time.sleep(0.5)
        time.sleep(1)  # rank 1 is asleep in the second case
        below = psutil.Process(parent.pid).children(recursive=True)
        agents = [p for p in below if "gpuvs.distributed.agent" in p.cmdline()]
        ranks = [p for p in below if p.cmdline()[1:4] == ["-u", "-m",
                                                          "gpuvs.distributed.rank_main"]]
        assert len(agents) == 1 and len(ranks) == 2, [p.cmdline() for p in below]
        parent.kill()
        parent.wait()
        _, alive = psutil.wait_procs(below, timeout=10)
        assert alive == [], [" ".join(p.cmdline())[:100] for p in alive]
        left = sorted(str(p.relative_to(tmp)) for p in tmp.rglob("*"))
        assert left == [], left  # no gpuvs-dist-*, no torchelastic_*
    finally:  # what a failure of this test would leave: not the parent's children now
        for p in psutil.process_iter(["cmdline"]):
            if str(tmp) in " ".join(p.info["cmdline"] or ()) or p.pid == parent.pid:
                p.kill()
