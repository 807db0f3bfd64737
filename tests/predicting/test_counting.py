"""The user's torch code counted on the CPU (torch's FlopCounterMode and a dispatch mode),
and `gpuvs.predict` on it: the CPU measured here, the GPU predicted."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from tests.predicting.samples import synthetic  # noqa: E402

import gpuvs  # noqa: E402
from gpuvs.errors import UsageError  # noqa: E402
from gpuvs.predicting import pricing, profile  # noqa: E402
from gpuvs.predicting.counting import count  # noqa: E402


def test_a_product_counts_its_flops_bytes_one_launch_and_its_copies() -> None:
    a, b = torch.rand(64, 32), torch.rand(32, 16)
    work, out = count(lambda x, y: x @ y, (a, b), {})
    assert out.shape == (64, 16)
    assert work.flops == 2 * 64 * 32 * 16 and work.launches == 1
    assert work.bytes == 4 * (64 * 32 + 32 * 16 + 64 * 16)
    assert work.copied_in == (4 * 64 * 32, 4 * 32 * 16) and work.copied_out == (4 * 64 * 16,)
    assert work.dtype == "float32" and work.workload == ""


def test_a_gather_counts_the_rows_it_picks_not_the_table_it_picks_from() -> None:
    table, idx = torch.rand(100_000, 256), torch.randint(0, 100_000, (64,))
    picked, _ = count(lambda t, i: t[i], (table, idx), {})
    looked_up, _ = count(torch.nn.functional.embedding, (idx, table), {})
    rows = 4 * 64 * 256
    for work in (picked, looked_up):
        (tally,) = work.tallies
        assert tally.op_class == "gather"
        assert tally.bytes == work.bytes == 2 * rows + 8 * 64  # read, written, the indices
    every, _ = count(lambda t, i: t[i], (torch.rand(64, 256), torch.randperm(64)), {})
    assert every.bytes == 2 * rows + 8 * 64  # every row once: the whole table, as moved


def test_views_launch_nothing_and_each_other_op_one_kernel() -> None:
    def fn(x: torch.Tensor) -> torch.Tensor:
        return (x.view(-1) * 2).reshape(10, 10).t().contiguous() + 1

    work, _ = count(fn, (torch.rand(100, dtype=torch.float64),), {})
    assert work.launches == 3  # mul, the copy that contiguous makes, add
    assert work.flops == 0 and work.dtype == "float64"


def test_an_rms_norm_is_the_one_kernel_cuda_runs_not_the_six_ops_of_the_cpu() -> None:
    """On the CPU `F.rms_norm` runs as pow, mean, add, rsqrt, mul, mul; on CUDA as one
    fused kernel, which took 16.8 µs on an H100 where six launches were priced at 125 µs.
    `nn.RMSNorm` calls it; the ops around it are counted as before."""
    import torch.nn.functional as F

    x, z, w = torch.randn(16, 1024), torch.randn(16, 1024), torch.rand(1024)
    norm = (16 * 1024 * 2 + 1024) * 4.0  # the input and the output, and the weight
    for fn, args in ((lambda x, w: F.rms_norm(x, (1024,), w), (x, w)),
                     (torch.nn.RMSNorm(1024), (x,))):
        work, out = count(fn, args, {})
        assert [(t.op_class, t.ops) for t in work.tallies] == [("norm", 1)]
        assert work.launches == 1 and out.shape == x.shape
    gated, _ = count(lambda x, z, w: F.rms_norm(x * F.silu(z), (1024,), w), (x, z, w), {})
    assert [(t.op_class, t.ops) for t in gated.tallies] == [("elementwise", 2), ("norm", 1)]
    assert gated.tallies[1].bytes == norm
    assert gated.host_s >= 0  # timed on the ops the CPU runs


def test_a_modules_weights_stay_on_the_device_only_its_input_is_copied() -> None:
    net = torch.nn.Linear(64, 10)
    work, _ = count(net, (torch.rand(32, 64),), {})
    assert work.flops == 2 * 32 * 64 * 10
    assert work.copied_in == (4 * 32 * 64,) and work.copied_out == (4 * 32 * 10,)


def test_gpuvs_predict_measures_the_cpu_and_predicts_the_gpu(tmp_path: Path) -> None:
    path = profile.save(synthetic(), tmp_path)
    x = torch.rand(256, 256)
    f = gpuvs.predict(lambda a: a @ a, x, target=str(path), budget_s=0.05, name="square")
    assert f.cpu.summary is not None and f.cpu.case.device == "cpu"
    assert f.resident.seconds == pytest.approx(10e-6)  # one launch outweighs 1.3 µs of work
    assert f.end_to_end.seconds > f.resident.seconds
    assert f.speedup == pytest.approx(f.cpu.summary.median / 10e-6)
    assert f.crossover is None  # one call: no sizes
    text = str(f)
    assert "GPU resident, predicted: 10 µs (no interval: not validated)" in text
    assert "square: CPU measured" in text and "interval: not yet validated for syn" in text


def test_gpuvs_predict_names_a_profile_it_cannot_find(profiles: Path) -> None:
    with pytest.raises(UsageError, match="no device profile 'b200'"):
        gpuvs.predict(lambda: None, target="b200")


@pytest.mark.gpu
def test_cuda_tensors_are_refused_the_counting_is_on_the_cpu() -> None:
    with pytest.raises(UsageError, match="pass CPU tensors"):
        count(lambda x: x * 2, (torch.ones(4, device="cuda"),), {})


def test_gpuvs_predict_over_sizes_gives_the_predicted_crossover(tmp_path: Path) -> None:
    path = profile.save(synthetic(), tmp_path)
    f = gpuvs.predict(lambda a: a @ a, target=str(path), batch=lambda n: torch.rand(n, n),
                      sizes=[8, 512], budget_s=0.05, name="square")
    assert [n for n, _ in f.points] == [8, 512]
    small, big = (p for _, p in f.points)
    # 2·512³ FLOP at 50 TFLOP/s is 5.4 µs: the 10 µs launch still binds
    assert big.work.flops == 2 * 512**3 and big.resident.seconds == pytest.approx(10e-6)
    ahead_from = None  # the smallest size from which every predicted speedup is above 1
    for n, p in reversed(f.points):
        if (p.speedup or 0) <= 1:
            break
        ahead_from = n
    assert f.crossover == ahead_from and f.speedup == big.speedup
    assert "GPU (resident) predicted faster from" in str(f) and small.cpu.summary is not None


def test_sizes_without_a_batch_is_refused(tmp_path: Path) -> None:
    path = profile.save(synthetic(), tmp_path)
    with pytest.raises(UsageError, match="sizes= needs batch="):
        gpuvs.predict(lambda a: a, torch.ones(2), target=str(path), sizes=[1, 2])


@pytest.mark.parametrize("fn", [
    lambda a: np.linalg.inv(a), lambda a: time.sleep(0.001), lambda a: sum(range(1000))],
    ids=["numpy", "time.sleep", "python"])
def test_a_call_in_which_no_torch_op_runs_predicts_no_speedup(fn: Any, tmp_path: Path
                                                              ) -> None:
    """`np.linalg.inv` was predicted 13,100× faster and `time.sleep` 817×: priced as one
    GPU launch, though nothing of them would run on a GPU."""
    path = profile.save(synthetic(), tmp_path)
    a = np.random.default_rng(0).random((64, 64))
    with pytest.raises(UsageError, match="nothing in this call runs on a GPU as written: "
                                         "no torch op ran in it"):
        gpuvs.predict(fn, a, target=str(path), budget_s=0.05)


def test_the_answer_reads_as_a_comparison_does(tmp_path: Path) -> None:
    """Properties, a one-line repr, JSON with every GPU number under `predicted`."""
    path = profile.save(synthetic(), tmp_path)
    f = gpuvs.predict(lambda a: a @ a, torch.rand(64, 64), target=str(path), budget_s=0.05,
                      name="square")
    shown = repr(f)
    assert "\n" not in shown and len(shown) < 200, shown
    assert shown.startswith("<CallForecast square on syn: CPU ") and "TF32 off" in shown
    doc = json.loads(f.to_json())
    assert doc["predicted"]["resident"]["speedup"] == pytest.approx(f.speedup)
    assert doc["measured"]["cpu_median_s"] == f.cpu.summary.median
    assert doc["work"]["tf32"] is False
    sweep = gpuvs.predict(lambda a: a @ a, target=str(path), batch=lambda n: torch.rand(n, n),
                          sizes=[8, 64], budget_s=0.05, name="square")
    assert repr(sweep).startswith("<SweepForecast square on syn, sizes 8…64: GPU predicted "
                                  "faster from ")
    assert [p["size"] for p in json.loads(sweep.to_json())["points"]] == [8, 64]


def test_the_tf32_assumption_follows_torchs_setting_and_is_said(tmp_path: Path) -> None:
    """Priced at TF32's peak (400 TFLOP/s here) only when torch's float32 matmul
    precision lets cuBLAS use it, and said either way."""
    path = profile.save(synthetic(), tmp_path)
    x = torch.rand(2048, 2048)
    before = torch.get_float32_matmul_precision()
    try:
        full = gpuvs.predict(lambda a: a @ a, x, target=str(path), budget_s=0.05)
        torch.set_float32_matmul_precision("high")
        tf32 = gpuvs.predict(lambda a: a @ a, x, target=str(path), budget_s=0.05)
    finally:
        torch.set_float32_matmul_precision(before)
    assert not full.work.tf32 and tf32.work.tf32
    # 2·2048³ FLOP: 344 µs at 50 TFLOP/s, 43 µs at 400
    assert full.resident.seconds == pytest.approx(2 * 2048**3 / 50e12)
    assert tf32.resident.seconds == pytest.approx(2 * 2048**3 / 400e12)
    assert ("torch's float32 products predicted at full float32 (TF32 off: torch's float32 "
            "matmul precision 'highest')") in str(full)
    assert ("torch's float32 products predicted as TF32, a 10-bit mantissa (torch's float32 "
            "matmul precision 'high')") in str(tf32)


def test_a_cpu_time_measured_under_contention_is_said(tmp_path: Path) -> None:
    from dataclasses import replace

    from gpuvs.model import Caveat
    path = profile.save(synthetic(), tmp_path)
    f = gpuvs.predict(lambda a: a @ a, torch.rand(64, 64), target=str(path), budget_s=0.05)
    busy = replace(f, cpu=replace(f.cpu, caveats=(*f.cpu.caveats, Caveat.CONTENDED)))
    assert busy.contended and "(contended)" in repr(busy)
    assert ("the CPU time was measured while other processes took the CPU (contended): it "
            "reads slow, and the speedup predicted against it high") in str(busy)
    assert json.loads(busy.to_json())["measured"]["contended"] is True


def test_each_op_is_priced_by_its_class_and_a_class_not_measured_is_named(
        tmp_path: Path) -> None:
    """A sort and a scan, not one elementwise launch: the sort at its own class's cost,
    the scan (the profile has none) as a reduction, and the answer says so."""
    import dataclasses

    from tests.predicting.samples import op_costs
    partial = dataclasses.replace(synthetic(classes=True), op_classes=op_costs(("scan",)))
    path = profile.save(partial, tmp_path)
    f = gpuvs.predict(lambda a: torch.cumsum(torch.sort(a).values, 0), torch.rand(4096),
                      target=str(path), budget_s=0.05, name="sorted_sum")
    assert [(t.op_class, t.ops) for t in f.work.tallies] == [("scan", 1), ("sort", 1)]
    text = str(f)
    assert "1 op(s) of a scan priced as a reduction: not measured on syn" in text
    assert "counted 0 FLOP, 96 KiB moved, 2 op(s) (1 scan, 1 sort; " in text
    # the sort's own launch (20 µs) and a reduction's (10 µs), then the host's share of
    # its own cost (0 where the CPU run timed none beyond the launches; a clean clone's
    # run once timed 1.5 µs, and the test then expected all of it)
    assert f.resident.seconds == pytest.approx(30e-6 + pricing.HOST_SHARE * f.work.host_s)
    doc = json.loads(f.to_json())
    assert doc["work"]["by_class"][1] == {"op_class": "sort", "ops": 1, "bytes": 16 * 4096,
                                          "flops": 0.0, "syncs": False}
    assert doc["work"]["host_s"] == f.work.host_s
    assert "1 op(s) of a scan priced as a reduction: not measured on syn" in doc["about"]
