"""Seed 000's product and the square sweep: exact tensors, checked results, cost model."""

from __future__ import annotations

import numpy as np
import pytest

from gpuvs import backends, workloads
from gpuvs.errors import WrongResult
from gpuvs.measuring.criteria import FixedCount
from gpuvs.measuring.protocol import measure
from gpuvs.model import Case, Status
from gpuvs.workloads.matmul import seed000_inputs

SEED = (("shape", "seed000"),)


def test_seed000_inputs_are_the_posts_tensors() -> None:
    torch = pytest.importorskip("torch")
    torch.manual_seed(1004)
    x, y = torch.rand(1, 25600), torch.rand(25600, 100)
    a, b = seed000_inputs(25600)
    assert np.array_equal(a, x.numpy()) and np.array_equal(b, y.numpy())


def test_cost_model_of_the_seed000_product() -> None:
    w = workloads.get("matmul")
    assert w.flops(25600, SEED) == 2 * 25600 * 100
    assert w.bytes_moved(25600, SEED, "float32") == (25600 + 25600 * 100 + 100) * 4
    assert w.memory_needed(25600, SEED, "float64") == (25600 + 25600 * 100 + 100) * 8


@pytest.mark.parametrize("backend", ["numpy", "torch"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("data", ["resident", "end_to_end"])
def test_products_agree_with_the_float64_reference(backend: str, dtype: str, data: str) -> None:
    pytest.importorskip(backend)
    params = (("shape", "square"),) + ((("data", data),) if data != "resident" else ())
    case = Case("matmul", "correct", backend, "cpu", dtype, 96, params)
    m = measure(workloads.get("matmul").prepare(backends.get(backend), case), case,
                backends.get(backend).clock("cpu"), FixedCount(n=3))
    assert m.status is Status.OK


def test_a_wrong_product_is_caught() -> None:
    case = Case("matmul", "correct", "numpy", "cpu", "float32", 32, (("shape", "square"),))
    prepared = workloads.get("matmul").prepare(backends.get("numpy"), case)
    good = prepared.call()
    prepared.check(good)
    with pytest.raises(WrongResult, match="relative error .* exceeds the float32 tolerance"):
        prepared.check(good * 1.01)
    with pytest.raises(WrongResult, match="NaN"):
        prepared.check(good * np.nan)
