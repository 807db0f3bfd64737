"""How long `gpuvs show` takes on a store that holds this machine's ceilings and ten runs
(docs/performance.md, "Reading a stored run").

Every command that prints a run's tables places its cases against the machine's ceilings:
before each case kept its summaries with its record, every read bootstrapped the
ceilings run's cases again (86 of them on an H100, seconds on a 2-core CPU). This builds
the store as a user does — `gpuvs ceilings`, then ten small sweeps — and times `gpuvs
show latest` as a whole process, REPEATS times after one untimed warm-up (which also
leaves Python's compiled bytecode behind, as an installed package has it), and prints the
median, the fastest and the slowest. With `--baseline SRC` it times the code under SRC
(another checkout's `src`) on the same store, turn about, for the ratio.

    PYTHONPATH=src python3 benchmarks/reads.py [--db FILE] [--baseline OTHER/src]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPEATS = 9
CEILINGS = ["ceilings", "--budget", "0.1"]
RUNS = 10
A_RUN = ["run", "-w", "matmul,elementwise", "-s", "64,256", "-b", "numpy", "--budget", "0.05",
         "--passes", "1"]


def gpuvs(args: list[str], db: Path, src: Path) -> float:
    """Seconds `gpuvs ARGS --db DB` took with the code under `src`; its output is dropped."""
    env = os.environ | {"PYTHONPATH": str(src)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # an installed package has its bytecode
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "gpuvs", *args, "--db", str(db)], env=env,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    took = time.perf_counter() - t0
    if done.returncode:
        raise SystemExit(f"gpuvs {' '.join(args)} exited {done.returncode}: {done.stderr}")
    return took


def build(db: Path, src: Path) -> None:
    print(f"building {db}: gpuvs {' '.join(CEILINGS)}, then {RUNS} runs", flush=True)
    print(f"  ceilings: {gpuvs(CEILINGS, db, src):.0f} s", flush=True)
    for _ in range(RUNS):
        gpuvs(A_RUN, db, src)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, default=Path(f"/tmp/gpuvs-reads-{os.getpid()}"
                                                        ".sqlite"))
    parser.add_argument("--baseline", type=Path, help="another checkout's src directory")
    opts = parser.parse_args()
    here = Path(__file__).resolve().parents[1] / "src"
    if not opts.db.exists():
        build(opts.db, here)
    codes = {"this code": here} | ({"baseline": opts.baseline} if opts.baseline else {})
    times: dict[str, list[float]] = {name: [] for name in codes}
    for src in codes.values():
        gpuvs(["show", "latest"], opts.db, src)  # the warm-up: bytecode, page cache
    for _ in range(REPEATS):
        for name, src in codes.items():
            times[name].append(gpuvs(["show", "latest"], opts.db, src))
    print(f"gpuvs show latest, {REPEATS} runs each (load {os.getloadavg()[0]:.1f}):")
    for name, ts in times.items():
        print(f"  {name:10} median {statistics.median(ts):.2f} s "
              f"(fastest {min(ts):.2f} s, slowest {max(ts):.2f} s)")


if __name__ == "__main__":
    main()
