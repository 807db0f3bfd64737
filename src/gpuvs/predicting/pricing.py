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
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from gpuvs import units
from gpuvs.analysis.ceilings import DISPATCH, FRESH_BYTES, copy_name, dispatch_name, peak_for
from gpuvs.analysis.roofline import Bound
from gpuvs.errors import UsageError
from gpuvs.model import Case
from gpuvs.predicting.profile import Profile
from gpuvs.predicting.work import Work

FRESH = "transfer-fresh"
LATENCY = "launch + sync latency"
H2D, D2H = "h2d pageable", "d2h pageable"
FAMILY_WORDS = {"create": " (an array creation's)", "product": " (a small product's)",
                "fused": " (a fused call's)"}


@dataclass(frozen=True)
class Estimate:
    """The model's time per call for one call on one profile, before calibration."""

    terms: Mapping[Bound, float]  # seconds per call each term alone would take
    dominant: Bound  # the roofline's regime: the same four names as a measured case's
    why: str  # the dominant term, in words, with its numbers
    regime: str = ""  # what calibrates it: the dominant term (`Bound.term`), or FRESH

    def __post_init__(self) -> None:
        object.__setattr__(self, "terms", MappingProxyType(dict(self.terms)))

    @property
    def seconds(self) -> float:
        return combine(self.terms)


def combine(terms: Mapping[Bound, float]) -> float:
    """Launches overlap the device's work, copies overlap nothing."""
    return max(terms[Bound.COMPUTE], terms[Bound.MEMORY], terms[Bound.LAUNCH]) \
        + terms[Bound.TRANSFER]


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
    return Estimate(terms, dominant, why, FRESH if fresh else dominant.term)


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
