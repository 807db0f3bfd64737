"""`gpuvs dist scaling` for real: seed 003's CNN trained with DDP on one and two Gloo ranks,
in rounds, started by the user's own torchrun (`--launched`): rank 0 saves and prints,
rank 1 only trains. (Started by gpuvs itself, scaling runs in
tests/distributed/test_faults.py; on two simulated nodes, in test_nodes.py.)"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpuvs.model import Status
from gpuvs.store import open_store


def test_weak_scaling_on_one_and_two_gloo_ranks_inside_the_users_torchrun(db: str) -> None:
    pytest.importorskip("torch")
    logs = Path(db).parent / "torchrun"  # not a torchelastic_* folder in $TMPDIR
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone",
           "--nproc-per-node=2", f"--log-dir={logs}", "-m", "gpuvs", "dist", "scaling",
           "--launched", "--backend", "gloo", "--steps", "3", "--batch", "4", "--rounds", "2",
           "--db", db]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300,
                          env=os.environ | {"COLUMNS": "200"})
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    title = "dist scaling · seed 003 CNN, DDP · gloo · cpu · batch 4 per rank (weak scaling)"
    assert out.count(title) == 1  # printed by rank 0 only
    assert "100% (base)" in out and "4 × 2" in out
    store = open_store(db)
    record = store.get_run(store.latest_run_id())
    assert record.config["launched"] is True and record.status == "finished"
    assert record.config["rounds"] == 2
    ms = store.measurements(record.run_id)
    # 1, 2, 1, 2: each N seconds after the N = 1 it is paired with, in the same processes
    assert [(m.case.size, m.case.param("round")) for m in ms] == [
        (1, "1"), (2, "1"), (1, "2"), (2, "2")]
    assert "each round's N against that round's N = 1" in out
    assert "N = 1 across the rounds" in out
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    for m, n in zip(ms, (1, 2, 1, 2), strict=True):
        assert m.status is Status.OK, m.reason  # ok: every rank held rank 0's weights
        assert m.case.size == n and len(m.samples) == 3 and m.first_call_s is not None
        k = m.counters
        assert (k["per_rank_batch"], k["global_batch"]) == (4, 4 * n)
        assert k["threads"] == max(1, (cores or 1) // n)
        assert k["samples_per_s"] == pytest.approx(4 * n / m.summary.median)
        assert k["compute_s"] > 0 and k["comm_s"] >= 0


def test_energy_is_read_over_four_seconds_of_steps_after_the_timed_ones(dist, db: str
                                                                         ) -> None:
    """`--energy`: the rank count trains on for ENERGY_WINDOW_S and more while the
    counters are read; a machine without one (this CI's VM has no RAPL) says why."""
    from gpuvs.machine import energy

    result = dist("scaling", "--backend", "gloo", "--nproc", "1", "--steps", "2",
                  "--batch", "4", "--rounds", "1", "--energy")
    assert result.exit_code == 0, result.output
    assert "energy: after its timed steps each rank count trains at least 4 s more" in (
        result.output)
    store = open_store(db)
    (m,) = store.measurements(store.latest_run_id())
    assert m.status is Status.OK and len(m.samples) == 2  # the timed steps are as asked
    assert m.counters[energy.WINDOW_S] >= energy.ENERGY_WINDOW_S
    assert "energy/image" in result.output
    found = energy.of(m)
    if found is None:  # no counter here: the note names why, no figure is made up
        assert f"energy/image: {energy.why_none(m)}" in result.output
    else:
        assert found.per_call_j > 0 and m.counters[energy.CALLS] >= 1
