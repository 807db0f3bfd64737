"""How long a run's workers take to be ready: each backend's alone, then all of them
started together as a run's pool starts them (`execute.runner.Pool`).

A worker is ready once it has imported its framework, started its device and loaded
what its cases need; a run measures nothing until every worker is (docs/accuracy.md,
"Where a run's time went"). Run on the machine in question:

    PYTHONPATH=src python3 benchmarks/worker_start.py [--together N]

`--together N` starts N workers of each backend at once (a five-process run's pool starts
two of each backend first: the first pass's and the next one's).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import time

from gpuvs import backends, config
from gpuvs.execute.runner import Worker
from gpuvs.jobs.suite import planned
from gpuvs.model import Case


def _targets(plan: list[Case]) -> dict[str, list[Case]]:
    """Each backend's measured cases that can run here, as a run's pool groups them."""
    found: dict[str, list[Case]] = {}
    for c in plan:
        if c.variant != "as_written" and backends.get(c.backend).unavailable_reason(
                c.device) is None:
            found.setdefault(c.backend, []).append(c)
    return found


def _ready_s(workers: list[Worker]) -> list[float]:
    t0 = time.perf_counter()
    took = []
    for w in workers:
        w.await_ready()
        took.append(time.perf_counter() - t0)
    if shutil.which("nvidia-smi"):  # what the idle workers' device contexts hold
        used = subprocess.run(["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader"],
                              capture_output=True, text=True).stdout.split("\n")[0]
        print(f"  {len(workers)} worker(s) ready, GPU memory used: {used}")
    for w in workers:
        w.retire()
    for w in workers:
        w.close()
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--together", type=int, default=2)
    args = parser.parse_args()
    targets = _targets(planned(config.build({})).todo)  # the default run's cases
    for name, cases in targets.items():
        (took,) = _ready_s([Worker(name, cases[0].device, cases)])
        print(f"{name:6} {cases[0].device:7} alone: ready in {took:5.2f} s")
    t0 = time.perf_counter()
    workers = [Worker(name, cases[0].device, cases) for name, cases in targets.items()
               for _ in range(args.together)]
    took = _ready_s(workers)
    print(f"{len(workers)} workers together: the last ready in {max(took):5.2f} s "
          f"(wall {time.perf_counter() - t0:.2f} s)")


if __name__ == "__main__":
    main()
