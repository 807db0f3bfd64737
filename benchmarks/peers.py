"""gpuvs against the tools people use instead, on one panel of cases (docs/accuracy.md).

Each case is timed R times (`--repeats`) by each tool that applies:

- gpuvs: `gpuvs.measure` (events back to back, the median, its 95 % CI);
- torch.utils.benchmark `Timer.blocked_autorange` and `adaptive_autorange` (host clock,
  synchronised; the median);
- triton `do_bench` and `do_bench_cudagraph` (events; `return_mode="median"`);
- `cupyx.profiler.benchmark` (CuPy cases; its GPU times, the median);
- the profiler's kernel time: torch.profiler over PROFILE_CALLS calls, the union of the
  kernels' intervals per call (what the GPU itself was busy with).

The repeats are interleaved (each repeat runs every tool once, starting one tool further
on each time), so a drift of the GPU's clocks moves one repeat's tools alike. It prints,
per case and tool, the median of the R answers, their spread (max/min − 1) and the median
time to answer; for gpuvs, against the peers' median of its own repeat (the median of
do_bench, the two torch.utils.benchmark answers and the profiler's): in how many repeats
it was within 1 %, how often its CI covered that median, and how often it covered the
next repeat's gpuvs answer; and how far apart the peers were in each repeat. A first
section times the command line: `gpuvs run -w matmul -b torch -d cuda -s 4096` end to
end against a one-line `python -c` with do_bench.

A case that runs into the GPU's power limit (the bf16 product) is `steady`: before each
tool, the call runs alone for STEADY_S, so that every tool meets the same capped clocks
rather than the first one a cool GPU.

    PYTHONPATH=src python3 benchmarks/peers.py [--repeats 10] [--budget 1] [--out DIR]

Runs on a CPU too (the CPU case only; every GPU tool says why it was skipped).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpuvs.errors import one_line

PROFILE_CALLS = 20
STEADY_S = 1.0
# The accuracy target covers kernels at least this long.
KERNEL_TARGET_S = 100e-6
PEERS = ("do_bench", "tub_blocked", "tub_adaptive", "profiler_kernels")
Fn = Callable[[], object]


@dataclass
class Case:
    name: str
    device: str
    build: Callable[[], Fn]
    needs: str = "torch"  # the library whose absence skips it
    steady: bool = False  # each tool after STEADY_S of the call alone (power-capped)
    answers: dict[str, list[float]] = field(default_factory=dict)
    seconds: dict[str, list[float]] = field(default_factory=dict)
    samples: list[list[float]] = field(default_factory=list)  # gpuvs's, per repeat
    caveats: list[list[str]] = field(default_factory=list)  # gpuvs's, per repeat
    cis: list[tuple[float, float]] = field(default_factory=list)  # gpuvs's stated CI, per repeat
    skipped: dict[str, str] = field(default_factory=dict)


def _torch_cases() -> list[Case]:
    def product(n: int, dtype: str) -> Callable[[], Fn]:
        def build() -> Fn:
            import torch

            torch.backends.cuda.matmul.allow_tf32 = False
            a = torch.rand(n, n, device="cuda", dtype=getattr(torch, dtype))
            b = torch.rand(n, n, device="cuda", dtype=getattr(torch, dtype))
            return lambda: a @ b
        return build

    def scale(n: int) -> Callable[[], Fn]:
        def build() -> Fn:
            import torch

            x = torch.rand(n, device="cuda")
            return lambda: x.mul_(5)
        return build

    def seed000() -> Fn:
        import torch

        torch.manual_seed(1004)
        x, y = torch.rand(1, 25600, device="cuda"), torch.rand(25600, 100, device="cuda")
        return lambda: x @ y

    def gru_pair() -> Fn:
        import torch

        g1 = torch.nn.GRU(10, 20, batch_first=True).cuda()
        g2 = torch.nn.GRU(10, 20, batch_first=True).cuda()
        x1, x2 = torch.randn(32, 5, 10, device="cuda"), torch.randn(32, 5, 10, device="cuda")

        def pair() -> object:
            with torch.no_grad():
                g1(x1)
                return g2(x2)
        return pair

    return [Case("matmul 4096³ float32 (TF32 off)", "cuda", product(4096, "float32")),
            Case("matmul 8192³ bfloat16", "cuda", product(8192, "bfloat16"), steady=True),
            Case("x.mul_(5), 10⁴ float32", "cuda", scale(10_000)),
            Case("x.mul_(5), 10⁸ float32", "cuda", scale(100_000_000)),
            Case("seed 000: (1×25600)@(25600×100)", "cuda", seed000),
            Case("seed 001: two GRUs, no_grad", "cuda", gru_pair)]


def _other_cases() -> list[Case]:
    def cupy_scale() -> Fn:
        import cupy as cp

        x = cp.ones(100_000_000, dtype=cp.float64)
        return lambda: cp.multiply(x, 5, out=x)

    def cpu_product() -> Fn:
        import numpy as np

        rng = np.random.default_rng(0)
        a, b = (rng.random((1024, 1024), dtype=np.float32) for _ in range(2))
        return lambda: a @ b

    return [Case("CuPy x *= 5, 10⁸ float64", "cuda", cupy_scale, needs="cupy"),
            Case("NumPy matmul 1024³ float32 (CPU)", "cpu", cpu_product, needs="numpy")]


def _gpuvs(fn: Fn, case: Case, budget: float) -> float:
    import gpuvs

    m = gpuvs.measure(fn, device=case.device, budget_s=budget)
    assert m.summary is not None, m.reason
    case.samples.append(list(m.samples))
    case.caveats.append([c.value for c in m.caveats])
    case.cis.append((m.summary.ci_low, m.summary.ci_high))  # as stated: its floor included
    return m.summary.median


def _tub(fn: Fn, adaptive: bool) -> float:
    from torch.utils.benchmark import Timer

    timer = Timer(stmt="fn()", globals={"fn": fn})
    m = timer.adaptive_autorange(max_run_time=1.0) if adaptive else timer.blocked_autorange(
        min_run_time=0.2)
    return float(m.median)


def _do_bench(fn: Fn, graph: bool) -> float:
    import triton.testing as tt

    ms = (tt.do_bench_cudagraph(fn, return_mode="median") if graph
          else tt.do_bench(fn, return_mode="median"))
    return float(ms) / 1e3


def _cupyx(fn: Fn) -> float:
    import cupyx.profiler

    result = cupyx.profiler.benchmark(fn, n_repeat=100, n_warmup=10)
    return float(statistics.median(result.gpu_times[0]))


def _profiler_kernels(fn: Fn) -> float:

    from gpuvs.backends.torch_ import TorchBackend
    for _ in range(3):
        fn()
    busy = TorchBackend().profile(lambda: [fn() for _ in range(PROFILE_CALLS)], "cuda:0")
    return busy["busy_kernels_s"] / PROFILE_CALLS if "busy_kernels_s" in busy else float("nan")


def _tools(case: Case, budget: float) -> dict[str, Callable[[Fn], float]]:
    tools: dict[str, Callable[[Fn], float]] = {"gpuvs": lambda fn: _gpuvs(fn, case, budget)}
    has = {name: _importable(name) for name in ("torch", "triton", "cupy")}
    if has["torch"]:
        tools |= {"tub_blocked": lambda fn: _tub(fn, False),
                  "tub_adaptive": lambda fn: _tub(fn, True)}
    if case.device == "cuda":
        if has["triton"]:
            tools["do_bench"] = lambda fn: _do_bench(fn, False)
        if has["triton"] and case.needs == "torch":  # a CuPy call captures as an empty graph
            tools["do_bench_cudagraph"] = lambda fn: _do_bench(fn, True)
        if case.needs == "cupy":
            tools |= {"cupyx": _cupyx}
        if has["torch"]:
            tools["profiler_kernels"] = _profiler_kernels
    return tools


def _importable(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is not None


def _cuda() -> str | None:
    """Why no CUDA case can run here, or None."""
    if not _importable("torch"):
        return "torch is not installed"
    import torch

    return None if torch.cuda.is_available() else "no CUDA device"


def run_case(case: Case, repeats: int, budget: float) -> None:
    """Repeat-major: each repeat runs every tool once, in turn, so that a GPU whose clocks
    drift over the minute moves all the tools of one repeat alike, and gpuvs is held
    against the peers of its own repeat. Each repeat starts one tool further on, so that
    no tool always meets the card first: fresh from the last case, or still cool (on the
    H100 the first tool of a case read the bf16 product 2 % faster, and a float32 product
    0.7 % faster, than the rest of its repeat)."""
    fn = case.build()
    fn()
    tools = list(_tools(case, budget).items())
    for r in range(repeats):
        for name, tool in tools[r % len(tools):] + tools[:r % len(tools)]:
            if name in case.skipped:
                continue
            if case.steady:
                _load(fn, STEADY_S)
            start = time.perf_counter()
            try:
                value = tool(fn)
            except Exception as e:  # one tool failing must not hide the others' answers
                case.skipped[name] = one_line(e)[:140]
                continue
            case.seconds.setdefault(name, []).append(time.perf_counter() - start)
            case.answers.setdefault(name, []).append(value)


def _load(fn: Fn, seconds: float) -> None:
    """The call alone, back to back, for `seconds`: the GPU at its steady clocks."""
    import torch

    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        for _ in range(10):
            fn()
        torch.cuda.synchronize()


def summary(case: Case) -> dict[str, Any]:
    """Per tool: median answer, spread over repeats, median time to answer, the raw
    answers. For gpuvs, per repeat, against the median of the peers' answers in the same
    repeat: how far off it was, and whether its CI covered that median; and whether its
    CI covered the next repeat's gpuvs answer (what a repeat gives)."""
    out: dict[str, Any] = {"case": case.name, "device": case.device, "tools": {},
                           "skipped": case.skipped}
    for name, values in case.answers.items():
        out["tools"][name] = {"median_s": statistics.median(values),
                              "spread": max(values) / min(values) - 1,
                              "time_to_answer_s": statistics.median(case.seconds[name]),
                              "answers_s": values}
    peers = [p for p in PEERS if p in case.answers]
    ours = case.answers.get("gpuvs", [])
    if not peers or not ours:
        return out
    ci = case.cis  # each repeat's interval, as gpuvs stated it
    rounds = min(len(ours), *(len(case.answers[p]) for p in peers))
    consensus = [statistics.median(case.answers[p][r] for p in peers) for r in range(rounds)]
    off = [ours[r] / consensus[r] - 1 for r in range(rounds)]
    kernel = case.answers.get("profiler_kernels")
    out |= {"peers_median_s": statistics.median(consensus), "repeats": rounds,
            "kernel_s": statistics.median(kernel) if kernel else None,
            "gpuvs_off": off,
            "gpuvs_within_1pct": sum(abs(o) <= 0.01 for o in off),
            "gpuvs_covered": sum(lo <= c <= hi
                                 for (lo, hi), c in zip(ci, consensus, strict=False)),
            "gpuvs_covers_do_bench": sum(
                lo <= d <= hi for (lo, hi), d in zip(ci, case.answers.get("do_bench", []),
                                                     strict=False)),
            "gpuvs_covers_next": sum(lo <= nxt <= hi
                                     for (lo, hi), nxt in zip(ci, ours[1:], strict=False)),
            "peers_apart": [max(case.answers[p][r] for p in peers)
                            / min(case.answers[p][r] for p in peers) - 1 for r in range(rounds)],
            "gpuvs_ci": ci, "gpuvs_ci_rel": [(hi - lo) / 2 / ours[i]
                                             for i, (lo, hi) in enumerate(ci)],
            "gpuvs_samples_s": case.samples, "gpuvs_caveats": case.caveats}
    return out


def cli_timing(repeats: int) -> dict[str, Any]:
    """Process time to an answer: the gpuvs command for one case (the 4096² product on
    data already on the device) against a do_bench one-liner; for gpuvs also the time to
    its first case line, which is when a user first sees the number."""
    env = os.environ | {"PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}
    with tempfile.TemporaryDirectory() as tmp:
        one = [sys.executable, "-m", "gpuvs", "run", "-w", "matmul", "-b", "torch", "-d",
               "cuda", "-s", "4096", "-a", "shape=square", "-a", "data=resident",
               "--budget", "1", "--db", str(Path(tmp, "cli.sqlite"))]
        commands = {
            "gpuvs run, one case (2 passes, the default)": one,
            "gpuvs run, one case, --passes 1": [*one, "--passes", "1"],
            "do_bench one-liner": [sys.executable, "-c", (
                "import torch, triton.testing as t; torch.backends.cuda.matmul.allow_tf32 = "
                "False; a = torch.rand(4096, 4096, device='cuda'); "
                "print(t.do_bench(lambda: a @ a, return_mode='median'))")]}
        out: dict[str, Any] = {}
        for name, cmd in commands.items():
            took, first = [], []
            for _ in range(repeats):
                start = time.perf_counter()
                proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        text=True, env=env)
                assert proc.stdout is not None
                seen = None
                for line in proc.stdout:
                    if seen is None and (line.startswith("[1/") or "do_bench" in name):
                        seen = time.perf_counter() - start
                err = proc.stderr.read() if proc.stderr else ""
                proc.wait()
                took.append(time.perf_counter() - start)
                first.append(seen if seen is not None else math.nan)
                if proc.returncode != 0:
                    out[name] = {"error": err.strip().splitlines()[-1:]}
                    break
            else:
                out[name] = {"median_s": statistics.median(took), "all_s": took,
                             "first_answer_s": statistics.median(first)}
    return out


def _fmt(s: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if s >= scale:
            return f"{s / scale:.4g} {unit}"
    return f"{s / 1e-9:.4g} ns"


def table(results: list[dict[str, Any]]) -> str:
    """Markdown: one row per case and tool; gpuvs's row says how it fared against the
    peers of each repeat. The 1 % target applies where the kernel runs ≥ 100 µs."""
    lines = ["| case | tool | median | spread over repeats | time to answer | note |",
             "|:---|:---|---:|---:|---:|:---|"]
    for r in results:
        for name, t in r["tools"].items():
            note = ""
            if name == "gpuvs" and "peers_median_s" in r:
                n = r["repeats"]
                target = (r["kernel_s"] or 0) >= KERNEL_TARGET_S
                note = (f"{'target: ' if target else ''}within 1 % of the peers in "
                        f"{r['gpuvs_within_1pct']} of {n} (worst "
                        f"{100 * max(map(abs, r['gpuvs_off'])):.2f} %); CI covered them in "
                        f"{r['gpuvs_covered']} of {n}, do_bench's answer in "
                        f"{r['gpuvs_covers_do_bench']} of {n}, the next repeat in "
                        f"{r['gpuvs_covers_next']} of {n - 1}; CI ±"
                        f"{100 * statistics.median(r['gpuvs_ci_rel']):.2f} %, "
                        f"the peers {100 * statistics.median(r['peers_apart']):.2f} % apart "
                        f"(medians of the repeats)")
            lines.append(f"| {r['case']} | {name} | {_fmt(t['median_s'])} | "
                         f"{100 * t['spread']:.2f} % | {_fmt(t['time_to_answer_s'])} | {note} |")
        for name, why in r["skipped"].items():
            lines.append(f"| {r['case']} | {name} | — | — | — | failed: {why} |")
    return "\n".join(lines)


def main() -> None:
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("--repeats", type=int, default=10)
    args.add_argument("--budget", type=float, default=1.0, help="gpuvs.measure's budget_s")
    args.add_argument("--cli-repeats", type=int, default=1,
                      help="times each command line is run (0: not at all)")
    args.add_argument("--out", default=os.environ.get("OUT", "out"))
    args.add_argument("--case", action="append", default=[],
                      help="only the cases whose name contains this text (repeatable; "
                           "default: all)")
    a = args.parse_args()
    no_cuda = _cuda()
    results: list[dict[str, Any]] = []
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)

    def save(cli: dict[str, Any]) -> None:
        """Written after every case, so that a run cut short keeps what it measured."""
        doc = {"repeats": a.repeats, "budget_s": a.budget, "cases": results, "cli": cli}
        (out / "peers.json").write_text(json.dumps(doc, indent=1))
        (out / "peers.md").write_text(table(results) + "\n")

    # The command lines first, while this process holds no CUDA context: a context here
    # would be another process on the GPU to gpuvs, which measures a case again after a
    # pause when it sees one (`contended`).
    cli = ({"skipped": no_cuda} if no_cuda else {"skipped": "--cli-repeats 0"}
           if a.cli_repeats < 1 else cli_timing(a.cli_repeats))
    print("command line, process time to an answer:", json.dumps(cli), flush=True)
    for case in _torch_cases() + _other_cases():
        if a.case and not any(part in case.name for part in a.case):
            continue
        if case.device == "cuda" and no_cuda:
            print(f"skipped {case.name}: {no_cuda}", flush=True)
            continue
        if not _importable(case.needs):
            print(f"skipped {case.name}: {case.needs} is not installed", flush=True)
            continue
        started = time.perf_counter()
        run_case(case, a.repeats, a.budget)
        results.append(summary(case))
        save(cli)
        print(f"done {case.name} in {time.perf_counter() - started:.1f} s", flush=True)
    print(table(results), flush=True)
    save(cli)


if __name__ == "__main__":
    main()
