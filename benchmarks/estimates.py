"""How close `--dry-run`'s estimate comes to the time a run takes (README, "Estimates").

Four runs, in this order, into one fresh store (`--db`, a new file): two sweeps (square
products and `x *= 5`, smaller than the README's examples so that each ends in minutes
on a 2-core CPU), `gpuvs seeds --quick` and `gpuvs run --all` — as a user might meet
them. Each is first planned with `--dry-run`, whose estimate is read off its first line
("about 4 min 50 s"), then run, timed from start to exit. A later run's estimate reads
what the earlier ones stored — the first one, on an empty store, is the model alone
(and what each run's estimate knew, the dry run's line says). It prints each run's
estimate, actual time and actual ÷ estimated, with the machine's load before and after
(other processes share its cores, and the times with them).

    PYTHONPATH=src python3 benchmarks/estimates.py [--db FILE] [--log DIR]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

RUNS = (
    ("square products, 256 to 4096", ["run", "-w", "matmul", "-a", "shape=square",
                                      "-s", "256:4096:2"]),
    ("x *= 5, 1e3 to 1e8 elements", ["run", "-w", "elementwise", "-a", "op=scale",
                                     "-s", "1e3:1e8"]),
    ("gpuvs seeds --quick", ["seeds", "--quick"]),
    ("gpuvs run --all", ["run", "--all"]),
)
ABOUT = re.compile(r"about (?:(\d+) min)? ?(?:(\d+) s)?")


def estimated_s(line: str) -> float:
    """'about 4 min 50 s' → 290; 'about 12 min' → 720; 'about 40 s' → 40."""
    found = ABOUT.search(line)
    if found is None or not any(found.groups()):
        raise SystemExit(f"no estimate in the dry run's line: {line!r}")
    minutes, seconds = (int(g) if g else 0 for g in found.groups())
    return 60.0 * minutes + seconds


def gpuvs(args: list[str], db: Path, log: Path) -> tuple[int, float, str]:
    """Run `gpuvs ARGS --db DB`, its output to `log`: exit code, seconds, first line."""
    t0 = time.perf_counter()
    with log.open("w") as out:
        done = subprocess.run([sys.executable, "-m", "gpuvs", *args, "--db", str(db)],
                              stdout=out, stderr=subprocess.STDOUT, text=True)
    took = time.perf_counter() - t0
    return done.returncode, took, log.read_text().splitlines()[0] if log.stat().st_size else ""


def load() -> str:
    return "{:.1f} {:.1f} {:.1f}".format(*os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, default=Path(f"/tmp/gpuvs-estimates-{os.getpid()}"
                                                        ".sqlite"))
    parser.add_argument("--log", type=Path, default=Path("/tmp/gpuvs-estimates-logs"))
    opts = parser.parse_args()
    if opts.db.exists():
        raise SystemExit(f"{opts.db} exists: the runs start from an empty store")
    opts.log.mkdir(parents=True, exist_ok=True)
    rows = []
    for n, (name, args) in enumerate(RUNS):
        _, _, line = gpuvs([*args, "--dry-run"], opts.db, opts.log / f"{n}-dry-run.txt")
        estimate = estimated_s(line)
        before = load()
        code, actual, _ = gpuvs(args, opts.db, opts.log / f"{n}-run.txt")
        rows.append((name, estimate, actual, actual / estimate, before, load(), code, line))
        print(f"{name}: estimated {estimate:.0f} s, took {actual:.0f} s, "
              f"actual ÷ estimated {actual / estimate:.2f} (exit {code}; load {before} → "
              f"{load()})", flush=True)
    print(f"\n{'run':32} {'estimated':>9} {'actual':>7} {'ratio':>6}  load before → after")
    for name, estimate, actual, ratio, before, after, _, _ in rows:
        print(f"{name:32} {estimate:8.0f}s {actual:6.0f}s {ratio:6.2f}  {before} → {after}")
    print("\nthe dry runs' lines:")
    for name, *_, line in rows:
        print(f"  {name}: {line}")


if __name__ == "__main__":
    main()
