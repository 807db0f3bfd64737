"""Which part of gpuvs's watches moves a launch-bound loop: each part alone, in a fresh
process, the loop timed before and after (x.mul_(1.0) on 10⁴ float32 elements).

    PYTHONPATH=src python3 benchmarks/observation_parts.py PART

PART: nothing (the loop twice), nvml_init, nvml_read, telemetry_watch (NVML's readings
around a case, as the telemetry watch takes them), psutil, threadpool, quiet_blas,
contention_watch (two CPU snapshots and their judgement, as the contention watch takes
them), watches (every watch around a no-op, through `gpuvs.measure`)."""

from __future__ import annotations

import json
import statistics
import sys
import time


def per_call(fn, calls: int = 2000, repeats: int = 15) -> float:
    import torch

    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) / calls)
    return statistics.median(times)


def part(name: str) -> None:
    if name == "nothing":
        return
    if name == "nvml_init":
        import pynvml
        pynvml.nvmlInit()
    elif name == "nvml_read":
        from gpuvs.machine import telemetry
        telemetry.read("cuda:0")
    elif name == "telemetry_watch":
        from gpuvs.machine import telemetry
        readings = telemetry.Watch("cuda:0")
        readings.settled()
        readings.governed()
        readings.finish()
        readings.throttled()
    elif name == "psutil":
        from gpuvs.machine import contention
        contention.snapshot()
    elif name == "threadpool":
        from threadpoolctl import ThreadpoolController
        ThreadpoolController()
    elif name == "quiet_blas":
        from gpuvs.backends import get
        with get("torch").quiet_numpy_blas():
            pass
    elif name == "contention_watch":
        from gpuvs.machine import contention
        before = contention.snapshot()
        contention.contended(before, contention.snapshot(), 1.0)
    elif name == "watches":
        import gpuvs
        gpuvs.measure(lambda: None, device="cuda:0", budget_s=0.01)


def main() -> None:
    import torch

    x = torch.rand(10_000, device="cuda")
    loop = lambda: x.mul_(1.0)  # noqa: E731
    before = [per_call(loop) for _ in range(3)]
    part(sys.argv[1])
    after = [per_call(loop) for _ in range(3)]
    later = []
    for _ in range(3):
        time.sleep(1.0)
        later.append(per_call(loop))
    print(json.dumps({"part": sys.argv[1], "before": before, "after": after,
                      "after_1s_each": later}))


if __name__ == "__main__":
    main()
