"""What the samples themselves reveal, and how a doubt shows beside the number."""

from __future__ import annotations

import numpy as np

from gpuvs.measuring import caveats
from gpuvs.model import Caveat

RNG = np.random.default_rng(5)


def _around(value: float, n: int, rel: float = 0.01) -> list[float]:
    return list(value * (1 + RNG.normal(0, rel, n)))


def test_seed_000s_torch_cpu_case_is_two_groups_not_one_spread() -> None:
    """Median 213 µs, fastest 72 µs: a faster group exists and the median is the other."""
    samples = _around(72e-6, 8) + _around(213e-6, 22)
    RNG.shuffle(samples)
    assert Caveat.MULTIMODAL in caveats.detect(samples, None, True)


def test_samples_that_slow_down_during_the_run_drift() -> None:
    samples = list(np.linspace(100e-6, 130e-6, 30))
    found = caveats.detect(samples, None, True)
    assert Caveat.DRIFTING in found and Caveat.MULTIMODAL not in found


def test_steady_samples_raise_neither() -> None:
    found = caveats.detect(_around(1e-3, 40), None, True)
    assert not {Caveat.MULTIMODAL, Caveat.DRIFTING} & set(found)


def test_doubts_are_named_beside_a_number_and_other_caveats_are_not() -> None:
    assert caveats.doubts((Caveat.FIRST_CALL_SLOW, Caveat.MULTIMODAL, Caveat.CONTENDED)) == (
        " (multimodal, contended)")
    assert caveats.doubts((Caveat.FIRST_CALL_SLOW,)) == ""
