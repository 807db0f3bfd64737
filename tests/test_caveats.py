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


def test_a_wide_spread_of_many_samples_is_no_doubt_about_their_median() -> None:
    """A launch-bound call's samples spread by a tenth and more; a thousand of them still
    pin the median, and the flag says so only where the interval is wide."""
    wide_but_many = _around(14e-6, 1000, rel=0.12)
    assert Caveat.UNSTABLE not in caveats.detect(wide_but_many, None, True)
    few_and_wide = _around(14e-6, 12, rel=0.3)
    assert Caveat.UNSTABLE in caveats.detect(few_and_wide, None, True)


def test_one_fast_sample_is_an_outlier_not_a_second_group() -> None:
    samples = _around(100e-6, 60, rel=0.005)
    samples[17] = 40e-6
    assert Caveat.MULTIMODAL not in caveats.detect(samples, None, True)


def test_passes_that_disagree_beyond_their_own_intervals_depend_on_the_process() -> None:
    one, two = _around(10e-6, 50, rel=0.01), _around(13e-6, 50, rel=0.01)
    assert caveats.process_dependent(one + two, (50, 50))
    assert not caveats.process_dependent(one + _around(10e-6, 50, rel=0.01), (50, 50))
    assert not caveats.process_dependent(one, (50,))  # one pass: nothing to compare


def test_a_gpu_interval_is_never_narrower_than_the_spread_between_repeats() -> None:
    """Ten repeats of a big kernel on an H100 moved their medians by up to 0.7 %, more
    than the ±0.02 % one repeat's samples give: the measured spread is the floor."""
    from gpuvs.model import REPEAT_SPREAD, Case, Measurement, Status
    steady = tuple(_around(2.66e-3, 200, rel=0.0002))
    case = Case("matmul", "correct", "torch", "cuda:0", "float32", 4096)
    gpu = Measurement(case, Status.OK, samples=steady, timer="cuda_events").summary
    host = Measurement(case, Status.OK, samples=steady, timer="host").summary
    assert gpu is not None and host is not None
    assert gpu.ci_halfwidth_rel >= REPEAT_SPREAD["cuda_events"] * 0.999
    assert host.ci_halfwidth_rel < 0.001  # no floor claimed where none was measured
