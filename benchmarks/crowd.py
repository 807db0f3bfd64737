"""Does the crowd of idle worker processes a run keeps slow a launch-bound loop, and does
gpuvs's figure for that loop differ from a plain loop in the same process?

A `gpuvs run` starts every worker its plan needs at once (each backend's measuring worker,
its twin for the next pass, a process per post's replays), and they wait, idle, holding a
CUDA context each, while one of them times a case. On the H100 `gpuvs seeds` timed seed
000's product at 20.6 µs a call where six fresh processes, each alone, looped it at 12.8 to
17.6 µs. This separates the two explanations:

- `alone`: a fresh process loops the call (the median of blocks of 2000 calls,
  synchronised at both ends), nothing else on the GPU;
- `crowd`: the same, with CROWD idle processes alive that each made a CUDA context and
  allocated memory (as gpuvs's idle workers have);
- `gpuvs`: `gpuvs.measure` of the same call in that same process, alone and in the crowd.

Arms alternate (alone, crowd, alone, crowd, ...) so the host's regimes fall on both.

    PYTHONPATH=src python3 benchmarks/crowd.py [--out OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

CROWD = 12
ROUNDS = 4
IDLE = ("import torch, sys; x = torch.rand(1 << 20, device='cuda'); torch.cuda.synchronize(); "
        "print('ready', flush=True); sys.stdin.read()")
LOOP = r"""
import json, statistics, sys, time, torch
import gpuvs
torch.manual_seed(1004)
a, b = torch.rand(1, 25600, device="cuda"), torch.rand(25600, 100, device="cuda")
call = lambda: a @ b
def block(n=2000):
    torch.cuda.synchronize(); t0 = time.perf_counter()
    for _ in range(n): call()
    torch.cuda.synchronize(); return (time.perf_counter() - t0) / n
block()
loop = statistics.median(block() for _ in range(15))
m = gpuvs.measure(call, device="cuda", budget_s=0.5)
print(json.dumps({"loop": loop, "gpuvs": m.summary.median}))
"""


def one(env: dict[str, str]) -> dict[str, float]:
    out = subprocess.run([sys.executable, "-c", LOOP], capture_output=True, text=True,
                         env=env, timeout=300, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.environ.get("OUT", "out"))
    out = Path(parser.parse_args().out)
    out.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    arms: dict[str, list[dict[str, float]]] = {"alone": [], "crowd": []}
    for _ in range(ROUNDS):
        arms["alone"].append(one(env))
        crowd = [subprocess.Popen([sys.executable, "-c", IDLE], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True) for _ in range(CROWD)]
        for p in crowd:
            p.stdout.readline()
        time.sleep(1.0)
        try:
            arms["crowd"].append(one(env))
        finally:
            for p in crowd:
                p.stdin.close()
                p.wait(timeout=60)
    table = {arm: {k: [r[k] for r in rs] for k in ("loop", "gpuvs")} for arm, rs in arms.items()}
    (out / "crowd.json").write_text(json.dumps(table, indent=1))
    for arm, by in table.items():
        for k, xs in by.items():
            print(f"{arm:6s} {k:6s} median {statistics.median(xs) * 1e6:7.2f} µs  "
                  f"range {min(xs) * 1e6:.2f}–{max(xs) * 1e6:.2f} µs  (n={len(xs)})")


if __name__ == "__main__":
    main()
