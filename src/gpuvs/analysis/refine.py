"""Where to measure next: sizes that narrow each crossover to a given factor.

The crossover lies between the last size where the GPU was not faster and the first from
which it stays faster. While those two sizes are more than `factor` apart, their
geometric midpoint is worth measuring — for every series of the group, so the CPU
reference and all GPU series are compared at the same new size.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from gpuvs.analysis.calibration import cases_of
from gpuvs.analysis.crossover import Crossover, GroupKey, crossovers, group_key
from gpuvs.model import Case, Measurement


def bracket(c: Crossover) -> tuple[int, int] | None:
    """The two swept sizes around the crossover: (last not faster, first faster)."""
    if c.size is None:
        return None
    sizes = [p.size for p in c.points]
    i = sizes.index(c.size)
    return (sizes[i - 1], c.size) if i > 0 else None


def next_sizes(found: Iterable[Crossover], factor: float) -> dict[GroupKey, set[int]]:
    """Per group, the midpoints of brackets wider than `factor`."""
    wanted: dict[GroupKey, set[int]] = {}
    for c in found:
        b = bracket(c)
        if b is None or b[1] / b[0] <= factor:
            continue
        mid = round(math.sqrt(b[0] * b[1]))
        if b[0] < mid < b[1]:
            wanted.setdefault(c.group, set()).add(mid)
    return wanted


def refined_cases(measurements: Sequence[Measurement], factor: float) -> list[Case]:
    """New cases at the midpoints, for every series of each group that needs them (the
    run's calibration has no crossover to refine)."""
    measurements = cases_of(measurements)
    wanted = next_sizes(crossovers(measurements), factor)
    done = {m.case.key for m in measurements}
    series = {m.case.series for m in measurements if group_key(m.case) in wanted}
    cases = []
    for s in sorted(series, key=lambda c: c.key):
        for size in sorted(wanted[group_key(s)]):
            case = Case(s.workload, s.variant, s.backend, s.device, s.dtype, size, s.params)
            if case.key not in done:
                cases.append(case)
    return sorted(cases, key=lambda c: (c.size, c.device != "cpu"))
