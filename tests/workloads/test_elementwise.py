from __future__ import annotations

import numpy as np
import pytest

from gpuvs import backends, workloads
from gpuvs.criteria import FixedCount
from gpuvs.errors import WrongResult
from gpuvs.model import Case, Status
from gpuvs.protocol import measure


@pytest.mark.parametrize("backend", ["numpy", "torch"])
@pytest.mark.parametrize("op", ["ones", "scale", "chain"])
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_each_op_matches_its_reference(backend: str, op: str, dtype: str) -> None:
    pytest.importorskip(backend)
    case = Case("elementwise", "correct", backend, "cpu", dtype, 10_000, (("op", op),))
    b = backends.get(backend)
    m = measure(workloads.get("elementwise").prepare(b, case), case, b.clock("cpu"),
                FixedCount(n=3))
    assert m.status is Status.OK, m.reason


def test_the_chain_really_is_50_x_squared() -> None:
    case = Case("elementwise", "correct", "numpy", "cpu", "float64", 1000, (("op", "chain"),))
    prepared = workloads.get("elementwise").prepare(backends.get("numpy"), case)
    out = prepared.call()
    prepared.check(out)
    with pytest.raises(WrongResult):
        prepared.check(np.asarray(out) + 1)


def test_cost_model() -> None:
    w = workloads.get("elementwise")
    assert w.bytes_moved(10**6, (("op", "chain"),), "float32") == 3 * 2 * 4e6
    assert w.flops(10**6, (("op", "scale"),)) == 1e6
    assert w.memory_needed(10**9, (("op", "scale"),), "float32") == 4 * 10**9
    assert w.data_modes((("op", "ones"),)) == ("resident",)
