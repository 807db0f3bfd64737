"""gpuvs agrees with triton's do_bench on a big kernel, on the GPU machine (`pytest -m gpu`):
the whole panel is benchmarks/peers.py, its results docs/accuracy.md."""

from __future__ import annotations

import statistics

import pytest

pytestmark = pytest.mark.gpu


def test_a_4096_product_agrees_with_do_bench_to_one_percent_in_every_repeat() -> None:
    torch = pytest.importorskip("torch")
    testing = pytest.importorskip("triton.testing")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    import gpuvs

    torch.backends.cuda.matmul.allow_tf32 = False
    a, b = torch.rand(4096, 4096, device="cuda"), torch.rand(4096, 4096, device="cuda")
    reference = statistics.median(
        testing.do_bench(lambda: a @ b, return_mode="median") / 1e3 for _ in range(3))
    for _ in range(3):
        m = gpuvs.measure(lambda: a @ b, device="cuda")
        assert m.summary is not None
        assert m.summary.median == pytest.approx(reference, rel=0.01)
