"""PyTorch on the CPU and on CUDA devices (`cuda:N`).

CUDA work is asynchronous: samples are CUDA-event intervals, read with one
synchronisation per batch, and every host-clock reading is preceded by
`torch.cuda.synchronize`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from gpuvs.backends import register
from gpuvs.backends.base import Backend, EventClock, cuda_index, device_count_reason
from gpuvs.errors import first_line
from gpuvs.measuring.protocol import Clock, HostClock
from gpuvs.model import on_gpu


def _recorded_event() -> Any:
    import torch

    e = torch.cuda.Event(enable_timing=True)
    e.record()
    return e


def _elapsed_ms(a: Any, b: Any) -> float:
    return float(a.elapsed_time(b))


# Graph replays timed together: enough for the events' 0.5 µs resolution to vanish.
GRAPH_TARGET_S = 0.02
GRAPH_REPLAYS_MAX = 1000
# A graph's own launch costs a few microseconds a replay: a call shorter than this is
# captured many times into one graph, so that its kernels, not the graph's launch,
# fill the replay.
GRAPH_FILL_S = 100e-6
GRAPH_CALLS_MAX = 64


def union_ns(spans: list[tuple[int, int]]) -> int:
    """Nanoseconds covered by the intervals: kernels that overlap (two streams) count
    once, as the device was busy once."""
    covered, end = 0, None
    for a, b in sorted(spans):
        if end is None or a > end:
            covered += b - a
            end = b
        elif b > end:
            covered += b - end
            end = b
    return covered


def _captured(call: Callable[[], object], calls: int = 1) -> Any:
    """`calls` calls captured as one CUDA graph, warmed up on a side stream first (as
    PyTorch requires: the first calls allocate and choose kernels outside the capture).
    A graph with nothing in it (the call launched on another library's stream) is no
    measurement of the call: that raises, like a capture the call refuses."""
    import warnings

    import torch

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):
            call()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with torch.cuda.graph(graph):
            for _ in range(calls):
                call()
    if any("empty" in str(w.message) for w in seen):
        raise RuntimeError("the captured graph is empty: the call ran on another stream")
    return graph


def _replay_s(graph: Any, reps: int) -> float:
    """Seconds per replay of `reps` replays back to back, between two events."""
    import torch

    begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    begin.record()
    for _ in range(reps):
        graph.replay()
    end.record()
    torch.cuda.synchronize()
    return float(begin.elapsed_time(end)) / 1e3 / reps


@register
class TorchBackend(Backend):
    name = "torch"
    device_kinds = ("cpu", "cuda")
    dtypes = ("float16", "bfloat16", "float32", "float64")
    module = "torch"

    def prepare_worker(self) -> None:
        # torch.compile compiles in the worker's own process. Inductor's default is a pool
        # of one compile process per core (16 on the H100 host) that starts with the first
        # compile, is stopped after a minute idle and starts again at the next: each start
        # imports torch in every one of them, CPU time spent while the next case (another
        # worker's) is timed. In a full `gpuvs seeds` there, cases right after a compile
        # were among those measured `contended` and measured again. A value the user set
        # is kept.
        os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")

    def _device_reason(self, device: str) -> str | None:
        if not on_gpu(device):
            return None
        import torch

        if torch.version.cuda is None:
            return f"no CUDA device (torch {torch.__version__} is a CPU-only build)"
        try:
            count = torch.cuda.device_count()
        except RuntimeError as e:  # driver too old or broken
            return f"CUDA driver error: {first_line(e)}"
        return device_count_reason(device, count, "torch")

    def clock(self, device: str) -> Clock:
        if on_gpu(device):
            import torch

            index = cuda_index(device)
            torch.cuda.set_device(index)
            return EventClock(lambda: torch.cuda.synchronize(index), _recorded_event,
                              _elapsed_ms)
        return HostClock()

    def from_numpy(self, a: np.ndarray, device: str, dtype: str) -> Any:
        import torch

        return torch.tensor(a, dtype=getattr(torch, dtype), device=device)

    def to_numpy(self, x: Any) -> np.ndarray:
        import torch

        t = x.detach().cpu()
        if t.dtype == torch.bfloat16:
            t = t.to(torch.float32)
        host: np.ndarray = t.numpy()
        return host

    def ones(self, shape: tuple[int, ...], dtype: str, device: str) -> Any:
        import torch

        return torch.ones(shape, dtype=getattr(torch, dtype), device=device)

    def memory_free(self, device: str) -> int:
        if not on_gpu(device):
            return super().memory_free(device)
        import torch

        idx = cuda_index(device)
        free, _ = torch.cuda.mem_get_info(idx)
        cached = torch.cuda.memory_reserved(idx) - torch.cuda.memory_allocated(idx)
        return int(free + cached)

    def empty_cache(self, device: str) -> None:
        if on_gpu(device):
            import torch

            torch.cuda.empty_cache()

    def peak_memory_reset(self, device: str) -> int | None:
        """torch's caching allocator: its peak reset, and the bytes its tensors hold now."""
        if not on_gpu(device):
            return None
        import torch

        torch.cuda.init()  # the allocator's counts exist once CUDA is initialised
        torch.cuda.reset_peak_memory_stats(cuda_index(device))
        return int(torch.cuda.memory_allocated(cuda_index(device)))

    def peak_memory_bytes(self, device: str) -> int | None:
        """The most bytes torch's tensors held at once since the reset (allocated, not
        the cache reserved around them)."""
        if not on_gpu(device):
            return None
        import torch

        return int(torch.cuda.max_memory_allocated(cuda_index(device)))

    def is_oom(self, exc: BaseException) -> bool:
        import torch

        return isinstance(exc, (torch.OutOfMemoryError, MemoryError))

    def is_fatal(self, exc: BaseException) -> bool:
        import torch

        accelerator_error = getattr(torch, "AcceleratorError", ())
        if isinstance(exc, accelerator_error):
            return True
        return isinstance(exc, RuntimeError) and "CUDA error" in str(exc) and not self.is_oom(exc)

    def cache_flusher(self, device: str) -> Callable[[], None]:
        """On a GPU: zero a buffer twice the device's L2 (what triton's do_bench does)."""
        if not on_gpu(device):
            return super().cache_flusher(device)
        import torch

        l2 = torch.cuda.get_device_properties(cuda_index(device)).L2_cache_size
        buf = torch.empty(2 * l2 // 4, dtype=torch.float32, device=device)

        def flush() -> None:
            buf.zero_()

        return flush

    def observes(self, device: str) -> bool:
        return on_gpu(device)

    def profile(self, call: Callable[[], object], device: str) -> dict[str, float]:
        """Count the CUDA kernels and host↔device copies of one call with torch.profiler.

        The counts are read off the profiler's raw (kineto) events: building its
        Python event list instead takes minutes for the 10⁵ kernels of a naive Jacobian."""
        if not on_gpu(device):
            return {}
        import torch
        from torch.autograd import DeviceType  # type: ignore[attr-defined]
        from torch.profiler import ProfilerActivity, profile

        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            call()
            torch.cuda.synchronize()
        counts = {"kernels": 0.0, "h2d_copies": 0.0, "d2h_copies": 0.0}
        spans: list[tuple[int, int]] = []
        for event in prof.profiler.kineto_results.events():
            if event.device_type() != DeviceType.CUDA:
                continue
            name = event.name()
            if "Memcpy HtoD" in name:
                counts["h2d_copies"] += 1
            elif "Memcpy DtoH" in name:
                counts["d2h_copies"] += 1
            elif not name.startswith(("Memcpy", "Memset")):
                counts["kernels"] += 1
                spans.append((event.start_ns(), event.start_ns() + event.duration_ns()))
        if spans:
            counts["busy_kernels_s"] = union_ns(spans) / 1e9
        return counts

    def busy_time(self, call: Callable[[], object], device: str) -> dict[str, float]:
        """The call captured as a CUDA graph (a call of a few microseconds many times over,
        so that the graph's own launch is spread thin) and replayed back to back between
        two events: what is left is the kernels' time (and the device's own gaps between
        them), without the host's launches. A call that cannot be captured (it syncs,
        it steps a non-capturable optimiser…) gets nothing here; the profiler's kernel
        time stands for it."""
        if not on_gpu(device):
            return {}
        import torch

        try:
            graph = _captured(call)
        except Exception:  # capture is optional: the profiler's kernel time remains
            torch.cuda.synchronize()
            return {}
        graph.replay()
        torch.cuda.synchronize()
        one = min(_replay_s(graph, 1) for _ in range(3))
        calls = max(1, min(GRAPH_CALLS_MAX, int(GRAPH_FILL_S / max(one, 1e-7))))
        if calls > 1:
            try:
                graph = _captured(call, calls)
            except Exception:
                torch.cuda.synchronize()
                return {}
            graph.replay()
            one = _replay_s(graph, 1)
        reps = max(1, min(GRAPH_REPLAYS_MAX, int(GRAPH_TARGET_S / max(one, 1e-7))))
        return {"busy_graph_s": _replay_s(graph, reps) / calls}

    def uses_tf32(self, device: str) -> bool:
        import torch

        return on_gpu(device) and torch.get_float32_matmul_precision() != "highest"

    def threads(self) -> int | None:
        import torch

        return int(torch.get_num_threads())

    @contextmanager
    def limit_threads(self, n: int) -> Iterator[None]:
        """torch's intra-op pool is its own; threadpoolctl does not reach it."""
        import torch

        before = torch.get_num_threads()
        torch.set_num_threads(n)
        try:
            with super().limit_threads(n):
                yield
        finally:
            torch.set_num_threads(before)

    def facts(self, device: str) -> dict[str, Any]:
        import torch

        facts = super().facts(device) | {"cuda": torch.version.cuda}
        if on_gpu(device) and self._device_reason(device) is None:
            idx = cuda_index(device)
            facts |= {
                "device_name": torch.cuda.get_device_name(idx),
                "tf32_matmul": bool(torch.backends.cuda.matmul.allow_tf32),
                "cudnn": torch.backends.cudnn.version(),
            }
        return facts
