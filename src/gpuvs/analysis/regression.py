"""Run against run: did a case get slower, faster, or stay the same?

Two runs' cases are matched on `Case.key` and the workload's version: a registered
workload at another version measures other code, and is refused unless forced; the user's
own code (`Case.users_code`) at another version is the code changed, which is what a gate
is there to judge, so it is compared and said to have changed (`Change.code_changed`).
For each pair, the ratio of medians B ÷ A (above 1: B is slower) with a bootstrap 95 % CI,
a Mann–Whitney U rank test, and a verdict against a threshold t (5 % by default), decided
by the CI, never by the point estimate (as nvbench's compare script does):

- **slower** when the whole CI lies above 1 + t; **faster** when it lies below 1 ÷ (1 + t);
- **same** when the whole CI lies inside [1 ÷ (1 + t), 1 + t];
- **ambiguous** when it straddles a threshold: the runs cannot tell; and a case measured
  on a busy machine (`contended`) on either side is at most ambiguous: other work can
  slow a run by more than any threshold.

Per workload, the geometric mean of the ratios, with a CI from resampling the cases
(with one case, that case's own CI).

Where both runs carry a calibration, its probes are set side by side (`machine`) and each
case against its bound's probe (`analysis.calibration`): a case slower or faster, or
ambiguous beyond the threshold, whose ratio over the probe's (the residual) lies within
the threshold is **machine**; one whose residual lies beyond it keeps its word where the
residual's whole CI agrees, else is ambiguous. The machine explains a change, never makes
one: a case the same in both stays `same`; a case measured under contention, one whose
probe was or whose probe's own change is ambiguous, and every case of a run without a
calibration, is judged on its own.

`gate` is `gpuvs check`'s decision, and the pytest fixture's, and it fails closed: beyond
a clear slowdown, a case of the judged run that did not end `ok` (crashed, timeout, out of
memory, wrong result) fails it, as does one the baseline measured and the judged run no
longer could; a judged run that stopped early fails it; a case it cannot judge fails it
(`unjudged`: measured under contention in either run — a 9× slowdown measured beside two
busy loops is never a pass — or slower by more than the threshold by its ratio with its
whole interval above 1: slower, by an amount the runs cannot pin); and two runs with no
case in common are an error, never a pass.

A gate asks one question of many cases at once, so it judges them together (`FAMILY`): each
of m cases at 1 − 5 %/m (Bonferroni), its interval widened to match (`family_widening`).
At 95 % each, a rerun of unchanged code on an H100 (99 cases, 2026-11-27) had two cases
whose interval lay above 1 by chance; judged together, none. A case whose processes
spread wider than the threshold, with its interval reaching below 1, shows no change the
runs can see: it passes, and the gate says that it could not resolve the threshold there
(`unresolved`) — five processes pin a launch-bound figure on these VMs to ±27 % at the
median, and failing every such case failed every rerun of unchanged code
(docs/accuracy.md).

A case timed in one process shows that process's spread only; judged, it borrows the
spread its run's cases of the same backend and device showed across processes
(`borrowed`). A post's timing replayed as written (one call, timed as the post timed it)
is set side by side and never gated (`Gate.replays`): it times the post's method.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from gpuvs import stats
from gpuvs.analysis import calibration
from gpuvs.analysis.roofline import busy_seconds, resident_key
from gpuvs.model import REPEAT_SPREAD, Caveat, Measurement, Status

DEFAULT_THRESHOLD = 0.05
# The chance that a gate passes a rerun of unchanged code, over all its cases together:
# each of m cases is judged at 1 − (1 − FAMILY)/m.
FAMILY = 0.95
# How far apart two runs put the median of a GPU case whose time is the host's (the GPU
# busy for less than DEVICE_BOUND of a call, or not known to be), measured on H100s on
# 2026-11-26 (docs/accuracy.md): 290 cases of `run --all`, `seeds` and the sweep of
# docs/across-machines.md, each measured twice, were 15 % apart at the median (9 % on
# the same machine minutes later, up to 37 % between two seeds runs on two machines).
# Cases the device keeps busy were 0.1 % apart (27 cases): their cases' own intervals
# (and the timer's repeat spread, `model.REPEAT_SPREAD`) already hold that.
HOST_BOUND_RUN_SPREAD = 0.15
DEVICE_BOUND = 0.8
# A case timed in one process (a call too long to sample in two, the user's function in
# its own process) shows that process's samples only: on one H100 two full `gpuvs seeds`
# back to back (2026-11-28) put NumPy's 10⁹-element passes 24–31 % apart and the CPU
# Jacobians 13–15 %, each case's two samples 1–8 % apart. It borrows the spread of its
# run's cases of the same backend and device sampled in SPREAD_FROM processes or more.
SPREAD_FROM = 3
VERDICTS = ("slower", "ambiguous", "faster", "same", "machine")
# Statuses that say a case went wrong, not that it could not run here (unavailable, skipped).
FAILED = (Status.CRASHED, Status.TIMEOUT, Status.OOM, Status.WRONG_RESULT)
PASS, FAIL, ERROR = "pass", "fail", "error"  # a gate's verdicts; exit codes 0, 1, 2


@dataclass(frozen=True)
class Change:
    """One case in two runs: B's statistic over A's, with its CI and what it means;
    `case_verdict` is what its own ratio says, `verdict` what is said once its bound's
    calibration (`machine`, where both runs have one) is set against it."""

    key: str
    workload: str
    series: str     # the case without its size, in words: one line of a plot
    size: int
    a: float        # A's statistic (seconds per call)
    b: float
    ratio: float    # b / a: above 1, B is slower
    low: float
    high: float
    p_value: float  # Mann–Whitney U, two-sided
    verdict: str
    contended: bool  # either side measured on a busy machine
    code_changed: bool = False  # the user's own code, at another version in B
    case_verdict: str = ""
    machine: calibration.Machine | None = None
    replay: bool = False  # a post's own timing replayed as written: shown, never gated
    grouped: bool = False  # either run's processes fell in two groups (`stats.regimes`)


@dataclass(frozen=True)
class Mean:
    """A workload's geometric mean of ratios, with its CI."""

    workload: str
    cases: int
    ratio: float
    low: float
    high: float


@dataclass(frozen=True)
class Unmatched:
    """A case one run has and the other lacks, or has at another workload version."""

    key: str
    why: str


@dataclass(frozen=True)
class NotMeasured:
    """A case of the judged run with no samples to set against the baseline's."""

    key: str
    status: str
    reason: str
    failing: bool  # it fails the gate (unless failures are allowed)


@dataclass(frozen=True)
class Gate:
    """The judged run (B) against its baseline (A): the verdict, pass, fail or error, and
    in one sentence why; every case compared, every case not compared and why; and the
    two calibrations side by side (`machine`, empty where either run has none)."""

    verdict: str
    exit_reason: str
    threshold: float
    changes: tuple[Change, ...]
    not_measured: tuple[NotMeasured, ...]
    unmatched: tuple[Unmatched, ...]
    machine: tuple[Change, ...] = ()

    @property
    def judged(self) -> tuple[Change, ...]:
        """The changes the gate judges: all but a post's replays as written (`replays`)."""
        return tuple(c for c in self.changes if not c.replay)

    @property
    def replays(self) -> tuple[Change, ...]:
        """A post's timings replayed as written: one call each, timed as the post timed it
        (often without a synchronisation), with no interval a repeat would fall in. They
        are set side by side, and never pass or fail a gate: they time the post's method,
        not the work."""
        return tuple(c for c in self.changes if c.replay)

    @property
    def slower(self) -> tuple[Change, ...]:
        return tuple(c for c in self.judged if c.verdict == "slower")

    @property
    def ambiguous(self) -> tuple[Change, ...]:
        return tuple(c for c in self.judged if c.verdict == "ambiguous")

    @property
    def failing(self) -> tuple[NotMeasured, ...]:
        return tuple(n for n in self.not_measured if n.failing)

    @property
    def unjudged(self) -> tuple[Change, ...]:
        """The cases this gate cannot judge, which keep it from passing (`unjudged`)."""
        return tuple(c for c in self.judged if unjudged(c, self.threshold))

    @property
    def unresolved(self) -> tuple[Change, ...]:
        """Ambiguous cases that do not fail: an interval wider than the threshold, reaching
        below 1 (no change the runs can see) or, where the processes fell in two groups,
        below the threshold; a change of the threshold's size would pass unseen."""
        return tuple(c for c in self.ambiguous if not unjudged(c, self.threshold))


def family_widening(cases: int) -> float:
    """How much wider, in logarithms, a case's 95 % interval becomes when `cases` cases
    are judged together at FAMILY (Bonferroni): the normal quantiles' ratio (1.78 for a
    hundred cases, 1 for one)."""
    from statistics import NormalDist

    z = NormalDist().inv_cdf
    each = (1 - FAMILY) / max(cases, 1)
    return z(1 - each / 2) / z(1 - (1 - FAMILY) / 2)


def verdict(low: float, high: float, threshold: float) -> str:
    up, down = 1 + threshold, 1 / (1 + threshold)
    if low > up:
        return "slower"
    if high < down:
        return "faster"
    if down <= low and high <= up:
        return "same"
    return "ambiguous"


def unjudged(c: Change, threshold: float) -> str:
    """Why a gate cannot judge `c`, or "": measured under contention in either run (other
    processes took the CPU: the ratio may be theirs, either way), or ambiguous with its
    ratio beyond the threshold and its whole interval above 1 (slower, surely, but by an
    amount the runs cannot show to be within the threshold). Against the machine's probe
    the same holds of the residual; and a case slower on its own (its whole interval above
    the threshold) whose residual lies beyond the threshold is not passed either: the
    machine's probe, slower too, explains only part of it. (On the 2-core box, with other
    tests busy, a case planted 4× slower read 3.99× [2.85, 6.46] against a one-thread CPU
    probe 2.88× slower: residual 1.39× [0.81, 3.1], which passed as unresolved.)

    A ratio beyond the threshold is no evidence where either run's processes fell in two
    groups (`Change.grouped`): each figure is then the median of a mix, and it jumps from
    one group to the other as the mix moves. Unchanged code on a second H200 VM read
    1.50× [1.03, 1.52] so, its processes at 79 and 119 µs in both runs, 6 and 13 of 20 in
    the slow one (docs/accuracy.md). Such a case fails only on its interval: whole above
    the threshold, as a 20 % slowdown's was on both VMs ([1.13, 1.54], [1.13, 1.25])."""
    if c.contended:
        return "measured under contention"
    if c.grouped and c.verdict == "ambiguous" and c.low <= 1 + threshold:
        return ""
    if c.verdict == "ambiguous" and c.machine is not None and c.machine.residual > 1 + threshold:
        if c.machine.residual_low > 1:
            return (f"{c.machine.residual:.3g}× slower than the machine's {c.machine.probe} "
                    f"({c.ratio:.3g}× against {c.machine.ratio:.3g}×), its CI above 1 but "
                    f"reaching below {1 + threshold:.3g}")
        if c.low > 1 + threshold:
            return (f"{c.ratio:.3g}× slower, its CI above {1 + threshold:.3g}; the machine's "
                    f"{c.machine.probe} ({c.machine.ratio:.3g}×) explains only part of it "
                    f"({c.machine.residual:.3g}× beyond it)")
    if c.verdict == "ambiguous" and c.machine is None and c.ratio > 1 + threshold \
            and c.low > 1:
        return (f"{c.ratio:.3g}× slower by its ratio, its CI above 1 but reaching below "
                f"{1 + threshold:.3g}")
    return ""


def noise_floor(m: Measurement) -> float:
    """The run-to-run spread of a case of `m`'s kind, as a fraction: HOST_BOUND_RUN_SPREAD
    for a GPU case whose device is busy for less than DEVICE_BOUND of a call (launch-bound
    work, copies, or a busy time never measured); none for a device-bound GPU case, whose
    own interval holds its spread, nor for the CPU, whose spread between processes each
    case's own processes show (and `borrowed` lends a case timed in one)."""
    if m.case.device == "cpu" or m.summary is None:
        return 0.0
    return 0.0 if _device_bound(m) else HOST_BOUND_RUN_SPREAD


def _device_bound(m: Measurement) -> bool:
    """A GPU case with its data resident whose device is busy for DEVICE_BOUND of a call."""
    busy = busy_seconds(m)
    return (m.case.device != "cpu" and m.summary is not None and busy is not None
            and m.case.param("data") != "end_to_end" and busy >= DEVICE_BOUND * m.summary.median)


def process_spread(ms: Sequence[Measurement]) -> dict[tuple[str, str], float]:
    """How far a run's processes put one case's figure apart, per backend and device: the
    median, over its cases sampled in SPREAD_FROM processes or more, of their 95 %
    interval's half-width (geometric, as a fraction), which holds where a repeat's figure
    lands (`stats.repeat_interval`). The calibration's probes are left out: they are the
    machine's, and the all-threads CPU probe's processes can be a hundred times apart."""
    widths: dict[tuple[str, str], list[float]] = defaultdict(list)
    for m in ms:
        s = m.summary
        if (m.status is Status.OK and s is not None and s.ci_low > 0 and not m.case.calibrates
                and len(m.passes) >= SPREAD_FROM):
            widths[m.case.backend, m.case.device].append(math.sqrt(s.ci_high / s.ci_low) - 1)
    return {k: float(np.median(v)) for k, v in widths.items()}


def borrowed(m: Measurement, spread: Mapping[tuple[str, str], float]) -> float:
    """The spread a case timed in one process borrows from its run (`process_spread`): one
    process shows its own samples only, and a repeat lands where the kind's processes
    land. None for a case sampled in several, which shows its own, nor for a GPU case its
    device keeps busy, whose interval holds its repeat (docs/accuracy.md)."""
    if not m.one_process or _device_bound(m):
        return 0.0
    return spread.get((m.case.backend, m.case.device), 0.0)


def change(a: Measurement, b: Measurement, threshold: float = DEFAULT_THRESHOLD,
           statistic: str = "median", widening: float = 1.0, lent: float = 0.0) -> Change:
    """B against A for one case (both must have samples). For the median, the ratio is
    of the two figures (each the median of its processes' medians), and its interval
    is over processes: where both sides were sampled in three processes or more, Moses'
    rank interval over their processes' medians (`stats.ratio_over_processes`); else never
    narrower than the two cases' own intervals allow (B's over A's, worst to worst), which
    cover each case's passes. Either way never narrower than the run-to-run spread of its
    timer (`model.REPEAT_SPREAD`), which a bootstrap of the pooled samples cannot see,
    nor, where either side has too few processes for an interval over them, than ± the
    run-to-run spread measured on cases of its kind (`noise_floor`: a GPU case the host
    sets the pace of moved 15 % between two-process runs at the median; over twenty
    processes a side, that floor alone hid a launch-bound function slowed by 18 %), nor
    than ± `lent`, the spread a case timed in one process borrows (`borrowed`).
    `widening` stretches the interval, in logarithms, for a case judged with others
    (`family_widening`)."""
    ratio, low, high = stats.ratio_ci(b.samples, a.samples, statistic=statistic)
    f = stats.STATISTICS[statistic]
    fa, fb = float(f(a.samples)), float(f(b.samples))
    sa, sb = a.summary, b.summary
    over = None
    if statistic == "median" and sa is not None and sb is not None and sa.ci_low > 0:
        fa, fb, ratio = sa.median, sb.median, sb.median / sa.median
        over = stats.ratio_over_processes(b.samples, b.passes, a.samples, a.passes)
        if over is not None:  # it holds the samples' own noise: each process's median does
            low, high = over[1], over[2]
        else:
            low = min(low, ratio, sb.ci_low / sa.ci_high)
            high = max(high, ratio, sb.ci_high / sa.ci_low)
    host = (noise_floor(a), noise_floor(b)) if over is None else (0.0, 0.0)
    floor = max(*host, REPEAT_SPREAD.get(a.timer, 0.0), REPEAT_SPREAD.get(b.timer, 0.0), lent)
    low, high = min(low, ratio / (1 + floor)), max(high, ratio * (1 + floor))
    low, high = ratio * (low / ratio) ** widening, ratio * (high / ratio) ** widening
    _, p = stats.mann_whitney_u(b.samples, a.samples)
    contended = Caveat.CONTENDED in a.caveats or Caveat.CONTENDED in b.caveats
    word = verdict(low, high, threshold)
    if contended and word in ("slower", "faster"):
        word = "ambiguous"
    c = a.case
    series = " ".join([*([c.variant] if c.variant != "correct" else []), c.backend, c.device,
                       c.dtype, *(f"{k}={v}" for k, v in c.params)])
    return Change(c.key, c.workload, series, c.size, fa, fb, ratio, low, high, p, word,
                  contended,
                  c.users_code and a.workload_version != b.workload_version, word,
                  replay=c.variant == "as_written",
                  grouped=a.regimes is not None or b.regimes is not None)


def machine(a: Sequence[Measurement], b: Sequence[Measurement],
            threshold: float = DEFAULT_THRESHOLD, statistic: str = "median"
            ) -> list[Change]:
    """The two runs' calibrations side by side: each probe both measured (ok, at one
    version), B ÷ A with its CI, judged as a case is, its `series` the probe's label;
    empty where either has none."""
    first = {m.case.key: m for m in calibration.split(a)[0]
             if m.status is Status.OK and m.samples}
    return [replace(change(first[m.case.key], m, threshold, statistic),
                    series=calibration.label(m.case))
            for m in calibration.split(b)[0]
            if m.status is Status.OK and m.samples and m.case.key in first
            and first[m.case.key].workload_version == m.workload_version]


def explained(c: Change, probe: Change, label: str, threshold: float) -> Change:
    """`c` judged against its bound's probe in the two runs (`probe`, from `machine`):
    its residual, and the verdict the module's docstring sets out."""
    m = calibration.Machine.against(label, probe.key, (probe.ratio, probe.low, probe.high),
                                    (c.ratio, c.low, c.high))
    up, down = 1 + threshold, 1 / (1 + threshold)
    slower = c.verdict == "slower" or c.verdict == "ambiguous" and c.ratio > up
    faster = c.verdict == "faster" or c.verdict == "ambiguous" and c.ratio < down
    word = c.verdict
    if slower or faster:
        within = m.residual <= up if slower else m.residual >= down
        beyond = verdict(m.residual_low, m.residual_high, threshold)
        word = ("machine" if within
                else beyond if beyond == ("slower" if slower else "faster") else "ambiguous")
    return replace(c, machine=m, verdict=word)


def compare(a: Sequence[Measurement], b: Sequence[Measurement],
            threshold: float = DEFAULT_THRESHOLD, force: bool = False,
            statistic: str = "median", probes: Sequence[Change] | None = None,
            together: bool = False) -> tuple[list[Change], list[Unmatched]]:
    """Every case finished in both runs, matched on its key and workload version, each
    judged against its bound's calibration where both runs have one (`probes`: `machine`'s
    side by side, made here if not given). With `force`, cases of a registered workload
    whose versions differ are compared anyway (and still listed as unmatched, so the
    output can say so); the user's own code is compared at any version, its `Change`
    saying whether the code changed. `together`: the cases are judged as one family, each
    interval widened for their number (`family_widening`), as a gate judges them."""
    if probes is None:
        probes = machine(a, b, threshold, statistic)
    (found, a), (_, b) = calibration.split(a), calibration.split(b)
    first = {m.case.key: m for m in a if m.status is Status.OK and m.samples}
    pairs: list[tuple[Measurement, Measurement]] = []
    unmatched = []
    for m in b:
        if m.status is not Status.OK or not m.samples:
            continue
        base = first.get(m.case.key)
        if base is None:
            unmatched.append(Unmatched(m.case.key, "only in B"))
            continue
        if base.workload_version != m.workload_version and not m.case.users_code:
            unmatched.append(Unmatched(m.case.key, (
                f"workload version {base.workload_version or '?'} in A, "
                f"{m.workload_version or '?'} in B")))
            if not force:
                continue
        pairs.append((base, m))
    widening = family_widening(len(pairs)) if together else 1.0
    spread_a, spread_b = process_spread(a), process_spread(b)
    changes = _twins_grouped(pairs, [change(base, m, threshold, statistic, widening,
                                            max(borrowed(base, spread_a), borrowed(m, spread_b)))
                                     for base, m in pairs])
    seen = {m.case.key for m in b}
    unmatched += [Unmatched(k, "only in A") for k in first if k not in seen]
    # Each judged against its bound's probe, where A's calibration tells its bound, the
    # probe's own change is known (not ambiguous: a probe's noise explains nothing) and
    # neither the probe nor the case was measured under contention.
    usable = {p.key: p for p in probes if not p.contended and p.verdict != "ambiguous"}
    bound = calibration.bounds(a, found) if usable else {}
    beside = [(c, bound.get(c.key)) for c in changes]
    return [explained(c, usable[p.case.key], calibration.label(p.case), threshold)
            if p is not None and p.case.key in usable and not c.contended else c
            for c, p in beside], unmatched


def _twins_grouped(pairs: Sequence[tuple[Measurement, Measurement]],
                   changes: Sequence[Change]) -> list[Change]:
    """`changes`, an end-to-end case grouped where its resident twin is: the two run in
    the same processes, one after the other, and a process's group is the process's. On
    an H200 (2026-11-28) the end-to-end medians of the processes whose resident case was
    in the fast group were 128–146 µs, of the others 167–198 µs, in each of five runs;
    the end-to-end's own groups, its copies' noise on top, were not always told apart."""
    grouped = {resident_key(base.case) for (base, _), c in zip(pairs, changes, strict=True)
               if c.grouped and base.case.param("data", "resident") == "resident"}
    return [replace(c, grouped=True)
            if base.case.param("data") == "end_to_end" and resident_key(base.case) in grouped
            else c for (base, _), c in zip(pairs, changes, strict=True)]


def gate(a: Sequence[Measurement], b: Sequence[Measurement],
         threshold: float = DEFAULT_THRESHOLD, force: bool = False, allow_failed: bool = False,
         unfinished: str = "", statistic: str = "median") -> Gate:
    """B judged against A. It fails on a case slower beyond `threshold` (its whole CI), on
    a case it cannot judge (`unjudged`), and, unless `allow_failed`, on a case of B that
    did not end ok — failed, or unavailable or skipped where A measured it — and on a B
    that stopped early (`unfinished` says how). With no case in common, the verdict is an
    error: nothing was checked."""
    probes = machine(a, b, threshold, statistic)
    changes, unmatched = compare(a, b, threshold, force, statistic, probes, together=True)
    a, b = calibration.cases_of(a), calibration.cases_of(b)  # a probe is no case to gate
    measured_in_a = {m.case.key for m in a if m.status is Status.OK and m.samples}
    not_measured = tuple(
        NotMeasured(m.case.key, m.status.value, m.reason,
                    m.status in FAILED or m.case.key in measured_in_a)
        for m in b if m.status is not Status.OK or not m.samples)
    failing = [n for n in not_measured if n.failing]
    if not changes and not failing:
        return Gate(ERROR, _nothing_in_common(a, b), threshold, (), not_measured,
                    tuple(unmatched), tuple(probes))
    judged = [c for c in changes if not c.replay]
    reasons = _slower(judged, threshold)
    if failing and not allow_failed:
        reasons.append(f"{len(failing)} case(s) did not end ok: " + ", ".join(
            f"{n.key} ({n.status})" for n in failing))
    reasons += _cannot_judge(judged, threshold)
    if unfinished and not allow_failed:
        reasons.append(unfinished)
    if reasons:
        return Gate(FAIL, "; ".join(reasons), threshold, tuple(changes), not_measured,
                    tuple(unmatched), tuple(probes))
    allowed = (f"; allowed (--allow-failed): {len(failing)} case(s) that did not end ok"
               if failing else "") + (f"; allowed (--allow-failed): {unfinished}"
                                      if unfinished else "")
    explained = sum(c.verdict == "machine" for c in judged)
    by_machine = (f" beyond what the machine explains ({explained} case(s) machine)"
                  if explained else "")
    replays = len(changes) - len(judged)
    by_machine += (f"; {replays} post replay(s) as written set side by side, not judged"
                   if replays else "")
    return Gate(PASS, f"no case slower by more than {100 * threshold:g} %{by_machine}"
                f"{allowed}", threshold, tuple(changes), not_measured, tuple(unmatched),
                tuple(probes))


def _slower(changes: Sequence[Change], threshold: float) -> list[str]:
    slower = [c for c in changes if c.verdict == "slower"]
    return [f"{len(slower)} case(s) slower by more than {100 * threshold:g} % with the whole "
            "CI above it: " + ", ".join(f"{c.key} ({c.ratio:.3f}×)" + (
                f" against the machine's {c.machine.probe} {c.machine.ratio:.3f}×"
                if c.machine else "") for c in slower)] if slower else []


def _cannot_judge(changes: Sequence[Change], threshold: float) -> list[str]:
    """The cases the gate cannot judge, by why. No flag lets them pass: measure them again
    on a quiet machine, or with more budget."""
    reasons = []
    contended = [c for c in changes if c.contended]
    if contended:
        reasons.append(f"cannot judge: {len(contended)} case(s) measured under contention "
                       "(other processes took the CPU in A or B; measure again on a quiet "
                       f"machine): " + ", ".join(f"{c.key} ({c.ratio:.3f}×)" for c in contended))
    wide = [c for c in changes if not c.contended and unjudged(c, threshold)]
    if wide:
        reasons.append(f"cannot judge: {len(wide)} case(s) slower beyond the threshold by "
                       "their ratio, with intervals above 1 but reaching below it: "
                       + ", ".join(f"{c.key} ({unjudged(c, threshold)})" for c in wide))
    return reasons


def _nothing_in_common(a: Sequence[Measurement], b: Sequence[Measurement]) -> str:
    """Why nothing was compared, naming what each run measured."""
    def measured(ms: Sequence[Measurement]) -> str:
        done = sorted({m.case.workload for m in ms if m.status is Status.OK and m.samples})
        return ", ".join(done) or "no case that ended ok"

    return (f"no case in common: A measured {measured(a)}; B measured {measured(b)} — judge a "
            "run of the same cases as its baseline")


def geometric_means(changes: Sequence[Change], resamples: int = stats.BOOTSTRAP_RESAMPLES
                    ) -> list[Mean]:
    """Per workload: exp(mean(log ratio)), its CI by resampling the cases (a single
    case's own CI when there is one)."""
    by: dict[str, list[Change]] = defaultdict(list)
    for c in changes:
        by[c.workload].append(c)
    out = []
    for workload, cs in sorted(by.items()):
        logs = np.log([c.ratio for c in cs])
        mean = float(math.exp(logs.mean()))
        if len(cs) == 1:
            out.append(Mean(workload, 1, mean, cs[0].low, cs[0].high))
            continue
        rng = np.random.default_rng(stats.BOOTSTRAP_SEED)
        means = logs[rng.integers(0, len(cs), size=(resamples, len(cs)))].mean(axis=1)
        lo, hi = np.exp(np.quantile(means, [0.025, 0.975]))
        out.append(Mean(workload, len(cs), mean, float(lo), float(hi)))
    return out


def parse_threshold(text: str) -> float:
    """'5%' → 0.05, '0.05' → 0.05; a ValueError for anything else."""
    value = float(text.rstrip("%")) / (100 if text.endswith("%") else 1)
    if not math.isfinite(value) or value <= 0:
        raise ValueError(text)
    return value
