"""What limits a case — launch, transfer, memory or compute — and one sentence why.

Rules, in order, each citing measured numbers:

1. **launch-bound**: the GPU is busy for less than BUSY_SHARE of a call (its busy time
   measured by a CUDA-graph replay or the profiler's kernel time, `busy_seconds`): the
   rest is the host issuing work; or, where no busy time was measured, the time per call
   is within LAUNCH_FACTOR of the backend's per-op dispatch cost times the ops launched;
2. **transfer-bound**: an end-to-end case spends over TRANSFER_SHARE of its time on
   host↔device copies (its time against the same case with the data resident);
3. otherwise **memory-** or **compute-bound** by arithmetic intensity (FLOP per byte)
   against the ridge point of the measured ceilings (peak FLOP/s ÷ bandwidth).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum

from gpuvs import units
from gpuvs.analysis.ceilings import DISPATCH, peak_for
from gpuvs.model import Case, Caveat, Ceiling, Measurement, Status

LAUNCH_FACTOR = 2.0
TRANSFER_SHARE = 0.5
# Below this share of a call on the GPU, the call is the host issuing it.
BUSY_SHARE = 0.5
# Where a busy time comes from, best first: a CUDA-graph replay, the profiler's kernels.
BUSY_COUNTERS = ("busy_graph_s", "busy_kernels_s")


class Bound(str, Enum):
    """What sets a call's time: the four regimes, for a measured case (`classify`) and for
    a predicted one (`gpuvs.predicting.pricing`, whose terms are named by `term`)."""

    LAUNCH = "launch-bound"
    TRANSFER = "transfer-bound"
    MEMORY = "memory-bound"
    COMPUTE = "compute-bound"

    def __str__(self) -> str:
        return self.value

    @property
    def term(self) -> str:
        """The regime's one word ("launch"): a prediction's term, and the key its
        calibration is stored under (`NAME.residuals.json`)."""
        return self.value.removesuffix("-bound")


@dataclass(frozen=True)
class Finding:
    case: Case
    bound: Bound
    why: str


def findings(measurements: Sequence[Measurement], ceilings: Sequence[Ceiling]
             ) -> dict[str, Finding]:
    """A finding per case key, for the cases the ceilings allow to classify."""
    resident = resident_of(measurements)
    out = {}
    for m in measurements:
        found = classify(m, ceilings, resident.get(resident_key(m.case)))
        if found is not None:
            out[m.case.key] = found
    return out


def resident_key(case: Case) -> str:
    """The case's key without its data axis: an end-to-end case and its resident twin
    share it."""
    return Case(case.workload, case.variant, case.backend, case.device, case.dtype, case.size,
                tuple(p for p in case.params if p[0] != "data")).key


def classify(m: Measurement, ceilings: Iterable[Ceiling],
             resident: Measurement | None = None) -> Finding | None:
    if m.status is not Status.OK or m.summary is None:
        return None
    ceilings = list(ceilings)
    t = m.summary.median
    busy = busy_seconds(m)
    issued = busy_says_launch(m)
    if issued is not None:
        if issued:
            return Finding(m.case, Bound.LAUNCH, (
                f"GPU busy {units.seconds(busy or 0.0)} of {units.seconds(t)} a call; the "
                "rest is the host issuing the work: more work per call, batching, fusion or "
                "a CUDA graph is what helps"))
        return _by_intensity(m, t, ceilings)
    launches = m.counters.get("launches", 1.0)
    dispatch = _dispatch(m.case, ceilings)
    if dispatch is not None and on_dispatch_floor(m, dispatch):
        return Finding(m.case, Bound.LAUNCH, (
            f"{units.seconds(min(t, dispatch * launches))} of {units.seconds(t)} per call is "
            f"the dispatch floor ({launches:.0f} op(s) × {units.seconds(dispatch)}); more "
            "work per call, batching or fusion is what helps"))
    share = copy_share(m, resident)
    if share is not None and share > TRANSFER_SHARE and resident and resident.summary:
        return Finding(m.case, Bound.TRANSFER, (
            f"{share:.0%} of the {units.seconds(t)} call is host↔device copying"
            f"{_copies(m)} (the work alone takes {units.seconds(resident.summary.median)}"
            "); keep the data on the device"))
    return _by_intensity(m, t, ceilings)


def busy_says_launch(m: Measurement) -> bool | None:
    """Rule 1 where the GPU's busy time decides it (a resident case whose busy time was
    measured): whether the host issuing the work sets the call's time; None where the
    busy time cannot say (none measured, or an end-to-end call, whose copies keep the
    device idle)."""
    busy = busy_seconds(m)
    if busy is None or m.summary is None or m.case.param("data") == "end_to_end":
        return None
    return busy < BUSY_SHARE * m.summary.median


def on_dispatch_floor(m: Measurement, dispatch_s: float) -> bool:
    """Rule 1 where no busy time decides it: the call takes no more than LAUNCH_FACTOR
    times the ops it launches at `dispatch_s` each."""
    return (m.summary is not None
            and m.summary.median <= LAUNCH_FACTOR * dispatch_s * m.counters.get("launches", 1.0))


def copy_share(m: Measurement, resident: Measurement | None) -> float | None:
    """Rule 2's measure: the share of an end-to-end call spent copying, against the same
    case with its data resident; None for a resident case or without that case."""
    if (m.case.param("data") != "end_to_end" or m.summary is None or resident is None
            or resident.summary is None):
        return None
    return 1 - resident.summary.median / m.summary.median


def resident_of(measurements: Sequence[Measurement]) -> dict[str, Measurement]:
    """Each finished resident case by its key without the data axis: what rule 2 sets
    an end-to-end case against (`resident_key`)."""
    return {resident_key(m.case): m for m in measurements
            if m.status is Status.OK and m.case.param("data", "resident") == "resident"}


def busy_seconds(m: Measurement) -> float | None:
    """The GPU's own busy time per call (kernels, without the host's launches), where it
    was measured: a CUDA-graph replay first, else the profiler's kernel time."""
    for counter in BUSY_COUNTERS:
        if counter in m.counters:
            return m.counters[counter]
    return None


def dispatch_cost(backend: str, device: str, ceilings: Sequence[Ceiling]) -> float | None:
    """Seconds per one-element op of `backend` on `device` (the CPU, or any GPU), as the
    `dispatch` probe measured it; None where it was not."""
    for c in ceilings:
        if c.name == DISPATCH and c.backend == backend \
                and (c.device == "cpu") == (device == "cpu"):
            return c.value
    return None


def _dispatch(case: Case, ceilings: Sequence[Ceiling]) -> float | None:
    return dispatch_cost(case.backend, case.device, ceilings)


def _by_intensity(m: Measurement, t: float, ceilings: Sequence[Ceiling]) -> Finding | None:
    working_set = m.counters.get("working_set_bytes")
    peaks = peak_for(m.case, ceilings, tf32=Caveat.TF32_ON in m.caveats,
                     working_set=working_set)
    flops, moved = m.counters.get("flops", 0.0), m.counters.get("bytes_moved", 0.0)
    if not moved or "bytes" not in peaks:
        return None
    bw_share = moved / t / peaks["bytes"]
    roof = (f"the L{peaks['cache_level']:.0f} cache's measured bandwidth (its "
            f"{units.nbytes(working_set or 0)} fit there)" if "cache_level" in peaks
            else "measured bandwidth")
    if not flops or "flops" not in peaks:
        return Finding(m.case, Bound.MEMORY, (
            f"no arithmetic to speak of: it moves {units.nbytes(moved)} at "
            f"{bw_share:.0%} of {roof}" + _beyond(bw_share, peaks, working_set)))
    intensity, ridge = flops / moved, peaks["flops"] / peaks["bytes"]
    flop_share = flops / t / peaks["flops"]
    bound = Bound.COMPUTE if intensity >= ridge else Bound.MEMORY
    reached = (f"{flop_share:.0%} of peak FLOP/s" if bound is Bound.COMPUTE
               else f"{bw_share:.0%} of {roof}" + _beyond(bw_share, peaks, working_set))
    return Finding(m.case, bound, (
        f"{intensity:.3g} FLOP/byte against a ridge point of {ridge:.3g}: it reaches "
        f"{reached}"))


def _beyond(share: float, peaks: Mapping[str, float], working_set: float | None) -> str:
    """Over 100 % of a roof needs a reason, given only when it is true."""
    if share <= 1:
        return ""
    if "cache_level" in peaks:
        return (" (over 100 % of that cache's: part of its data may sit in a smaller, "
                "faster cache, whose bandwidth is not measured)")
    if working_set and peaks.get("caches_known"):
        return (" (over 100 %, with more data than any cache holds: the bandwidth ceiling "
                "was measured low or the bytes are overcounted; rerun `gpuvs ceilings "
                "--refresh` on a quiet machine)")
    return " (over 100 %: no cache was measured here, so its data may sit in one)"


def _copies(m: Measurement) -> str:
    """', 2 copies in and 1 out' where a profiler counted them."""
    if "h2d_copies" not in m.counters:
        return ""
    return (f", {m.counters['h2d_copies']:.0f} copies in and "
            f"{m.counters['d2h_copies']:.0f} out")
