"""On a GPU: the measured ceilings match what a plain torch benchmark shows the card does."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from gpuvs.analysis.ceilings import read
from gpuvs.cli import app
from gpuvs.store import open_store

pytestmark = [pytest.mark.gpu, pytest.mark.usefixtures("worker_env")]


def _plain_rate(fn, work: float, seconds: float) -> float:
    """Work per second of `fn`, timed the plain way: CUDA events around a loop of back-to-
    back calls that lasts about `seconds`, after a warm-up as long."""
    import torch

    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    fn()
    start.record()
    fn()
    end.record()
    end.synchronize()
    repeats = max(3, int(seconds / (start.elapsed_time(end) / 1e3)))
    for _ in range(repeats):
        fn()
    start.record()
    for _ in range(repeats):
        fn()
    end.record()
    end.synchronize()
    return work * repeats / (start.elapsed_time(end) / 1e3)


def test_ceilings_agree_with_a_plain_benchmark_within_ten_percent(db) -> None:
    """A big bf16 product on an H100 runs near 820 TFLOP/s in bursts of a few dozen calls
    and near 700 when calls follow each other for half a second (power and clocks); gpuvs
    samples with a sync between them land in that range. So its ceiling must lie within
    ten percent of the range a plain burst and a plain sustained loop span."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    result = CliRunner().invoke(app, ["ceilings", "-b", "torch", "--budget", "0.5", "--db", db],
                                env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    with open_store(db) as store:
        (record,) = store.runs()
        found = {(c.name, c.device): c.value for c in read(store.measurements(record.run_id))}
    n = 8192
    a = torch.rand(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.rand(n, n, device="cuda", dtype=torch.bfloat16)
    burst = _plain_rate(lambda: a @ b, 2.0 * n**3, seconds=0.03)
    sustained = _plain_rate(lambda: a @ b, 2.0 * n**3, seconds=0.5)
    src = torch.rand(1 << 28, device="cuda")
    dst = torch.empty_like(src)
    plain_copy = _plain_rate(lambda: dst.copy_(src), 2.0 * src.numel() * 4, seconds=0.2)
    bf16 = found["matmul bfloat16", "cuda:0"]
    print(f"bf16 matmul: gpuvs {bf16 / 1e12:.0f} TFLOP/s, plain {burst / 1e12:.0f} in a "
          f"burst, {sustained / 1e12:.0f} sustained; copy: gpuvs "
          f"{found['memory bandwidth (copy)', 'cuda:0'] / 1e12:.2f} TB/s, "
          f"plain {plain_copy / 1e12:.2f}")
    assert 0.9 * min(burst, sustained) <= bf16 <= 1.1 * max(burst, sustained)
    assert found["memory bandwidth (copy)", "cuda:0"] == pytest.approx(plain_copy, rel=0.10)
    for name in ("h2d pinned", "d2h pinned", "launch + sync latency", "per-op dispatch cost"):
        assert (name, "cuda:0") in found
