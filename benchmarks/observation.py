"""Which observations slow the process that made them, by how much and for how long; and how
far apart fresh processes time the same launch-bound loop (docs/accuracy.md).

On a GPU machine:

    PYTHONPATH=src python3 benchmarks/observation.py --out OUT

Three launch-bound loops, the ones the posts are about: `x.mul_(1.0)` on 10⁴ float32
elements, seed 000's product (1×25600 @ 25600×100, float32) and seed 004's naive Jacobian at
val = 20. In one process, each loop is timed (the median of repeats of a block of calls,
synchronised at both ends), then after each observation in turn, cheapest first:

- `watches`: what gpuvs itself does in a process that times — its watches' whole lifecycle
  (NVML's clocks and energy, psutil's CPU times, NumPy's BLAS held to one thread);
- `gpuvs.measure`: the measuring path, timing another call;
- `gpuvs.compare`: a comparison run in this process (the notebook's case);
- `profiler`: one torch.profiler session over 50 calls (what gpuvs's workers did between
  cases before 2026-11-26, and `Comparison.explain` did in the user's process);
- `graph`: a CUDA graph captured and replayed (GPU busy time, the same).

After the profiler the mul_ loop is timed again at intervals, to see whether the slowdown
wears off. Then each loop is timed in FRESH fresh processes, one after another, to give
the spread between processes that no single process's interval shows.

Writes OUT/observation.json and prints the table last.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

FRESH = 6
LOOPS = {"mul_ 1e4": (2000, 15), "seed000 product": (2000, 15), "jacobian naive 20": (1, 3)}


def build(name: str) -> Callable[[], object]:
    """One of the three calls, on cuda:0, ready to loop."""
    import torch

    if name == "mul_ 1e4":
        x = torch.rand(10_000, device="cuda")
        return lambda: x.mul_(1.0)
    if name == "seed000 product":
        torch.manual_seed(1004)
        a, b = torch.rand(1, 25600, device="cuda"), torch.rand(25600, 100, device="cuda")
        return lambda: a @ b
    from gpuvs import backends, workloads
    from gpuvs.model import Case
    from gpuvs.workloads.base import prepared_case
    case = Case("jacobian", "correct", "torch", "cuda:0", "float32", 20, (("method", "naive"),))
    prepared = prepared_case(workloads.get("jacobian"), backends.get("torch"), case,
                             checked=False)
    return prepared.call


def per_call(fn: Callable[[], object], calls: int, repeats: int) -> float:
    """The median over `repeats` of a block of `calls` calls, synchronised at both ends."""
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


def observe(what: str) -> None:
    """One observation, as it would be made in the timed process."""
    import torch

    if what == "watches":  # every watch around a no-op: their cost, without a workload's
        import gpuvs
        gpuvs.measure(lambda: None, device="cuda:0", budget_s=0.01)
    elif what == "gpuvs.measure":
        import gpuvs
        y = torch.rand(4096, device="cuda")
        gpuvs.measure(lambda: y.add_(1.0), device="cuda", budget_s=0.3)
    elif what == "gpuvs.compare":
        import gpuvs
        gpuvs.compare(lambda t: t * 2, torch.rand(1000), budget_s=0.2)
    elif what == "profiler":
        from torch.profiler import ProfilerActivity, profile
        z = torch.rand(10_000, device="cuda")
        with profile(activities=[ProfilerActivity.CUDA]):
            for _ in range(50):
                z.mul_(1.0)
            torch.cuda.synchronize()
    elif what == "graph":
        z = torch.rand(10_000, device="cuda")
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            z.mul_(1.0)
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            z.mul_(1.0)
        for _ in range(10):
            g.replay()
        torch.cuda.synchronize()


def interleaved(pairs: int = 40) -> dict[str, float]:
    """The mul_ loop in blocks alternating after gpuvs's watches and after nothing, in
    one process: the host's own regimes fall on both arms alike (medians, µs a call)."""
    import torch

    x = torch.rand(10_000, device="cuda")
    loop = lambda: x.mul_(1.0)  # noqa: E731
    watched, control = [], []
    for _ in range(pairs):
        observe("watches")
        watched.append(per_call(loop, 2000, 1))
        control.append(per_call(loop, 2000, 1))
    return {"after_watches": statistics.median(watched),
            "after_nothing": statistics.median(control),
            "spread_nothing": [min(control), max(control)]}


def in_one_process() -> dict[str, Any]:
    """Each loop before and after each observation, in this process."""
    loops = {name: build(name) for name in LOOPS}
    before = {name: per_call(fn, *LOOPS[name]) for name, fn in loops.items()}
    rows: dict[str, dict[str, float]] = {}
    for what in ("watches", "gpuvs.measure", "gpuvs.compare", "profiler", "graph"):
        observe(what)
        rows[what] = {name: per_call(fn, *LOOPS[name]) for name, fn in loops.items()}
    decay = []
    started = time.perf_counter()
    for wait in (0.0, 2.0, 10.0):
        time.sleep(max(0.0, wait - (time.perf_counter() - started)))
        decay.append((round(time.perf_counter() - started, 1),
                      per_call(loops["mul_ 1e4"], *LOOPS["mul_ 1e4"])))
    return {"before": before, "after": rows, "mul_after_profiler_over_time": decay}


def fresh(n: int) -> dict[str, list[float]]:
    """Each loop timed in `n` fresh processes, one after another."""
    found: dict[str, list[float]] = {name: [] for name in LOOPS}
    for _ in range(n):
        out = subprocess.run([sys.executable, __file__, "--one"], capture_output=True,
                             text=True, check=True, env=os.environ).stdout
        for name, value in json.loads(out.strip().splitlines()[-1]).items():
            found[name].append(value)
    return found


def main() -> None:
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("--out", default=os.environ.get("OUT", "out"))
    args.add_argument("--fresh", type=int, default=FRESH)
    args.add_argument("--one", action="store_true", help="(one fresh process's timings)")
    a = args.parse_args()
    if a.one:
        print(json.dumps({name: per_call(build(name), *LOOPS[name]) for name in LOOPS}))
        return
    ab = interleaved()
    result = {"interleaved": ab, "one_process": in_one_process(), "fresh": fresh(a.fresh)}
    Path(a.out).mkdir(parents=True, exist_ok=True)
    Path(a.out, "observation.json").write_text(json.dumps(result, indent=1))
    one = result["one_process"]
    print(f"{'loop':<20} {'before':>10} " + " ".join(f"{w:>14}" for w in one["after"])
          + f" {'fresh min':>10} {'fresh max':>10}")
    for name in LOOPS:
        b = one["before"][name]
        cells = " ".join(f"{100 * (one['after'][w][name] / b - 1):>+13.1f}%"
                         for w in one["after"])
        fr = result["fresh"][name]
        print(f"{name:<20} {b * 1e6:>8.2f}µs {cells} {min(fr) * 1e6:>8.2f}µs "
              f"{max(fr) * 1e6:>8.2f}µs")
    print(f"mul_ interleaved, medians: after watches {ab['after_watches'] * 1e6:.2f} µs, "
          f"after nothing {ab['after_nothing'] * 1e6:.2f} µs (nothing's blocks: "
          f"{ab['spread_nothing'][0] * 1e6:.2f}–{ab['spread_nothing'][1] * 1e6:.2f} µs)")
    print("mul_ after the profiler, over time (s, µs):",
          [(t, round(v * 1e6, 2)) for t, v in one["mul_after_profiler_over_time"]])


if __name__ == "__main__":
    main()
