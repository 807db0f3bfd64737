"""A call's counted work against a device profile: its time per call, term by term.

Four terms, each from one measured ceiling of the target:

- **compute**: FLOPs ÷ the matrix-product peak at the call's dtype (TF32's where the
  backend multiplies float32 on TF32 units);
- **memory**: bytes moved ÷ the device's copy bandwidth;
- **launch**: kernels launched × the backend's per-op dispatch cost on that GPU — the
  host's time to issue the work, which a GPU waits on when each kernel is short. An op
  of a family (`model.OP_FAMILIES`: an array creation, a small product, a fused call) is
  priced at its own family's measured cost, where the profile has it;
- **transfer** (end-to-end calls only): bytes copied in and out ÷ the backend's own
  copy rates (`from_numpy`, `to_numpy`: JAX's and CuPy's paths are not torch's), else
  torch's pageable rates, plus one launch-and-sync latency per copy (each pageable copy
  waits for the device).

The device works while the host launches, so a resident call takes the largest of the
first three (the roofline's max, with launches as a third roof); an end-to-end call adds
its copies, which neither overlaps. The largest term is the call's bound, said in words.

An output past FRESH_BYTES is brought back into freshly mapped host memory on every call
(allocators hand such sizes to the kernel with mmap and give them back on free), and
the copy then faults it in page by page: far slower than a copy into memory used before.
It is priced at the backend's copy into fresh pages where the profile measured one, and
such calls form a regime of their own (`Estimate.regime`), which the validation run
calibrates apart.

**The user's code, op by op** (`Work.tallies`, where the profile measured op classes):
each op is priced by its class (`model.OP_CLASSES`), read along that class's probe on the
target over sizes (`ClassCost`): the host pays the class's launch (its smallest size's
time per op), the device the probe's time at the op's bytes (FLOPs for the products,
convolutions and attention) — a sort several passes over its memory, an elementwise op
one. The ops of a call run one after another on the device, so their device times add
(`Estimate.summed`); the host pays their launches and a share of the call's own cost
beyond them (`Work.host_s`, measured on the CPU; `HOST_SHARE`); an op that waits for
the device (a unique, a masked selection) overlaps nothing (`Estimate.waits`), and one
priced by a class whose probe does not wait (a `bincount`, a scatter that must learn
its size first) pays the target's launch-and-sync round trip on top: counted as a plain
scatter, a bincount was predicted at 12 µs where the GPU took 60–100 µs. A class the profile
did not measure is priced as the nearest one it did, and said (`Estimate.notes`). The
copies of an end-to-end call go at the rate measured for their size on the target, as
`gpuvs.compare` makes them (`.to(device)` in, `.cpu()` into new host memory out).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import pairwise
from types import MappingProxyType

from gpuvs import units
from gpuvs.analysis.ceilings import DISPATCH, FRESH_BYTES, copy_name, dispatch_name, peak_for
from gpuvs.analysis.roofline import Bound
from gpuvs.errors import UsageError
from gpuvs.model import FLOP_CLASSES, OP_CLASSES, Case, OpCost
from gpuvs.predicting.opclasses import SYNCING_CLASSES, nearest
from gpuvs.predicting.profile import Profile
from gpuvs.predicting.work import Tally, Work

FRESH = "transfer-fresh"
LATENCY = "launch + sync latency"
H2D, D2H = "h2d pageable", "d2h pageable"
FAMILY_WORDS = {"create": " (an array creation's)", "product": " (a small product's)",
                "fused": " (a fused call's)"}
# The share of the call's own host work, as the CPU run timed it (`Work.host_s`), that a
# GPU call's host pays. Whole, it priced the corpus's chains of 8 ops and more at 1.4×
# what they took (their measured ÷ modelled times: 0.69–0.74, against 1.05–1.15 for
# calls of one to three ops), the more so the more of the call it was. A likely cause,
# not measured: on the CPU the Python between ops runs after each op has filled the
# caches with its data, where a GPU's host holds only its own state. Each of the
# corpus's five sets predicted with the other four's calibration (2026-11-28), the
# whole of it read 31.8, 30.6, 35.3, 33.8 and 43.2 % median error data resident, half
# of it 31.1, 29.3, 33.2, 31.8 and 33.6 % (85–96 % inside the interval either way, the
# end-to-end errors within 4 points) — the best of 36 (host share, launch share, fixed
# cost) tried, and chosen on those sets: the sixth set, held out, judges it.
HOST_SHARE = 0.5


@dataclass(frozen=True)
class Estimate:
    """The model's time per call for one call on one profile, before calibration."""

    terms: Mapping[Bound, float]  # seconds per call each term alone would take
    dominant: Bound  # the roofline's regime: the same four names as a measured case's
    why: str  # the dominant term, in words, with its numbers
    regime: str = ""  # what calibrates it: the dominant term (`Bound.term`), or FRESH
    summed: bool = False  # ops priced one by one: their compute and memory times add
    waits: float = 0.0    # seconds of ops that wait for the device, overlapping nothing
    notes: tuple[str, ...] = ()  # what the estimate assumed, in words

    def __post_init__(self) -> None:
        object.__setattr__(self, "terms", MappingProxyType(dict(self.terms)))

    @property
    def seconds(self) -> float:
        return combine(self.terms, self.summed) + self.waits


def combine(terms: Mapping[Bound, float], summed: bool = False) -> float:
    """Launches overlap the device's work, copies overlap nothing; the device's work is
    the larger of a call's compute and memory times, or their sum where its ops were
    priced one class at a time (each op is bound by its own)."""
    device = (terms[Bound.COMPUTE] + terms[Bound.MEMORY] if summed
              else max(terms[Bound.COMPUTE], terms[Bound.MEMORY]))
    return max(device, terms[Bound.LAUNCH]) + terms[Bound.TRANSFER]


def estimate(work: Work, profile: Profile) -> Estimate:
    """`work` on `profile`'s GPU; UsageError when the profile lacks a ceiling it needs."""
    if not profile.has_gpu:
        raise UsageError(f"profile {profile.name!r} was measured on a machine without a "
                         f"GPU ({profile.device}): it predicts no GPU time")
    peaks = peak_for(Case("", "", work.backend, "cuda:0", work.dtype, 0), profile.ceilings,
                     tf32=work.tf32)
    if "bytes" not in peaks:
        raise UsageError(_missing(profile, "GPU memory bandwidth"))
    if work.flops and "flops" not in peaks:
        raise UsageError(_missing(profile, f"{work.dtype} matrix-product peak on a GPU"))
    costs = class_costs(profile.op_classes, work.backend)
    if work.tallies and costs:
        return _by_class(work, profile, costs, peaks)
    dispatch, family = _dispatch(profile, work)
    terms = {Bound.COMPUTE: work.flops / peaks["flops"] if work.flops else 0.0,
             Bound.MEMORY: work.bytes / peaks["bytes"],
             Bound.LAUNCH: work.launches * dispatch, Bound.TRANSFER: 0.0}
    rates = (0.0, 0.0, 0.0)
    past_fresh = max(work.copied_out, default=0.0) > FRESH_BYTES
    if work.end_to_end:
        h2d = _copy(profile, work.backend, "h2d")
        d2h = {f: _copy(profile, work.backend, "d2h", f) for f in (False, True)}
        rates = (h2d, d2h[past_fresh], _gpu(profile, LATENCY, work.backend))
        terms[Bound.TRANSFER] = (sum(work.copied_in) / h2d
                                 + sum(o / d2h[o > FRESH_BYTES] for o in work.copied_out)
                                 + (len(work.copied_in) + len(work.copied_out)) * rates[2])
    dominant = (Bound.TRANSFER if terms[Bound.TRANSFER] >= combine(terms) / 2 else
                max((Bound.COMPUTE, Bound.MEMORY, Bound.LAUNCH), key=lambda t: terms[t]))
    fresh = past_fresh and dominant is Bound.TRANSFER
    why = _why(dominant, work, terms, peaks, (dispatch, family), rates) + (
        "; its output lands in freshly mapped host memory" if fresh else "")
    notes = (f"profile {profile.name!r} has no op classes (measured before they were): "
             "priced by the call's total FLOPs, bytes and launches; `gpuvs ceilings "
             f"--refresh --save-profile NAME` on {profile.device} measures them",
             ) if work.tallies else ()
    return Estimate(terms, dominant, why, FRESH if fresh else dominant.term, notes=notes)


@dataclass(frozen=True)
class ClassCost:
    """One op class's cost per op on a profile's GPU, read along its probe's points: the
    host's launch (the smallest size's time: the device is idle at that size), and the
    device's time for one op of a given amount, straight between the two measured points
    around it on logarithmic axes — a class's time per byte (per FLOP for
    `model.FLOP_CLASSES`) changes with size (a small attention fills few of the GPU's
    units) — and along the last two points' line beyond them.

    It was once a line through the two largest busy points: its intercept priced a
    64-token attention at 76 µs (a 74 µs fixed cost extrapolated from 8.6 and 137 GFLOP),
    where the probe itself measured 30 µs at 0.5 GFLOP and the GPU took 15 µs. With a
    gather's bytes and a sync's round trip (`tensors.gathered`, `_by_class`) it took the
    first corpus's 74 resident cases, each predicted without its own function, from
    29.6 % to 26.8 % median error, 80 % to 84 % inside the interval, 85 % to 89 % of
    winners right (`benchmarks/corpus.py tables --recount`; docs/prediction.md)."""

    op_class: str
    launch: float
    points: tuple[tuple[float, float], ...]  # (amount, seconds per op), by amount

    def device(self, ops: int, amount: float) -> float:
        """The device's seconds for `ops` ops moving (or computing) `amount` in all: each
        op's share read along the points past the smallest (whose time is the host's
        launch, the device idle), in proportion below them."""
        if not ops:
            return 0.0
        each = amount / ops
        busy = self.points[1:] or self.points
        if each <= busy[0][0]:
            return ops * busy[0][1] * each / busy[0][0]
        return ops * _along(busy, each)

    def at(self, amount: float) -> float:
        """A copy's seconds at `amount` bytes, along its points (`_along`)."""
        return _along(self.points, amount)


def _along(points: Sequence[tuple[float, float]], amount: float) -> float:
    """Seconds at `amount` read along measured (amount, seconds) points: the smallest
    point's below them, straight between two on logarithmic axes, beyond them along the
    last two's line (a single point, or two that fell: the last one's rate). Read straight
    on linear axes, the first corpus's end-to-end calls were predicted 23.9 % off (88 %
    inside the interval), on logarithmic ones 22.3 % (89 %)."""
    (a0, t0) = points[0]
    if amount <= a0:
        return t0
    for (a1, t1), (a2, t2) in pairwise(points):
        if amount <= a2:
            return t1 * math.exp(math.log(t2 / t1) * math.log(amount / a1) / math.log(a2 / a1))
    if len(points) == 1:
        return t0 * amount / a0
    (a1, t1), (a2, t2) = points[-2:]
    slope = (t2 - t1) / (a2 - a1)
    # two points that fell (noise at the top) say nothing of a slope: the last one's rate
    return t2 + slope * (amount - a2) if slope > 0 else t2 * amount / a2


def class_costs(measured: Sequence[OpCost], backend: str) -> dict[str, ClassCost]:
    """Each op class `backend` was probed for on the GPU (`ClassCost`)."""
    by: dict[str, list[tuple[float, float]]] = {}
    for c in measured:
        if c.backend == backend and c.device != "cpu":
            by.setdefault(c.op_class, []).append((c.amount, c.seconds))
    return {name: ClassCost(name, min(points)[1], tuple(sorted(points)))
            for name, points in by.items()}


def _by_class(work: Work, profile: Profile, costs: Mapping[str, ClassCost],
              peaks: Mapping[str, float]) -> Estimate:
    """The user's ops priced one class at a time (the module's docstring)."""
    terms = {Bound.COMPUTE: 0.0, Bound.MEMORY: 0.0, Bound.LAUNCH: work.host_s * HOST_SHARE,
             Bound.TRANSFER: 0.0}
    waits, notes, busiest = 0.0, list(work.named), (0.0, "")
    latency = _measured(profile, LATENCY, work.backend) or 0.0
    for t in work.tallies:
        chosen = nearest(t.op_class, set(costs) - {"to_device", "to_host"})
        if chosen is None:
            raise UsageError(_missing(profile, f"op class {t.op_class!r} or any near it"))
        if chosen != t.op_class:
            notes.append(f"{t.ops} op(s) of {OP_CLASSES[t.op_class]} priced as "
                         f"{OP_CLASSES[chosen]}: not measured on {profile.name}")
        cost = costs[chosen]
        flops = chosen in FLOP_CLASSES
        device = cost.device(t.ops, t.flops * _flop_scale(chosen, work, profile)
                             if flops else t.bytes)
        if t.syncs:  # it waits for the device: host and device overlap nothing around it
            # ... and, where its class's probe did not wait, pays the round trip too
            waits += max(t.ops * cost.launch, device) + (
                0.0 if chosen in SYNCING_CLASSES else t.ops * latency)
            continue
        terms[Bound.COMPUTE if flops else Bound.MEMORY] += device
        terms[Bound.LAUNCH] += t.ops * cost.launch
        busiest = max(busiest, (device, _part(t, device, peaks)))
    past_fresh = max(work.copied_out, default=0.0) > FRESH_BYTES
    if work.end_to_end:
        terms[Bound.TRANSFER], said = _copies(work, profile, costs)
        notes.append(said)
    total = combine(terms, summed=True) + waits
    device = terms[Bound.COMPUTE] + terms[Bound.MEMORY]
    dominant = (Bound.TRANSFER if terms[Bound.TRANSFER] >= total / 2 else Bound.LAUNCH
                if max(terms[Bound.LAUNCH], waits) >= device else
                max((Bound.COMPUTE, Bound.MEMORY), key=lambda b: terms[b]))
    fresh = past_fresh and dominant is Bound.TRANSFER
    return Estimate(terms, dominant, _class_why(dominant, work, terms, waits, busiest[1]),
                    FRESH if fresh else dominant.term, summed=True, waits=waits,
                    notes=tuple(notes))


def _flop_scale(op_class: str, work: Work, profile: Profile) -> float:
    """How much longer a FLOP of `work`'s takes than one of the probe's (float32, TF32
    off but for a convolution's, on by cuDNN's default there too): the peaks' ratio."""
    conv = op_class == "conv"

    def peak(dtype: str, tf32: bool) -> float | None:
        return peak_for(Case("", "", work.backend, "cuda:0", dtype, 0), profile.ceilings,
                        tf32=tf32).get("flops")

    probed, here = peak("float32", conv), peak(work.dtype, work.tf32 or conv)
    return probed / here if probed and here else 1.0


def _copies(work: Work, profile: Profile, costs: Mapping[str, ClassCost]
            ) -> tuple[float, str]:
    """An end-to-end call's copies at the rates measured for their sizes (or, where the
    profile has none, its copy path's), and what was assumed, in words."""
    if "to_device" not in costs or "to_host" not in costs:
        plain = estimate(replace(work, tallies=()), profile)
        return plain.terms[Bound.TRANSFER], ("copies priced at the copy path's rates: "
                                            f"{profile.name} has none measured by size")
    into, out = costs["to_device"], costs["to_host"]
    seconds = sum(map(into.at, work.copied_in)) + sum(map(out.at, work.copied_out))
    largest = max(work.copied_out, default=0.0)
    pages = ("freshly mapped pages" if largest > FRESH_BYTES else "new host memory")
    return seconds, (f"copies at the rates measured on {profile.name} for their sizes: "
                     f"{units.nbytes(sum(work.copied_in))} in with .to(device), "
                     f"{units.nbytes(sum(work.copied_out))} out with .cpu() into {pages} "
                     "on every call, as gpuvs.compare's end-to-end call makes them")


def _part(t: Tally, device: float, peaks: Mapping[str, float]) -> str:
    """One class's ops, `device` seconds of them, in words: '1 sort: 3.2 passes over
    48 MiB'."""
    what = f"{t.ops} × {OP_CLASSES[t.op_class].split(' ', 1)[1]}"
    if t.op_class in FLOP_CLASSES:
        rate = units.rate(t.flops / device, "FLOP/s") if device > 0 else "no time"
        return f"{what}: {t.flops:.3g} FLOP at {rate}"
    passes = device * peaks["bytes"] / t.bytes if t.bytes else 0.0
    return f"{what}: {passes:.2g} pass(es) over {units.nbytes(t.bytes)}"


def _class_why(dominant: Bound, work: Work, terms: Mapping[Bound, float], waits: float,
               busiest: str) -> str:
    ops = sum(t.ops for t in work.tallies)
    device = terms[Bound.COMPUTE] + terms[Bound.MEMORY]
    if dominant is Bound.TRANSFER:
        return (f"transfer-bound: {units.seconds(terms[Bound.TRANSFER])} of copies "
                f"(the work on the device: {units.seconds(device)})")
    if dominant is Bound.LAUNCH:
        host = work.host_s * HOST_SHARE
        parts = [f"{units.seconds(terms[Bound.LAUNCH] - host)} of launches for "
                 f"{ops} op(s), priced by class",
                 f"{units.seconds(host)} of the call's own host work (Python, module "
                 + (f"hooks: {HOST_SHARE:.0%} of the {units.seconds(work.host_s)} this CPU "
                    "measured)" if work.host_s else "hooks: none measured on this CPU)")]
        if waits:
            parts.insert(0, f"{units.seconds(waits)} of ops that wait for the device "
                            "(their work overlaps nothing)")
        return (f"launch-bound: {', '.join(parts[:-1])}, and {parts[-1]} outweigh "
                f"{units.seconds(device)} of the other device work")
    return (f"{dominant.value}: {units.seconds(device)} of device work for {ops} op(s), "
            f"priced by class; most of it {busiest}")


def scaled(measured_s: float, work: Work, source: Profile, target: Profile
           ) -> tuple[float, Estimate]:
    """GPU → GPU: a time measured on `source`'s GPU, scaled term by term to `target`'s
    (compute by the peaks' ratio, memory by the bandwidths', launches by the dispatch
    costs'), as the model splits the call on each: (seconds on target, target's estimate)."""
    there, here = estimate(work, target), estimate(work, source)
    return measured_s * there.seconds / here.seconds, there


def _copy(profile: Profile, backend: str, direction: str, fresh: bool = False) -> float:
    """A copy's rate on `backend`'s own path (into fresh pages, if `fresh` and measured),
    else (a profile measured before those were) torch's pageable `copy_`."""
    for name in (copy_name(direction, True),) * fresh + (copy_name(direction),):
        if rate := _measured(profile, name, backend):
            return rate
    return _gpu(profile, H2D if direction == "h2d" else D2H, "torch")


def _dispatch(profile: Profile, work: Work) -> tuple[float, str]:
    """What one of `work`'s launches costs the host, and the op family that cost is of:
    its own family's measured cost, else (a profile measured before families were) an
    elementwise op's ("")."""
    if work.op_family and (own := _measured(profile, dispatch_name(work.op_family),
                                            work.backend)):
        return own, work.op_family
    return _gpu(profile, DISPATCH, work.backend), ""


def _gpu(profile: Profile, name: str, backend: str) -> float:
    """A GPU ceiling the model cannot do without; UsageError, saying how to measure it."""
    if (value := _measured(profile, name, backend)) is None:
        raise UsageError(_missing(profile, f"{name} of {backend} on a GPU"))
    return value


def _measured(profile: Profile, name: str, backend: str) -> float | None:
    return next((c.value for c in profile.ceilings if c.name == name
                 and c.backend == backend and c.device != "cpu" and c.value > 0), None)


def _missing(profile: Profile, what: str) -> str:
    return (f"profile {profile.name!r} has no measured {what}; `gpuvs ceilings "
            f"--refresh --save-profile {profile.name}` on {profile.device} measures it")


def _why(dominant: Bound, work: Work, terms: Mapping[Bound, float],
         peaks: Mapping[str, float], launch: tuple[float, str],
         rates: tuple[float, float, float]) -> str:
    device = max(terms[Bound.COMPUTE], terms[Bound.MEMORY])
    dispatch, family = launch
    if dominant is Bound.LAUNCH:
        return (f"launch-bound: {work.launches:.0f} launch(es) × {units.seconds(dispatch)} "
                f"of host dispatch{FAMILY_WORDS.get(family, '')} outweigh "
                f"{units.seconds(device)} of device work")
    if dominant is Bound.MEMORY:
        return (f"memory-bound: {units.nbytes(work.bytes)} at "
                f"{units.rate(peaks['bytes'], 'B/s')}")
    if dominant is Bound.COMPUTE:
        unit = f"{work.dtype}{' as TF32' if work.tf32 else ''}"
        return (f"compute-bound: {work.flops:.3g} FLOP at "
                f"{units.rate(peaks['flops'], 'FLOP/s')} ({unit})")
    copies = len(work.copied_in) + len(work.copied_out)
    return (f"transfer-bound: {units.nbytes(sum(work.copied_in))} in at "
            f"{units.rate(rates[0], 'B/s')}, {units.nbytes(sum(work.copied_out))} out at "
            f"{units.rate(rates[1], 'B/s')}, {copies} copies × {units.seconds(rates[2])} "
            f"(the work on the device: {units.seconds(combine(terms) - terms[Bound.TRANSFER])})")
