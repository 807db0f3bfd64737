"""What replacing gpuvs's hand-written numerics with the field's libraries costs, and
whether any result moves (docs/libraries.md holds the numbers of one run).

Each pair is the code gpuvs had (kept here, verbatim, as the reference) against the
library call that replaced it:

- `z`: the two-sided normal quantile, bisection on `math.erf` against the standard
  library's `statistics.NormalDist().inv_cdf`;
- `mann-whitney`: the rank test by the normal approximation with tie and continuity
  corrections against `scipy.stats.mannwhitneyu`;
- `nnls`: the cost model's least squares with a clamp against `scipy.optimize.nnls`;
- `walk`: `yours/moving.py`'s five recursive walks against its one `tree_map`, and
  against `optree.tree_map` and `torch.utils._pytree.tree_map`, which neither walk a
  dataclass nor a dict subclass they were not told about.

For each: the import in a fresh interpreter (numpy already imported, the median of five),
the call (the median over many), and the largest difference in the results over random
inputs like gpuvs's.

    PYTHONPATH=src python3 benchmarks/library_swaps.py
"""

from __future__ import annotations

import collections
import dataclasses
import math
import statistics
import subprocess
import sys
import timeit
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

IMPORTS = 5
RNG = np.random.default_rng(20261126)


def import_s(module: str) -> float:
    """Seconds to import `module` in a fresh interpreter that has imported numpy."""
    code = (f"import numpy, time; t = time.perf_counter(); import {module}; "
            "print(time.perf_counter() - t)")
    times = [float(subprocess.run([sys.executable, "-c", code], capture_output=True,
                                  text=True, check=True).stdout) for _ in range(IMPORTS)]
    return statistics.median(times)


def call_s(fn: Callable[[], Any], number: int = 200) -> float:
    return statistics.median(timeit.repeat(fn, number=number, repeat=7)) / number


# The code gpuvs had, verbatim: the references.

def old_z(confidence: float) -> float:
    target = confidence
    lo, hi = 0.0, 10.0
    for _ in range(80):
        mid = (lo + hi) / 2
        if math.erf(mid / math.sqrt(2)) < target:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def old_mann_whitney_u(a: Sequence[float], b: Sequence[float]) -> tuple[float, float]:
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    n1, n2 = x.size, y.size
    both = np.concatenate([x, y])
    order = both.argsort(kind="mergesort")
    ranks = np.empty(both.size)
    ranks[order] = np.arange(1, both.size + 1)
    values, inverse, counts = np.unique(both, return_inverse=True, return_counts=True)
    ranks = np.bincount(inverse, weights=ranks)[inverse] / counts[inverse]
    u = float(ranks[:n1].sum() - n1 * (n1 + 1) / 2)
    n = n1 + n2
    tie_term = float(((counts**3 - counts).sum()) / (n * (n - 1))) if n > 1 else 0.0
    sigma = math.sqrt(n1 * n2 / 12 * ((n + 1) - tie_term))
    if sigma == 0:
        return u, 1.0
    z = (abs(u - n1 * n2 / 2) - 0.5) / sigma
    return u, float(min(1.0, math.erfc(max(z, 0.0) / math.sqrt(2))))


def old_fit(works: Sequence[float], times: Sequence[float]) -> tuple[float, float]:
    w, t = np.asarray(works, dtype=float), np.asarray(times, dtype=float)
    a = np.column_stack([1 / t, w / t])
    (t0, slope), *_ = np.linalg.lstsq(a, np.ones_like(t), rcond=None)
    if slope <= 0:
        return float(np.median(t)), math.inf
    if t0 < 0:
        slope = float(np.sum(w / t) / np.sum((w / t) ** 2))
        t0 = 0.0
    return float(t0), float(1 / slope)


def old_to_host(obj: object) -> Any:
    if isinstance(obj, (list, tuple)):
        items = [old_to_host(v) for v in obj]
        return type(obj)(*items) if hasattr(obj, "_fields") else type(obj)(items)
    if isinstance(obj, dict):
        return type(obj)((k, old_to_host(v)) for k, v in obj.items())
    if isinstance(obj, np.ndarray):
        return obj.copy()
    return obj


def z() -> None:
    new = statistics.NormalDist().inv_cdf
    print("z: two-sided normal quantile")
    print(f"  import statistics {import_s('statistics') * 1e3:.1f} ms (math: built in)")
    worst = max(abs(old_z(c) - new((1 + c) / 2)) for c in np.linspace(0.5, 0.999, 500))
    print(f"  call: bisection {call_s(lambda: old_z(0.95)) * 1e6:.1f} µs, "
          f"NormalDist {call_s(lambda: new(0.975)) * 1e6:.2f} µs; "
          f"largest difference {worst:.1e}")


def mann_whitney() -> None:
    from scipy.stats import mannwhitneyu

    print("mann-whitney: rank test, two-sided")
    print(f"  import scipy.stats {import_s('scipy.stats'):.2f} s")
    worst_p, exact = 0.0, []
    for n in (10, 60, 400):
        for _ in range(200):
            a = 1e-3 * (1 + RNG.normal(0, 0.01, n))
            b = 1e-3 * (1 + RNG.normal(RNG.uniform(-0.01, 0.01), 0.01, n))
            u0, p0 = old_mann_whitney_u(a, b)
            r = mannwhitneyu(a, b, alternative="two-sided")
            assert u0 == r.statistic
            worst_p = max(worst_p, abs(p0 - r.pvalue))
        x, y = RNG.normal(0, 1, n), RNG.normal(0.3, 1, n)
        old = call_s(lambda x=x, y=y: old_mann_whitney_u(x, y))  # type: ignore[misc]
        new = call_s(lambda x=x, y=y: mannwhitneyu(x, y))  # type: ignore[misc]
        print(f"  n = {n} a side: old {old * 1e6:.0f} µs, scipy {new * 1e6:.0f} µs")
    for n in (3, 5, 8):  # SciPy's exact distribution where both sides are small, no ties
        a, b = RNG.normal(0, 1, n), RNG.normal(1, 1, n)
        exact.append(f"n = {n}: {old_mann_whitney_u(a, b)[1]:.3f} → "
                     f"{mannwhitneyu(a, b).pvalue:.3f}")
    print(f"  U identical; largest p difference from 10 values a side {worst_p:.1e}")
    print(f"  small samples, normal approximation → exact: {'; '.join(exact)}")


def nnls() -> None:
    from scipy.optimize import nnls as scipy_nnls

    def new_fit(works: np.ndarray, times: np.ndarray) -> tuple[float, float]:
        (t0, slope), _ = scipy_nnls(np.column_stack([1 / times, works / times]),
                                    np.ones_like(times))
        return float(t0), (1 / slope if slope > 0 else math.inf)

    print("nnls: t = t0 + work / throughput on relative error, both non-negative")
    print(f"  import scipy.optimize {import_s('scipy.optimize'):.2f} s")
    moved, cases = [], 0
    for _ in range(2000):  # a sweep of 6 to 12 sizes, doubling, noise 1 to 20 %
        k = int(RNG.integers(6, 13))
        w = 2.0 * (2.0 ** np.arange(6, 6 + k)) ** RNG.choice([1, 3])
        t0, rate = 10 ** RNG.uniform(-6, -3), 10 ** RNG.uniform(8, 13)
        t = (t0 + w / rate) * (1 + RNG.normal(0, RNG.uniform(0.01, 0.2), k)).clip(0.5)
        old, new = old_fit(w, t), new_fit(w, t)
        cases += 1
        if not all(math.isclose(x, y, rel_tol=1e-6) or x == y
                   for x, y in zip(old, new, strict=True)):
            moved.append((old, new, _rel_error(w, t, old), _rel_error(w, t, new)))
    better = sum(n_err <= o_err + 1e-12 for *_, o_err, n_err in moved)
    print(f"  {len(moved)} of {cases} fits moved (beyond 1e-6); in {better} of them the "
          "new fit's relative error is no larger")
    w = 2.0 * (2.0 ** np.arange(6, 13)) ** 3
    t = 1e-5 + w / 1e11
    print(f"  call, 7 sizes: lstsq and clamp {call_s(lambda: old_fit(w, t)) * 1e6:.0f} µs, "
          f"nnls {call_s(lambda: new_fit(w, t)) * 1e6:.0f} µs")


def _rel_error(w: np.ndarray, t: np.ndarray, model: tuple[float, float]) -> float:
    t0, throughput = model
    return float(np.sum(((t0 + w / throughput) / t - 1) ** 2))


def walk() -> None:
    import optree
    import torch.utils._pytree as pytree

    from gpuvs.yours.moving import leaves, to_host

    print("walk: a nested argument of 10 arrays (lists, a tuple, dicts), brought back")
    args = [{"x": np.ones(4), "y": [np.ones(4), (np.ones(4), 3)]} for _ in range(3)]
    args.append(np.ones(4))  # type: ignore[arg-type]

    def copy(x: object) -> object:
        return x.copy() if isinstance(x, np.ndarray) else x

    print(f"  import optree {import_s('optree') * 1e3:.0f} ms, torch.utils._pytree "
          f"{import_s('torch.utils._pytree'):.2f} s (it imports torch)")
    print(f"  call: five walks (old) {call_s(lambda: old_to_host(args)) * 1e6:.1f} µs, "
          f"tree_map {call_s(lambda: to_host(args)) * 1e6:.1f} µs, "
          f"optree {call_s(lambda: optree.tree_map(copy, args)) * 1e6:.1f} µs, "
          f"torch's {call_s(lambda: pytree.tree_map(copy, args)) * 1e6:.1f} µs")

    @dataclasses.dataclass
    class Batch:
        images: np.ndarray

    class Output(collections.OrderedDict):  # type: ignore[type-arg]
        pass

    for name, obj in (("a dataclass", Batch(np.ones(2))), ("an OrderedDict subclass",
                                                          Output(x=np.ones(2)))):
        print(f"  leaves of {name}: ours {len(leaves(obj))} array(s), optree "
              f"{_opaque(optree.tree_leaves(obj))}, torch's {_opaque(pytree.tree_leaves(obj))}")


def _opaque(found: list[object]) -> str:
    return "the object itself" if len(found) == 1 and not isinstance(
        found[0], np.ndarray) else f"{len(found)} array(s)"


def main() -> None:
    z()
    mann_whitney()
    nnls()
    walk()


if __name__ == "__main__":
    main()
