"""gpuvs does not change what it measures: in a process that takes timed samples it only
reads sensors and holds thread pools (its watches); a profiler session slowed a
launch-bound loop timed after it by a third on an H100, so none runs there
(`benchmarks/observation.py` measures every observation; docs/accuracy.md has the table)."""

from __future__ import annotations

import statistics
import time

import pytest

pytestmark = pytest.mark.gpu


def _block(fn, calls: int = 2000) -> float:
    import torch

    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / calls


def test_a_launch_bound_loop_runs_as_fast_after_what_gpuvs_does_in_a_timed_process() -> None:
    """Interleaved in one process, so that the host's own regimes (on the H100 VM a block
    of `x.mul_` calls ran anywhere from 6.3 to 11 µs a call from one second to the next,
    with nothing else done) fall on both arms alike: blocks after gpuvs's watches against
    blocks after nothing. The medians agree within 3 %."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    from gpuvs.backends import get
    from gpuvs.machine.sensors import standard

    x = torch.rand(10_000, device="cuda")
    loop = lambda: x.mul_(1.0)  # noqa: E731
    _block(loop)

    def watched() -> None:
        watches = standard("cuda:0", hold=get("torch").quiet_numpy_blas)
        watches.case_started()
        with watches.timing():
            watches.sampling_started()
            watches.sampling_ended(1)
        watches.case_ended()

    after_watches, after_nothing = [], []
    for _ in range(40):
        watched()
        after_watches.append(_block(loop))
        after_nothing.append(_block(loop))
    a, b = statistics.median(after_watches), statistics.median(after_nothing)
    assert a == pytest.approx(b, rel=0.03), (a, b)


def test_gpuvs_compare_and_its_explanation_leave_the_callers_process_unobserved() -> None:
    """`gpuvs.compare` times in the caller's process and explains in a child: afterwards
    the caller's process has made no observation (no profiler session, no graph capture:
    gpuvs's own record of them is empty and torch's profiler is off), and a plain loop
    timed after it is not slowed the way an observation slows it (a profiler session made
    this loop twice as slow, for 10 s and more).

    The timing bound is loose on purpose. Timed before and after, not interleaved, the
    floor of this loop's blocks (their fastest quarter over 4 s) moved by +39 % in one
    run on an H100 VM and by −16 % in another, with this process unobserved both times:
    the host's regimes last longer than any span a test can wait out. The 3 % bound is
    held by the interleaved test above, on everything gpuvs does in a timed process."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    import gpuvs
    from gpuvs.measuring.watch import ensure_unobserved

    x = torch.rand(10_000, device="cuda")
    loop = lambda: x.mul_(1.0)  # noqa: E731
    _block(loop)

    def floor() -> float:
        blocks: list[float] = []
        end = time.monotonic() + FLOOR_SPAN_S
        while time.monotonic() < end:
            blocks += [_block(loop, 1000) for _ in range(4)]
            time.sleep(0.05)
        blocks.sort()
        return statistics.median(blocks[:len(blocks) // 4])

    before = floor()
    result = gpuvs.compare(lambda t: t * 2.0, torch.rand(10_000), budget_s=0.2)
    assert result.measurements, result
    assert result.explain() is not None
    ensure_unobserved()
    assert not torch.autograd.profiler._is_profiler_enabled
    after = floor()
    assert after < before * OBSERVED_SLOWDOWN, (before, after)


FLOOR_SPAN_S = 4.0
OBSERVED_SLOWDOWN = 1.6  # a profiler session: 2×; the host's regimes: up to +39 %
