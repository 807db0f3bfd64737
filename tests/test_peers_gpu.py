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


def test_a_product_at_the_power_cap_is_sampled_over_the_whole_budget_and_says_throttled(
        ) -> None:
    """An 8192³ bf16 product runs an H100 into its 700 W cap, whose clocks then swing for
    about a second at a time: gpuvs samples the whole budget instead of one swing."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    from gpuvs.machine import telemetry
    if telemetry.read("cuda:0") is None:
        pytest.skip("no NVML: the power cap cannot be seen")
    import gpuvs
    from gpuvs.model import Caveat
    a = torch.rand(8192, 8192, device="cuda", dtype=torch.bfloat16)
    b = torch.rand(8192, 8192, device="cuda", dtype=torch.bfloat16)
    for _ in range(600):  # a second of it: the card meets its cap
        a @ b
    torch.cuda.synchronize()
    m = gpuvs.measure(lambda: a @ b, device="cuda", budget_s=1.0)
    if not m.counters.get("clocks_governed"):
        pytest.skip(f"this card ran the product without meeting a power limit ({m.counters})")
    assert m.summary is not None
    # The whole budget, less each batch's untimed lead-in (on the H100: 0.89 s of 1 s
    # sampled), where stopping at a tight CI took 75 ms.
    assert sum(m.samples) * m.loops >= 0.75
    assert Caveat.THROTTLED in m.caveats
