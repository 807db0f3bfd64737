"""How close `--dry-run`'s estimate and the countdown come to the time a run takes (README,
"How long a run takes").

Three plans a user meets in the first hour: square products and `x *= 5` over sizes
(smaller than the README's examples, so that each ends in minutes on a 2-core CPU) and
`gpuvs seeds --quick`. Each plan starts from an empty store of its own:

1. `--dry-run` twice: the estimate of an empty store, which must read the same both times;
2. the run, timed from start to exit, every line it prints stamped with the time it came,
   so that each "(about 1:23 left)" can be set against the time the run really had left;
3. `--dry-run` again, now from the store's history of the first run;
4. the run again, timed and stamped the same way.

It prints, per plan and store, the estimate, the time taken and their ratio, and the
countdown's worst ratio of shown ÷ true time left (over the lines with at least
COUNTDOWN_FROM_S left: the last seconds say 0:00 for whatever remains), with the machine's
load before and after: other processes share its cores, and the times with them.

    PYTHONPATH=src python3 benchmarks/estimates.py [--dir DIR] [--plans 0,1,2]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

PLANS = (
    ("square products, 256 to 4096", ["run", "-w", "matmul", "-a", "shape=square",
                                      "-s", "256:4096:2"]),
    ("x *= 5, 1e3 to 1e8 elements", ["run", "-w", "elementwise", "-a", "op=scale",
                                     "-s", "1e3:1e8"]),
    ("gpuvs seeds --quick", ["seeds", "--quick"]),
)
ABOUT = re.compile(r"about (?:(\d+) min)? ?(?:(\d+) s)?")
LEFT = re.compile(r"\(about (\d+):(\d\d) left\)")
COUNTDOWN_FROM_S = 10.0


def estimated_s(line: str) -> float:
    """'about 4 min 50 s' → 290; 'about 12 min' → 720; 'about 40 s' → 40."""
    found = ABOUT.search(line)
    if found is None or not any(found.groups()):
        raise SystemExit(f"no estimate in the dry run's line: {line!r}")
    minutes, seconds = (int(g) if g else 0 for g in found.groups())
    return 60.0 * minutes + seconds


@dataclass(frozen=True)
class Timed:
    code: int
    took_s: float
    lines: list[tuple[float, str]]  # (seconds since the start, the line)

    def countdown(self) -> tuple[float, float] | None:
        """The countdown's worst (shown ÷ true time left, shown at that line), over the
        lines with COUNTDOWN_FROM_S or more really left."""
        ratios = []
        for at, line in self.lines:
            said = LEFT.search(line)
            true_left = self.took_s - at
            if said and true_left >= COUNTDOWN_FROM_S:
                shown = 60 * int(said.group(1)) + int(said.group(2))
                ratios.append((shown / true_left, true_left))
        return min(ratios) if ratios else None


def gpuvs(args: list[str], db: Path, log: Path) -> Timed:
    """Run `gpuvs ARGS --db DB`, each line of its output stamped and written to `log`."""
    t0 = time.perf_counter()
    lines = []
    with subprocess.Popen([sys.executable, "-m", "gpuvs", *args, "--db", str(db)],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          bufsize=1) as proc, log.open("w") as out:
        assert proc.stdout is not None
        for line in proc.stdout:
            at = time.perf_counter() - t0
            lines.append((at, line.rstrip("\n")))
            out.write(f"{at:8.2f} {line}")
        code = proc.wait()
    return Timed(code, time.perf_counter() - t0, lines)


def load() -> str:
    return f"{os.getloadavg()[0]:.1f}"


def one_plan(n: int, name: str, args: list[str], root: Path) -> list[str]:
    db = root / f"plan{n}.sqlite"
    rows = []
    first = [gpuvs([*args, "--dry-run"], db, root / f"{n}-dry-{k}.txt").lines[0][1]
             for k in range(2)]
    same = "same" if estimated_s(first[0]) == estimated_s(first[1]) else "DIFFERENT"
    for store, line in (("empty", first[0]), ("history", None)):
        if line is None:
            line = gpuvs([*args, "--dry-run"], db, root / f"{n}-dry-history.txt").lines[0][1]
        before = load()
        run = gpuvs(args, db, root / f"{n}-run-{store}.txt")
        estimate = estimated_s(line)
        worst = run.countdown()
        countdown = (f"{worst[0]:.2f} with {worst[1]:.0f} s left" if worst else "none shown")
        rows.append(f"{name:30} {store:8} {estimate:6.0f}s {run.took_s:6.0f}s "
                    f"{run.took_s / estimate:6.2f}  {countdown:26} {before} → {load()} "
                    f"(exit {run.code}{'' if store == 'history' else f'; twice: {same}'})")
        print(rows[-1], flush=True)
        print(f"    the dry run: {line}", flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, default=Path(f"/tmp/gpuvs-estimates-{os.getpid()}"))
    parser.add_argument("--plans", default=",".join(str(i) for i in range(len(PLANS))))
    opts = parser.parse_args()
    opts.dir.mkdir(parents=True, exist_ok=False)  # every plan starts from an empty store
    print(f"{'plan':30} {'store':8} {'est.':>7} {'took':>7} {'ratio':>6}  "
          f"{'countdown: worst shown÷true':26} load before → after", flush=True)
    rows = []
    for n in (int(i) for i in opts.plans.split(",")):
        rows += one_plan(n, *PLANS[n], opts.dir)
    print("\n" + "\n".join(rows))


if __name__ == "__main__":
    main()
