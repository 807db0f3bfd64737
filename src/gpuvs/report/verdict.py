"""The answer first: per sweep, in words, who wins, from what size, by how much (with its CI).

`verdict_table` gives one row per sweep that compares something; the others (one series,
or none, finished) fold away under it (`nothing_table`, or a note in the terminal's
`answer_table`). With GPU series, the answer is the best GPU
series with its data on the GPU set against the fastest CPU case at each size (the
crossover analysis), then the same with copies each call where that answer differs.
Without, the fastest series at the largest size is set against the best of the others.
Either way "from size" is where the winner's 95 % CI starts to stay above 1× up to the
largest size — a tie anywhere after it moves it on. `series_table` has the details: one
row per GPU series. Pure, like layout.py.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from gpuvs import units
from gpuvs.analysis import speedup
from gpuvs.analysis.cost import NO_PRICES, Prices, cheaper, missing
from gpuvs.analysis.crossover import (
    Crossover,
    GroupKey,
    crossovers,
    group_key,
    measured_crossover,
)
from gpuvs.analysis.regression import process_spread
from gpuvs.analysis.speedup import Speedup, best_cpu_by_size
from gpuvs.model import Case, Caveat, Measurement, Status
from gpuvs.report.layout import size_axis, sweep_title
from gpuvs.report.plots import series_label
from gpuvs.table import Table
from gpuvs.workloads import SizeAxis

COLUMNS = ("sweep", "answer")
NOTHING_COLUMNS = ("sweep", "why")
SERIES_COLUMNS = ("sweep", "who wins", "from size", "by (95 % CI)", "over")
FASTEST_CPU = "the fastest CPU case"
RESIDENT, COPIES = "data on the GPU", "with copies each call"
FROM = ("from: the smallest size from which the winner's 95 % CI stays above 1× up to the "
        "largest size measured; then the ratio of medians at the largest size, with the 95 % "
        "interval a repeat's ratio lands in")


@dataclass(frozen=True)
class Answer:
    """One sweep's answer in words. `compared` is False where it had nothing to set
    against anything (one series, or no case, finished): such an answer folds away under
    the ones that compare."""

    sweep: str
    text: str
    compared: bool
    against_gpu: bool = False


def answers(measurements: Iterable[Measurement], prices: Prices = NO_PRICES) -> list[Answer]:
    """Every sweep's answer, in the order its first case came; with `prices`, how many
    times cheaper a GPU's call is too."""
    out = []
    sweeps, spread = _sweeps(measurements)
    for key, done in sweeps:
        axis = size_axis(key)
        found = crossovers(done, spread)
        text, compared = ((_gpu_answer(found, axis, _Costs(done, prices)), True) if found
                          else _cpu_answer(done, axis, spread))
        if compared:
            text += _tf32(done, text) + _contended(done)
        out.append(Answer(sweep_title(key), text, compared, bool(found)))
    return out


def verdict_table(measurements: Iterable[Measurement], prices: Prices = NO_PRICES) -> Table:
    """One row per sweep that compares something: the answer in words, for a person who
    reads no other table."""
    found = [a for a in answers(measurements, prices) if a.compared]
    against_gpu = any(a.against_gpu for a in found)
    gpu = (f"GPU: the fastest GPU series at the largest size, against the fastest CPU case at "
           f"each size; {RESIDENT}: its inputs already there (resident); {COPIES}: the "
           "host↔device copies paid in every call (end-to-end)",) if against_gpu else ()
    priced = (f"cheaper per call: a call's cost on the fastest CPU case ÷ on the GPU at the "
              f"prices given ({prices.words()}), its CI the speedup's",) if (
        prices and against_gpu) else ()
    return Table("", COLUMNS, tuple((a.sweep, a.text) for a in found),
                 notes=(*gpu, FROM, *priced) if found else (), wrapping=frozenset(COLUMNS))


def nothing_table(measurements: Iterable[Measurement]) -> Table:
    """The sweeps with nothing to compare with, and why: folded under the verdict."""
    rows = tuple((a.sweep, a.text) for a in answers(measurements) if not a.compared)
    return Table("", NOTHING_COLUMNS, rows,
                 wrapping=frozenset(NOTHING_COLUMNS))


def answer_table(measurements: Iterable[Measurement], prices: Prices = NO_PRICES) -> Table:
    """The verdict as a run ends in a terminal or a log: its last table, so that the
    answer is the last thing printed before the run's own line. The sweeps with nothing
    to compare with are named in one note under it, not a row each."""
    ms = list(measurements)
    table, nothing = verdict_table(ms, prices), nothing_table(ms).rows
    notes = table.notes + ((f"nothing to compare with in {len(nothing)} sweep(s): "
                            + "; ".join(f"{sweep} ({why})" for sweep, why in nothing),)
                           if nothing else ())
    return replace(table, title="the answer, one line per sweep", notes=notes)


@dataclass(frozen=True)
class _Costs:
    """A sweep's finished cases and the prices given: what a GPU series' cost ratio at its
    largest size is read from."""

    done: Sequence[Measurement]
    prices: Prices

    def words(self, c: Crossover) -> str:
        """'; 5.2× [5.1, 5.3] cheaper per call at the prices given', or why there is none."""
        if not self.prices:
            return ""
        last = c.points[-1]
        cpu = best_cpu_by_size(self.done).get(last.size)
        gpu = next((m for m in self.done if m.case.series == c.gpu
                    and m.case.size == last.size), None)
        if cpu is None or gpu is None:
            return ""
        r = cheaper(cpu, gpu, last, self.prices)
        if r is None:
            return f"; no cost ratio: {missing(cpu, self.prices) or missing(gpu, self.prices)}"
        if r.low > 1:
            return (f"; {units.ratio(r.estimate, r.low, r.high)} cheaper per call at the "
                    "prices given")
        if r.high < 1:
            return (f"; {units.ratio(1 / r.estimate, 1 / r.high, 1 / r.low)} dearer per call "
                    "than the CPU at the prices given")
        return (f"; as cheap per call as the CPU at the prices given: "
                f"{units.ratio(r.estimate, r.low, r.high)} (the CI holds 1×)")


def series_table(measurements: Iterable[Measurement]) -> Table:
    """The details under the answer: one row per GPU series of each sweep."""
    rows: list[tuple[str, ...]] = []
    sweeps, spread = _sweeps(measurements)
    for key, done in sweeps:
        title = sweep_title(key)
        found = sorted(crossovers(done, spread), key=_resident_first)
        rows += [_busy(_gpu_row(title, c), done) for c in found]
    return Table("", SERIES_COLUMNS, tuple(rows), notes=(
        "from size: the smallest size from which the winner's 95 % CI stays above 1× up to "
        "the largest size measured; by: the ratio of medians at the largest size, with the "
        "95 % interval a repeat's ratio lands in",), wrapping=frozenset(SERIES_COLUMNS))


def _sweeps(measurements: Iterable[Measurement]
            ) -> tuple[list[tuple[GroupKey, list[Measurement]]], dict[tuple[str, str], float]]:
    """Each sweep, in the order its first case came, with its finished cases; and the
    run's spread across processes, which every sweep's speedups read
    (`regression.process_spread`)."""
    ms = list(measurements)
    groups: dict[GroupKey, list[Measurement]] = defaultdict(list)
    for m in ms:
        groups[group_key(m.case)].append(m)
    return ([(key, [m for m in group if m.status is Status.OK and m.summary is not None])
             for key, group in groups.items()], process_spread(ms))


def _contended(done: Sequence[Measurement]) -> str:
    """A verdict built on cases measured while other work held the machine says so."""
    contended = sum(Caveat.CONTENDED in m.caveats for m in done)
    return (f"; {contended} case(s) of this sweep contended: measured on a busy machine"
            if contended else "")


def _tf32(done: Sequence[Measurement], answer: str) -> str:
    """A winner whose float32 products ran on TF32 matrix units (JAX's GPU default) did
    less precise work than the CPU it beat: the answer says so beside its ratio."""
    named = sorted({m.case.backend for m in done if Caveat.TF32_ON in m.caveats
                    and f"GPU ({m.case.backend}" in answer})
    return "".join(f"; {b} ran its float32 products as TF32 (a 10-bit mantissa), not full "
                   "float32" for b in named)


def _busy(row: tuple[str, ...], done: Sequence[Measurement]) -> tuple[str, ...]:
    by = SERIES_COLUMNS.index("by (95 % CI)")
    return (*row[:by], row[by] + _contended(done), *row[by + 1:])


def _gpu_answer(found: Sequence[Crossover], axis: SizeAxis, costs: _Costs) -> str:
    """The best resident GPU series' answer, then the copies' where it differs; each with
    its cost ratio where prices were given."""
    resident = _best([c for c in found if c.data == "resident"])
    copies = _best([c for c in found if c.data != "resident"])
    if resident is None:
        assert copies is not None  # found holds at least one series
        return _sentence(copies, axis, _gpu(copies, COPIES)) + costs.words(copies)
    answer = _sentence(resident, axis, _gpu(resident, RESIDENT)) + costs.words(resident)
    if copies is None:
        return answer
    if _outcome(copies, axis)[:2] == _outcome(resident, axis)[:2]:
        return f"{answer}; {COPIES} too: {_outcome(copies, axis)[2]}{costs.words(copies)}"
    same_gpu = copies.gpu.backend == resident.gpu.backend and (
        copies.gpu.device == resident.gpu.device)
    return (f"{answer}; {COPIES}: {_sentence(copies, axis, 'GPU' if same_gpu else _gpu(copies))}"
            + costs.words(copies))


def _best(found: Sequence[Crossover]) -> Crossover | None:
    """The GPU series that got furthest, and was fastest there."""
    return max(found, key=lambda c: (c.points[-1].size, c.points[-1].estimate), default=None)


def _gpu(c: Crossover, where: str = "") -> str:
    """'GPU (torch, data on the GPU)'; the device only where it is not the first GPU."""
    name = c.gpu.backend + ("" if c.gpu.device == "cuda:0" else f" on {c.gpu.device}")
    return f"GPU ({name}, {where})" if where else f"GPU ({name})"


def _outcome(c: Crossover, axis: SizeAxis) -> tuple[str, str, str]:
    """(who wins, from where, by how much): ("GPU", "from n = 256", "42× [41, 43] at …")."""
    last = c.points[-1]
    if last.verdict == "gpu":
        return "GPU", _from(c.points, axis), _by(last, axis)
    if last.verdict == "cpu":
        inverted = tuple(p.inverse() for p in c.points)
        return "CPU", _from(inverted, axis), _by(inverted[-1], axis)
    return "tie", "", _by(last, axis) + " (the CI holds 1×)"


def _sentence(c: Crossover, axis: SizeAxis, gpu: str) -> str:
    """'GPU (torch, data on the GPU) faster from n = 256; 42× [41, 43] at n = 4096'."""
    winner, since, by = _outcome(c, axis)
    if winner == "GPU":
        return f"{gpu} faster {since}; {by}"
    if winner == "CPU":
        return f"CPU faster than the {gpu} {since}; {by}"
    return f"no clear winner between the {gpu} and the CPU: {by}"


def _gpu_row(title: str, c: Crossover) -> tuple[str, ...]:
    gpu = series_label(c.gpu)
    last = c.points[-1]
    if last.verdict == "gpu":
        return (title, gpu, _from_size(c.points), _ratio(last), FASTEST_CPU)
    if last.verdict == "cpu":
        inverted = tuple(p.inverse() for p in c.points)
        return (title, FASTEST_CPU, _from_size(inverted), _ratio(inverted[-1]), gpu)
    return (title, "tie", "—", _ratio(last) + " (the CI holds 1×)",
            f"{gpu} against {FASTEST_CPU}")


def _resident_first(c: Crossover) -> tuple[str, str, bool]:
    return (c.gpu.backend, c.gpu.device, c.data != "resident")


def _cpu_answer(done: Sequence[Measurement], axis: SizeAxis,
                spread: Mapping[tuple[str, str], float]) -> tuple[str, bool]:
    """Without a GPU series set against a CPU: the fastest series at the largest size,
    from where and by how much, over the best of the others; and whether anything was
    compared at all."""
    by_series: dict[Case, dict[int, Measurement]] = defaultdict(dict)
    for m in done:
        by_series[m.case.series][m.case.size] = m
    if not by_series:
        return "no case finished", False
    on_cpu = all(s.device == "cpu" for s in by_series)
    name = (lambda s: s.backend) if on_cpu else series_label
    if len(by_series) == 1:
        return f"only {series_label(next(iter(by_series)))} finished", False
    largest = max(n for at in by_series.values() for n in at)
    winner = min((s for s in by_series if largest in by_series[s]),
                 key=lambda s: by_series[s][largest].summary.median)  # type: ignore[union-attr]
    points = []
    for n in sorted(by_series[winner]):
        others = [at[n] for s, at in by_series.items() if s != winner and n in at]
        if others:
            best = min(others, key=lambda m: m.summary.median)  # type: ignore[union-attr]
            points.append((speedup.of(best, by_series[winner][n], spread), best.case))
    if not points:
        return (f"{series_label(winner)} fastest at "
                f"{axis.phrase.format(units.size(largest))}; no other series ran at the "
                "same sizes"), False
    last, runner_up = points[-1]
    if last.verdict != "gpu":  # "gpu" reads "above 1×" here: the winner's CI clears 1
        return (f"no clear winner between {name(winner)} and {name(runner_up)}"
                f"{' on the CPU' if on_cpu else ''}: {_by(last, axis)} (the CI holds 1×)"), True
    return (f"{name(winner)} fastest{' on the CPU' if on_cpu else ''} "
            f"{_from(tuple(p for p, _ in points), axis)}; "
            f"{_by(last, axis, over=name(runner_up))}"), True


def _from(points: Sequence[Speedup], axis: SizeAxis) -> str:
    """'from n = 256', 'at every size', 'at n = 25600, the only size'."""
    size = measured_crossover(points)
    assert size is not None  # asked only of a winner: its CI clears 1× at the largest size
    at = axis.phrase.format(units.size(size))
    if size != points[0].size:
        return f"from {at}"
    return "at every size" if len(points) > 1 else f"at {at}, the only size"


def _by(p: Speedup, axis: SizeAxis, over: str = "") -> str:
    """'1.4× [1.39, 1.42] over torch at n = 1024'."""
    return (units.ratio(p.estimate, p.low, p.high) + (f" over {over}" if over else "")
            + f" at {axis.phrase.format(units.size(p.size))}")


def _from_size(points: Sequence[Speedup]) -> str:
    size = measured_crossover(points)
    if size is None:
        return "—"
    if size != points[0].size:
        return units.size(size)
    return "every size" if len(points) > 1 else f"{units.size(size)} (only size)"


def _ratio(p: Speedup) -> str:
    return f"{units.ratio(p.estimate, p.low, p.high)} at {units.size(p.size)}"
