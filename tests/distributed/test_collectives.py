"""`gpuvs dist collectives` for real — two Gloo ranks under torchrun, every result checked,
times from the slowest rank, the NCCL variables passed on — and each collective's
protocol and check on one rank in this process."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from tests.helpers import invoke
from tests.helpers import run_id as run_id_of

from gpuvs.distributed import collectives
from gpuvs.distributed.bandwidth import COLLECTIVES
from gpuvs.distributed.rank import RankResult, Ranks
from gpuvs.model import Case, Status
from gpuvs.store import open_store


def test_two_gloo_ranks_measure_and_check_every_collective(dist, db, monkeypatch,
                                                           tmp_path: Path) -> None:
    monkeypatch.setenv("NCCL_NVLS_ENABLE", "0")  # the multicast switch a host may set
    monkeypatch.setenv("NCCL_DEBUG", "WARN")
    monkeypatch.setattr(os, "getloadavg", lambda: (64.0, 64.0, 64.0))  # as `gpuvs run`:
    out_json = tmp_path / "run.json"
    result = dist("collectives", "--backend", "gloo", "--nproc", "2", "--sizes", "1KiB,64KiB",
                  "--samples", "3", "--budget", "0", "--json", str(out_json))
    assert result.exit_code == 0, result.output
    assert result.output.startswith("this machine is busy: load 64.0 on ")  # named first
    assert "NCCL variables on every rank: NCCL_DEBUG=WARN NCCL_NVLS_ENABLE=0" in result.output
    run_id = run_id_of(result.output)
    ms = open_store(db).measurements(run_id)
    # Saved as each ends: a case another process disturbed is taken again, and ends later.
    assert sorted((m.case.size, m.case.param("collective")) for m in ms) == sorted(
        (size, name) for size in (1024, 65536) for name in COLLECTIVES)
    for m in ms:  # ok means every rank's output matched the known result
        assert m.status is Status.OK, m.reason
        assert len(m.samples) == 3 and m.loops >= 1 and m.first_call_s is not None  # budget 0
        assert m.timer == "host"
        assert m.counters["bytes"] == m.case.size and m.counters["nproc"] == 2
    for name in COLLECTIVES:
        assert f"dist · {name} · gloo · 2 × cpu" in result.output
    assert "busbw = algbw × 2(n−1)/n (nccl-tests; 2 ranks: ×1)" in result.output
    doc = json.loads(out_json.read_text())
    assert doc["run"]["config"]["kind"] == "dist" and len(doc["measurements"]) == 8
    shown = invoke("show", run_id, "--db", db)
    assert shown.exit_code == 0 and "dist · reduce_scatter · gloo · 2 × cpu" in shown.output


def _case(name: str, size: int = 4096) -> Case:
    return Case("dist_collective", "correct", "gloo", "cpu", "float32", size,
                (("collective", name), ("nproc", "1")))


def _measured(r: Ranks, case: Case) -> RankResult:
    """One case alone, with exactly two samples (a budget of 0)."""
    ((_, result),) = collectives.run_cases(r, [case], samples=2, budget_s=0)
    return result


@pytest.mark.parametrize("name", COLLECTIVES)
def test_each_collective_passes_its_check_and_is_sampled(one_rank: Ranks, name: str) -> None:
    result = _measured(one_rank, _case(name))
    assert result.status is Status.OK, result.reason
    assert len(result.samples) == 2 and result.warmups == collectives.WARMUP_CALLS
    m = collectives.record(_case(name), [result], threads=2)
    assert m.status is Status.OK
    assert {k: m.counters[k] for k in ("bytes", "nproc", "threads")} == {
        "bytes": 4096.0, "nproc": 1.0, "threads": 2.0}
    # the watches every entry point times in: other processes' CPU time, peak memory
    assert 0 <= m.counters["others_cpu_share"] <= 1 and m.counters["peak_host_bytes"] >= 0


def test_a_wrong_reduction_is_caught(one_rank: Ranks) -> None:
    op = collectives.OPS["all_reduce"](one_rank, 16)
    op.call()
    assert op.check() == ""
    op.clear()  # zeros where the sum over the one rank (1) belongs
    assert op.check() == ("rank 0: the all_reduce sum of 1…1 holds 0 where 1 was expected "
                          "(16 of 16 elements wrong)")


def test_a_size_that_cannot_fit_is_skipped_before_allocating(one_rank: Ranks,
                                                             monkeypatch) -> None:
    import psutil

    class Tight:
        available = 1024**2

    monkeypatch.setattr(psutil, "virtual_memory", lambda: Tight())
    result = _measured(one_rank, _case("all_reduce", 1024**3))
    assert result.status is Status.SKIPPED
    assert result.reason.startswith("needs 1.25 GiB per rank × 1 on the host + 64 MiB "
                                    "headroom; 1 MiB free")
