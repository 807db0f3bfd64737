from __future__ import annotations

import numpy as np
import pytest

from gpuvs.errors import UsageError
from gpuvs.measuring import criteria


def _feed(c: criteria.StoppingCriterion, xs) -> criteria.StoppingCriterion:
    for x in xs:
        c.add(float(x))
    return c


def test_median_ci_is_done_on_a_constant_stream_after_min_samples() -> None:
    c = criteria.MedianCI()
    assert not _feed(c, [1e-3] * 9).done()
    assert _feed(c, [1e-3]).done()


def test_median_ci_waits_while_noisy_and_stops_once_the_interval_is_tight() -> None:
    rng = np.random.default_rng(0)
    c = _feed(criteria.MedianCI(), rng.normal(1.0, 0.2, 20))
    assert not c.done()
    _feed(c, rng.normal(1.0, 0.2, 5000))
    assert c.done()


def test_stdrel_and_fixed() -> None:
    assert _feed(criteria.StdRel(), [1.0] * 10).done()
    assert not _feed(criteria.StdRel(), [1.0, 2.0] * 10).done()
    assert _feed(criteria.FixedCount(n=3), [1, 1, 1]).done()


def test_invalid_samples_are_refused() -> None:
    with pytest.raises(ValueError, match="finite"):
        criteria.MedianCI().add(float("nan"))


def test_parse_builds_fresh_criteria_with_parameters() -> None:
    factory = criteria.parse("median-ci:rel=0.05")
    a, b = factory(), factory()
    assert a is not b and a.params["rel"] == 0.05


@pytest.mark.parametrize(("spec", "message"), [
    ("medianci", "unknown criterion 'medianci'; known: fixed, median-ci, stdrel"),
    ("median-ci:tol=1", "unknown parameter 'tol' for criterion 'median-ci'; accepted: "),
    ("fixed:n=x", "must be NAME=NUMBER"),
])
def test_bad_specs_name_the_value_and_what_is_accepted(spec: str, message: str) -> None:
    with pytest.raises(UsageError, match=message.replace("(", r"\(")):
        criteria.parse(spec)
