"""The user's torch code counted on the CPU (torch's FlopCounterMode and a dispatch mode),
and `gpuvs.predict` on it: the CPU measured here, the GPU predicted."""

from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from tests.predicting.samples import synthetic  # noqa: E402

import gpuvs  # noqa: E402
from gpuvs.errors import UsageError  # noqa: E402
from gpuvs.predicting import profile  # noqa: E402
from gpuvs.predicting.counting import count  # noqa: E402


def test_a_product_counts_its_flops_bytes_one_launch_and_its_copies() -> None:
    a, b = torch.rand(64, 32), torch.rand(32, 16)
    work, out = count(lambda x, y: x @ y, (a, b), {})
    assert out.shape == (64, 16)
    assert work.flops == 2 * 64 * 32 * 16 and work.launches == 1
    assert work.bytes == 4 * (64 * 32 + 32 * 16 + 64 * 16)
    assert work.copied_in == (4 * 64 * 32, 4 * 32 * 16) and work.copied_out == (4 * 64 * 16,)
    assert work.dtype == "float32" and work.workload == ""


def test_views_launch_nothing_and_each_other_op_one_kernel() -> None:
    def fn(x: torch.Tensor) -> torch.Tensor:
        return (x.view(-1) * 2).reshape(10, 10).t().contiguous() + 1

    work, _ = count(fn, (torch.rand(100, dtype=torch.float64),), {})
    assert work.launches == 3  # mul, the copy that contiguous makes, add
    assert work.flops == 0 and work.dtype == "float64"


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
    assert f.speedup() == pytest.approx(f.cpu.summary.median / 10e-6)
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
        if (p.speedup() or 0) <= 1:
            break
        ahead_from = n
    assert f.crossover() == ahead_from
    assert "GPU (resident) predicted faster from" in str(f) and small.cpu.summary is not None


def test_sizes_without_a_batch_is_refused(tmp_path: Path) -> None:
    path = profile.save(synthetic(), tmp_path)
    with pytest.raises(UsageError, match="sizes= needs batch="):
        gpuvs.predict(lambda a: a, torch.ones(2), target=str(path), sizes=[1, 2])
