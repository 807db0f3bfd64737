"""Seed 000 through the real runner on this machine, and its table's fairness notes."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from gpuvs import seeds
from gpuvs.backends.base import machine_has_gpu
from gpuvs.cli import app
from gpuvs.seeds.base import SeedOptions

NO_GPU = not machine_has_gpu()


def test_seed_000_replays_the_post_and_measures_it_right() -> None:
    cases = seeds.get("000").cases(SeedOptions())
    written = {(c.backend, c.device, c.dtype) for c in cases if c.variant == "as_written"}
    # The post: float64 NumPy (np.random.random) against float32 torch on CPU and GPU.
    assert written == {("numpy", "cpu", "float64"), ("torch", "cpu", "float32"),
                       ("torch", "cuda:0", "float32")}
    correct = {(c.backend, c.device, c.dtype, c.param("threads"), c.param("data"))
               for c in cases if c.variant == "correct"}
    assert ("numpy", "cpu", "float32", "", "") in correct       # NumPy at torch's dtype
    assert ("torch", "cpu", "float32", "1", "") in correct      # one thread
    assert ("torch", "cuda:0", "float32", "", "end_to_end") in correct
    assert {c.size for c in cases} == {25600}


def test_gpuvs_seeds_prints_the_claim_the_replay_and_the_correct_figure(seed000_run
                                                                       ) -> None:
    out = seed000_run.output
    assert "seed 000" in out and "post claims" in out and "as written here" in out
    cpu_row = next(line for line in out.splitlines() if line.startswith("torch CPU: x @ y"))
    assert "932 µs" in cpu_row and cpu_row.count("µs") + cpu_row.count("ms") >= 3
    assert "dtype mismatch in 'GPU vs NumPy': numpy float64 against torch float32" in out
    if NO_GPU:
        gpu_row = next(line for line in out.splitlines() if line.startswith("torch CUDA: x @"))
        assert gpu_row.count("skipped: no CUDA device") == 2
    shown = CliRunner().invoke(app, ["show", "latest", "--db", str(seed000_run.db)],
                               env={"COLUMNS": "250"})
    assert "seed 000" in shown.output
    assert "Seed 000's product (1×n)@(n×100), float32 · as written" in shown.output


@pytest.mark.parametrize(("args", "message"), [
    (["--seed", "9"], "unknown seed '009'; known: 000"),
    (["--seed", "abc"], "unknown seed 'abc'"),
    (["--epochs", "-1"], "--epochs must be 0 or more, up to 1,000; got -1"),
    (["--data", "/nowhere/cifar.tar.gz"], "--data '/nowhere/cifar.tar.gz' is not a file"),
    (["--device", "tpu"], "unknown device 'tpu'"),
])
def test_bad_seed_options_are_one_line_and_exit_2(args, message, tmp_path) -> None:
    result = CliRunner().invoke(app, ["seeds", *args, "--db", str(tmp_path / "r.sqlite")],
                                env={"COLUMNS": "200"})
    assert result.exit_code == 2, result.output
    assert message in result.output and len(result.output.strip().splitlines()) == 1


def test_a_data_file_that_is_not_the_cifar_archive_is_refused_before_any_case(tmp_path
                                                                             ) -> None:
    """A wrong --data is said up front in one line, not found by crashed cases under a
    table that says "real CIFAR-100"."""
    import io
    import tarfile

    text = tmp_path / "notes.txt"
    text.write_text("not an archive")
    other = tmp_path / "other.tar.gz"
    with tarfile.open(other, "w:gz") as tar:
        tar.addfile(tarfile.TarInfo("readme"), io.BytesIO(b""))
    db = tmp_path / "r.sqlite"
    for path, said in ((text, "is not a readable tar archive"),
                       (other, "has no member 'cifar-100-python/train'")):
        result = CliRunner().invoke(app, ["seeds", "--seed", "3", "--data", str(path),
                                          "--db", str(db)], env={"COLUMNS": "200"})
        assert result.exit_code == 2, result.output
        assert said in result.output and str(path) in result.output
        assert len(result.output.strip().splitlines()) == 1
    assert not db.exists()  # nothing was started


def test_seeds_take_their_budget_from_the_projects_pyproject(seed000_run) -> None:
    """[tool.gpuvs] budget_s is the user's default for every command, seeds included; a
    seeds run's own shorter budget applies only where nothing was set."""
    from gpuvs.store import open_store
    with open_store(str(seed000_run.db)) as store:
        assert store.get_run(store.latest_run_id()).config["budget_s"] == 0.03


def test_a_seeds_budget_of_zero_is_refused_not_replaced(db) -> None:
    result = CliRunner().invoke(app, ["seeds", "--budget", "0", "--db", db])
    assert result.exit_code == 2
    assert ("--budget must be a positive number of seconds up to 604,800 (a week); got 0.0"
            in result.output)
