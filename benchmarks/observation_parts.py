"""Which part of gpuvs's watches moves a launch-bound loop: each part alone, in a fresh
process, the loop timed before and after (x.mul_(1.0) on 10⁴ float32 elements).

    PYTHONPATH=src python3 benchmarks/observation_parts.py PART

PART: nothing (the loop twice), nvml_init, nvml_read, telemetry_watch, psutil, threadpool,
quiet_blas, contention_watch, watches."""

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
        from gpuvs.machine.watches import Telemetry
        w = Telemetry("cuda:0")
        w.case_started()
        w.settled()
        w.governed()
        w.case_ended()
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
        from gpuvs.machine.watches import Contention
        w = Contention(1.0)
        w.case_started()
        w.case_ended()
    elif name == "watches":
        from gpuvs.backends import get
        from gpuvs.machine.watches import standard
        w = standard("cuda:0", hold=get("torch").quiet_numpy_blas)
        w.case_started()
        with w.timing():
            w.sampling_started()
            w.sampling_ended(1)
        w.case_ended()


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
