"""Two runs of one command set against each other, as issue 40's "the same answer every
time" judges them (docs/accuracy.md): of the cases both runs finished `ok`, how often B's
median lies inside A's 95 % interval, A's inside B's, and both; how far apart the two
medians are (median and 90th percentile of |B ÷ A − 1|); and each GPU series' answer —
who wins at the largest size (the whole CI above 1, below it, or a tie) and the measured
crossover — in A beside B: the same where the winner is and the crossovers lie within one
size step of each other. Those that differ are named.

The calibration's probes are left out (they describe the machine, not the work), and so
are a post's `as_written` replays, which run once, as the post ran them, and carry no
interval; a post's replay answers (who wins, from where) as the post's own method would,
and is counted apart. Two exports (`--json` of `gpuvs run`, `seeds`, `run-file`), from one machine
or two, gzipped or not:

    PYTHONPATH=src python3 benchmarks/repeat_agreement.py A.json B.json.gz
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

from gpuvs import stats
from gpuvs.analysis import regression
from gpuvs.analysis.crossover import crossovers
from gpuvs.errors import UsageError
from gpuvs.model import Measurement, Status
from gpuvs.store.export import load_json


def loaded(path: Path) -> tuple[str, list[Measurement]]:
    """A run's id and its cases, from an export as `gpuvs check` reads one: gzipped or not
    (docs/runs keeps them gzipped)."""
    run, ms, _ = load_json(path)
    return run.run_id, [m for m in ms if not m.case.calibrates]


def intervals(ms: list[Measurement]) -> dict[str, tuple[float, float, float]]:
    """Each case finished ok with an interval: (median, CI low, CI high) by key. A case
    timed in one process (a call too long to sample in two) reaches as far as `compare`
    and `check` judge it: its own interval, or ± the spread it borrows from its run's
    cases of its backend and device (`regression.borrowed`), whichever is wider."""
    spread = regression.process_spread(ms)
    out = {}
    for m in ms:
        s = m.summary
        if m.status is Status.OK and s is not None and m.case.variant != "as_written":
            out[m.case.key] = (s.median, *stats.widened(s, regression.borrowed(m, spread)))
    return out


def agreement(a: list[Measurement], b: list[Measurement]) -> dict[str, float]:
    """The figures this module's docstring names, over the cases both finished."""
    ia, ib = intervals(a), intervals(b)
    both = sorted(ia.keys() & ib.keys())
    b_in_a = sum(ia[k][1] <= ib[k][0] <= ia[k][2] for k in both)
    a_in_b = sum(ib[k][1] <= ia[k][0] <= ib[k][2] for k in both)
    both_ways = sum(ia[k][1] <= ib[k][0] <= ia[k][2] and ib[k][1] <= ia[k][0] <= ib[k][2]
                    for k in both)
    apart = sorted(abs(ib[k][0] / ia[k][0] - 1) for k in both)
    return {"cases": len(both), "b_in_a": b_in_a, "a_in_b": a_in_b, "both_ways": both_ways,
            "median_apart": statistics.median(apart) if apart else float("nan"),
            "p90_apart": apart[int(0.9 * (len(apart) - 1))] if apart else float("nan")}


def answered(ms: list[Measurement]) -> dict[str, tuple[str, int | None, tuple[int, ...]]]:
    """Each GPU series against the fastest CPU case: (the winner at the largest size, the
    measured crossover, the sizes swept), by a name a person reads."""
    out = {}
    for c in crossovers(ms):
        if not c.points:
            continue
        name = (f"{c.gpu.workload}/{c.gpu.variant}/{c.gpu.dtype} {c.gpu.backend} "
                f"{c.gpu.device} {c.data}")
        out[name] = (c.points[-1].verdict, c.size, tuple(p.size for p in c.points))
    return out


def same_answer(a: tuple[str, int | None, tuple[int, ...]],
                b: tuple[str, int | None, tuple[int, ...]]) -> bool:
    """One winner, and crossovers within one size step (or neither run has one)."""
    if a[0] != b[0] or (a[1] is None) != (b[1] is None):
        return False
    if a[1] is None or b[1] is None:
        return True
    sizes = sorted(set(a[2]) | set(b[2]))
    return abs(sizes.index(a[1]) - sizes.index(b[1])) <= 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("a", type=Path, help="run A's export (gpuvs … --json A.json)")
    parser.add_argument("b", type=Path, help="run B's export")
    args = parser.parse_args(argv)
    try:
        (name_a, a), (name_b, b) = loaded(args.a), loaded(args.b)
    except (OSError, ValueError, KeyError, TypeError, UsageError) as e:
        print(f"error: {args.a} and {args.b} must be two runs' JSON exports "
              f"(gpuvs … --json FILE): {e}", file=sys.stderr)
        return 2
    f = agreement(a, b)
    n = f["cases"] or 1
    print(f"A {name_a}, B {name_b}: {f['cases']:.0f} cases ok in both")
    for label, key in (("B's median in A's interval", "b_in_a"),
                       ("A's median in B's interval", "a_in_b"), ("both ways", "both_ways")):
        print(f"  {label}: {f[key]:.0f} of {f['cases']:.0f} ({f[key] / n:.0%})")
    print(f"  the medians apart: {f['median_apart']:.1%} at the median, "
          f"{f['p90_apart']:.1%} at the 90th percentile")
    aa, ab = answered(a), answered(b)
    for label, replays in (("answers", False), ("the posts' replays as written", True)):
        common = sorted(k for k in aa.keys() & ab.keys() if ("/as_written/" in k) == replays)
        differ = [k for k in common if not same_answer(aa[k], ab[k])]
        if common:
            print(f"  {label} (winner at the largest size; crossover within one size step): "
                  f"{len(common) - len(differ)} of {len(common)} the same")
        for k in differ:
            print(f"    {k}: A {aa[k][0]} from {aa[k][1]}, B {ab[k][0]} from {ab[k][1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
