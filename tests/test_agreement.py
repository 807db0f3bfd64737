"""Whether two devices' outputs agree: leaf by leaf, with the reference dtype's tolerance."""

from __future__ import annotations

import numpy as np
import pytest

from gpuvs.yours.agreement import agreement


def check(out: object, ref: object, tolerance: float | None = None):
    return agreement(out, ref, "cuda", "cpu", tolerance)


def test_float32_outputs_within_tolerance_agree_and_report_their_error() -> None:
    ref = np.linspace(1, 2, 100, dtype=np.float32)
    found = check(ref * (1 + 1e-5), ref)
    assert found.agrees and 0 < found.error < 2e-3


def test_float32_outputs_beyond_tolerance_name_the_error_and_the_dtype() -> None:
    ref = np.ones(10, dtype=np.float32)
    found = check(ref * 1.01, ref)
    assert found.reason == ("output on cuda differs from cpu: relative error 1.00e-02 exceeds "
                            "the float32 tolerance 2e-03")


def test_float64_is_held_to_a_tighter_tolerance_and_tolerance_overrides_it() -> None:
    ref = np.ones(10)
    assert not check(ref * (1 + 1e-6), ref).agrees
    assert check(ref * (1 + 1e-6), ref, tolerance=1e-5).agrees


def test_nested_outputs_name_the_leaf_that_differs() -> None:
    ref = (np.zeros(2), {"loss": np.float32(1.0), "logits": np.ones(3)})
    out = (np.zeros(2), {"loss": np.float32(1.0), "logits": np.ones(3) * 2})
    assert check(out, ref).reason.startswith("output[1]['logits'] on cuda differs from cpu")


@pytest.mark.parametrize(("out", "ref", "message"), [
    (np.ones(3), np.ones(4), "output on cuda has shape (3,); on cpu (4,)"),
    ([1, 2], [1, 2, 3], "output on cuda has 2 items; on cpu it has 3"),
    ({"a": 1}, {"b": 1}, "output on cuda has keys ['a']; on cpu ['b']"),
    (np.array([1, 2, 3]), np.array([1, 2, 4]), "differs from cpu in 1 of 3 elements (int64"),
    (np.array([np.nan, 1.0]), np.array([1.0, 1.0]), "NaN or infinity in other places"),
    (None, np.ones(2), "output on cuda is a NoneType, not an array as on cpu"),
    ("a", "b", "output on cuda is 'a', not 'b' as on cpu"),
])
def test_disagreements_say_where_and_how(out: object, ref: object, message: str) -> None:
    found = check(out, ref)
    assert not found.agrees and message in found.reason


def test_matching_infinities_nans_and_non_arrays_agree() -> None:
    ref = np.array([np.inf, np.nan, 1.0])
    assert check(ref.copy(), ref).agrees
    assert check(None, None).agrees and check("x", "x").agrees


def test_torch_outputs_keep_their_dtype_for_the_tolerance() -> None:
    torch = pytest.importorskip("torch")
    ref = torch.ones(100, dtype=torch.bfloat16)
    assert check(ref * 1.02, ref).agrees  # bfloat16 allows 4e-2
    assert check(ref.float() * 1.02, ref.float()).reason is not None
