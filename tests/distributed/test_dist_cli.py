"""Bad input to `gpuvs dist` is one line naming the value, exit code 2, before any rank."""

from __future__ import annotations

import pytest
from tests.helpers import invoke
from typer.testing import CliRunner

from gpuvs.cli import app


@pytest.mark.parametrize(("args", "message"), [
    (["collectives", "--nproc", "0"], "--nproc must be a whole number from 1; got 0"),
    (["scaling", "--backend", "mpi"], "unknown backend 'mpi'; accepted: nccl, gloo"),
    (["collectives", "--backend", "gloo", "--sizes", "6"],
     "size '6' is not a whole number of float32 elements"),
    (["collectives", "--backend", "gloo", "--sizes", "1MiB:1KiB"],
     "size range '1MiB:1KiB' ends before it starts"),
    (["collectives", "--backend", "gloo", "-c", "alltoall"],
     "unknown collective 'alltoall'; accepted: all_reduce, all_gather, reduce_scatter"),
    (["collectives", "--samples", "0"], "--samples must be above 0; got 0"),
    (["scaling", "--steps", "0"], "--steps must be above 0; got 0"),
    (["scaling", "--timeout", "-1"],
     "--timeout must be above 0, up to 604,800; got -1"),
    # Past what a lock or a process group can wait: it crashed every rank, recorded as a crash.
    (["collectives", "--backend", "gloo", "--timeout", "1e10"],
     "--timeout must be above 0, up to 604,800; got 1e+10"),
    (["scaling", "--backend", "gloo", "--setup-timeout", "inf"],
     "--setup-timeout must be above 0, up to 604,800; got inf"),
    (["scaling", "--rounds", "0"], "--rounds must be above 0; got 0"),
    (["scaling", "--backend", "gloo", "--nproc", "2", "--strong", "--batch", "5"],
     "--strong splits the global --batch 5 over the ranks; 5 is not divisible by 2"),
    (["scaling", "--backend", "gloo", "--batch", "0"], "--batch must be a whole number from 1"),
    (["collectives", "--launched"], "--launched expects torchrun's RANK, WORLD_SIZE"),
    # A rank is a process of this host: 100,000 of them once ran into the OOM killer.
    (["collectives", "--backend", "gloo", "--nproc", "100000"],
     "--nproc 100000 with gloo: this host runs at most"),
    (["scaling", "--backend", "gloo", "--nproc", "100000"],
     "--nproc 100000 with gloo: this host runs at most"),
    (["collectives", "--backend", "gloo", "--sizes", "99999999GiB"],
     "size '99999999GiB' is more than 1 TiB"),
    (["collectives", "--backend", "gloo", "--sizes", ""], "-s/--sizes was given an empty value"),
    (["collectives", "--nproc", "x"], "Invalid value for '--nproc'"),
])
def test_bad_input_is_one_line_and_exit_2(args: list[str], message: str, db: str,
                                          monkeypatch) -> None:
    pytest.importorskip("torch")
    for variable in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"):
        monkeypatch.delenv(variable, raising=False)
    result = invoke("dist", *args, "--db", db)
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_a_world_size_that_is_no_number_is_one_line(db: str, monkeypatch) -> None:
    pytest.importorskip("torch")
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("LOCAL_RANK", "0")
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "1")
    monkeypatch.setenv("WORLD_SIZE", "two")
    result = CliRunner().invoke(app, ["dist", "collectives", "--launched", "--db", db])
    assert result.exit_code == 2, result.output
    assert result.output.strip() == ("error: WORLD_SIZE 'two' is not a whole number from 1; "
                                     "--launched reads it from torchrun")


def test_nccl_without_a_gpu_says_to_use_gloo(db: str) -> None:
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA device")
    result = CliRunner().invoke(app, ["dist", "scaling", "--backend", "nccl", "--db", db])
    assert result.exit_code == 2
    assert "--backend nccl needs a CUDA device and this machine has none; use --backend " \
           "gloo" in result.output


def test_dist_lists_its_two_commands() -> None:
    result = invoke("dist", "--help")
    assert result.exit_code == 0
    assert "scaling" in result.output and "collectives" in result.output


def test_nodes_that_run_unequal_numbers_of_ranks_are_one_line(db: str, monkeypatch) -> None:
    """The tables say nodes × ranks per node: torchrun may run 2 on one node and 1 on
    another, gpuvs does not."""
    pytest.importorskip("torch")
    for variable, value in (("RANK", "0"), ("LOCAL_RANK", "0"), ("LOCAL_WORLD_SIZE", "2"),
                            ("WORLD_SIZE", "3"), ("GROUP_WORLD_SIZE", "2")):
        monkeypatch.setenv(variable, value)
    result = CliRunner().invoke(app, ["dist", "collectives", "--launched", "--backend", "gloo",
                                      "--db", db])
    assert result.exit_code == 2, result.output
    assert result.output.strip() == (
        "error: WORLD_SIZE 3 is not GROUP_WORLD_SIZE 2 × LOCAL_WORLD_SIZE 2: --launched needs "
        "the same --nproc-per-node on every node")
