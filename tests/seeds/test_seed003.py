"""Seed 003: the cases of a quick, a full, a CIFAR and an epochs run, and its tables
from measurements made up here (a CPU-only run, and one with a GPU)."""

from __future__ import annotations

import pytest

from gpuvs import seeds, workloads
from gpuvs.model import Case, Measurement, Status
from gpuvs.report.seed_tables import claims_table
from gpuvs.seeds.base import SeedOptions
from gpuvs.seeds.seed003 import accuracy_table, epoch_table

NO_GPU = "no CUDA device (this machine shows no NVIDIA device)"


def _cases(**options: object) -> tuple[Case, ...]:
    return seeds.get("003").cases(SeedOptions(**options))  # type: ignore[arg-type]


def test_the_replays_are_the_posts_keras_fit_at_batch_32_gpu_first() -> None:
    cases = _cases()
    written = [c for c in cases if c.variant == "as_written"]
    assert [c.device for c in written] == ["cuda:0", "cpu"] and cases[:2] == tuple(written)
    assert {(c.param("framework"), c.size) for c in written} == {("keras", 32)}
    assert {c.param("steps") for c in written} == {"300", "30"}
    assert {c.param("dataset") for c in cases} == {"synthetic"}


def test_correct_steps_cover_keras_torch_and_the_tuned_gpu_step() -> None:
    cells = {(c.variant, c.param("framework"), c.device, c.size, c.param("compile"))
             for c in _cases(compile=True)}
    for device in ("cpu", "cuda:0"):
        assert ("correct", "keras", device, 32, "") in cells
        assert ("correct", "torch", device, 32, "") in cells
    assert ("tuned", "torch", "cuda:0", 256, "") in cells
    assert ("tuned", "torch", "cuda:0", 256, "on") in cells
    assert seeds.get("003").workloads() == {"cnn"}
    assert all(workloads.get("cnn").applies(c) for c in _cases(epochs=1))


def test_a_quick_run_fits_a_few_steps() -> None:
    cases = _cases(quick=True)
    assert {c.param("steps") for c in cases if c.variant == "as_written"} == {"50", "4"}


def test_torch_compile_runs_only_when_asked_for_and_its_row_says_how() -> None:
    assert not any(c.param("compile") for c in _cases())
    assert any(c.param("compile") for c in _cases(compile=True))
    assert _rows(_run(gpu=True))["GPU tuned + torch.compile"][5] == (
        "not run: add --compile (compiling the step takes 10 to 20 s)")


def test_data_and_epochs_options_reach_the_cases() -> None:
    cases = _cases(quick=True, cifar="/data/cifar-100-python.tar.gz", epochs=3)
    assert {(c.param("dataset"), c.param("cifar_path")) for c in cases} == {
        ("cifar100", "/data/cifar-100-python.tar.gz")}
    trained = [c for c in cases if c.param("epochs")]
    assert [(c.device, c.param("epochs"), c.variant) for c in trained] == [
        ("cuda:0", "3", "as_written"), ("cpu", "3", "as_written")]


def _m(case: Case, seconds: float | None, **counters: float) -> Measurement:
    if seconds is None:
        return Measurement(case, Status.UNAVAILABLE, reason=NO_GPU)
    return Measurement(case, Status.OK, samples=(seconds,) * 5, first_call_s=3 * seconds,
                       counters={"flops": 3 * 0.192e9 * case.size, **counters})


def _run(gpu: bool, **options: object) -> list[Measurement]:
    """Times near the post's: a step 15 ms on the GPU (Keras), 216 ms on the CPU."""
    step = {("as_written", "keras", "cpu"): 0.25, ("correct", "keras", "cpu"): 0.2,
            ("correct", "torch", "cpu"): 0.16, ("as_written", "keras", "cuda:0"): 0.02,
            ("correct", "keras", "cuda:0"): 0.008, ("correct", "torch", "cuda:0"): 0.003}
    ms = []
    for c in _cases(**options):
        key = (c.variant, c.param("framework"), c.device)
        if c.device != "cpu" and not gpu:
            ms.append(_m(c, None))
        elif c.variant == "tuned":
            ms.append(_m(c, 0.004 if c.param("compile") else 0.005, load_s=4e-5))
        elif c.size == 256:
            ms.append(_m(c, 0.009, load_s=2e-4, kernels=60))
        elif c.param("epochs"):
            ms.append(_m(c, step[key], epochs=2, epoch1_s=30.0, epoch2_s=25.0,
                         epoch1_train_acc=0.04, epoch1_val_acc=0.12, epoch2_train_acc=0.11,
                         epoch2_val_acc=0.17))
        else:
            ms.append(_m(c, step[key], load_s=3e-4, steps=30, kernels=(
                200 if c.param("framework") == "keras" else 60),
                **({"conv_tf32": 1.0} if c.device != "cpu" else {})))
    return ms


def _rows(ms: list[Measurement]) -> dict[str, tuple[str, ...]]:
    return {row[0]: row for row in claims_table(seeds.get("003"), ms).rows}


def test_without_a_gpu_the_table_renders_its_gpu_rows_as_skipped() -> None:
    rows = _rows(_run(gpu=False))
    assert rows["GPU: Keras fit, per step"][2:4] == ("skipped: no CUDA device",) * 2
    assert rows["CPU: Keras fit, per step"][2:5] == ("250 ms", "200 ms", "1.25")
    assert "synthetic images" in rows["data"][5]
    assert rows["GPU tuned: batch 256, bf16, channels-last"][5] == "needs a CUDA device"
    table = epoch_table(_run(gpu=False))
    assert any("unavailable: no CUDA device" in row for row in table.rows)
    assert "synthetic" in table.notes[0]


def test_with_a_gpu_every_row_has_its_numbers_and_reasons() -> None:
    rows = _rows(_run(gpu=True))
    assert rows["GPU vs CPU, Keras"][2:4] == ("12.5×", "25×")
    assert "60 kernels a step here, 200 through Keras" in rows["GPU: plain PyTorch step"][5]
    assert "8× the images cost 3× the time" in rows["GPU: plain PyTorch step"][5]
    assert "an epoch in" in rows["GPU tuned: batch 256, bf16, channels-last"][5]
    assert "paid back after" in _rows(_run(gpu=True, compile=True))[
        "GPU tuned + torch.compile"][5]
    keras_gpu = next(r for r in epoch_table(_run(gpu=True)).rows
                     if r[:3] == ("Keras step", "GPU", "32"))
    # 1329 steps × (8 ms + 0.3 ms loading)
    assert keras_gpu[3:7] == ("8 ms", "300 µs", "24 ms", "11 s")
    assert any("ran on TF32" in n for n in epoch_table(_run(gpu=True)).notes)
    assert not any("TF32" in n for n in epoch_table(_run(gpu=False)).notes)
    claims = claims_table(seeds.get("003"), _run(gpu=True)).notes
    assert any(n.startswith("TF32 was off for float32 matrix products") and
               "cuDNN's float32 convolutions ran on TF32" in n for n in claims)


def test_real_data_is_named_in_every_table() -> None:
    ms = _run(gpu=True, cifar="/data/c.tar.gz")
    assert "real CIFAR-100 (/data/c.tar.gz)" in _rows(ms)["data"][5]
    assert "real CIFAR-100" in epoch_table(ms).notes[0]


@pytest.mark.parametrize("gpu", [True, False])
def test_epochs_show_time_to_accuracy(gpu: bool) -> None:
    ms = _run(gpu=gpu, epochs=2)
    tables = seeds.get("003").extra_tables(ms)
    assert len(tables) == 2 and tables[1] == accuracy_table(ms)
    rows = tables[1].rows
    assert ("CPU", "2", "25 s", "55 s", "11.0%", "17.0%") in rows
    assert any(r[0] == "GPU" and r[2].startswith("unavailable") for r in rows) is not gpu


@pytest.mark.usefixtures("worker_env")
def test_a_small_cnn_run_goes_through_real_workers(tmp_path) -> None:
    from typer.testing import CliRunner

    from gpuvs.cli import app
    # One pass: each framework's step runs in a real worker once; a second pass would
    # start Keras and torch again only to add samples.
    result = CliRunner().invoke(app, ["run", "-w", "cnn", "-s", "4", "-d", "cpu", "--budget",
                                      "0.02", "--passes", "1", "--db",
                                      str(tmp_path / "r.sqlite")],
                                env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    import importlib.util

    with_keras = importlib.util.find_spec("keras") is not None
    # the two frameworks' steps after torch's four calibration probes
    assert ("6 ok" if with_keras else "5 ok, 1 skipped") in result.output
