from __future__ import annotations

import numpy as np
import pytest

from gpuvs import backends, workloads
from gpuvs.errors import WrongResult
from gpuvs.execute.wire import Sampling, Take
from gpuvs.measuring.criteria import FixedCount
from gpuvs.measuring.protocol import measure
from gpuvs.model import Case, Status


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


def test_as_written_replays_one_unsynchronised_call_and_checks_it() -> None:
    from gpuvs.execute.worker import run_case
    case = Case("elementwise", "as_written", "numpy", "cpu", "float64", 10**5,
                (("op", "scale"),))
    m, _ = run_case(backends.get("numpy"), Take(case, Sampling(0.05, "fixed")))
    assert m.status is Status.OK, m.reason
    assert len(m.samples) == 1 and m.timer.startswith("time.time() once")


@pytest.mark.parametrize(("variant", "backend", "device", "op", "data", "exists"), [
    ("tuned", "cupy", "cuda:0", "chain", "resident", True),
    ("tuned", "torch", "cuda:0", "chain", "resident", True),
    ("tuned", "torch", "cpu", "chain", "resident", False),      # fused on GPUs only
    ("tuned", "numpy", "cpu", "chain", "resident", False),
    ("tuned", "cupy", "cuda:0", "scale", "resident", False),    # one op: nothing to fuse
    ("as_written", "cupy", "cuda:0", "scale", "end_to_end", False),  # the post had no copies
    ("as_written", "numpy", "cpu", "ones", "resident", True),
])
def test_which_variants_exist(variant, backend, device, op, data, exists) -> None:
    params = (("data", data), ("op", op)) if data != "resident" else (("op", op),)
    case = Case("elementwise", variant, backend, device, "float64", 1000, params)
    assert workloads.get("elementwise").applies(case) is exists


def test_the_fused_chain_moves_one_pass_of_memory() -> None:
    w = workloads.get("elementwise")
    tuned = Case("elementwise", "tuned", "cupy", "cuda:0", "float64", 10**6, (("op", "chain"),))
    plain = Case("elementwise", "correct", "cupy", "cuda:0", "float64", 10**6,
                 (("op", "chain"),))
    assert w.counters(tuned)["bytes_moved"] * 3 == w.counters(plain)["bytes_moved"]
    assert w.counters(tuned)["launches"] == 1


def test_an_end_to_end_case_counts_the_bytes_it_copies_in_and_out() -> None:
    w = workloads.get("elementwise")
    case = Case("elementwise", "correct", "torch", "cuda:0", "float32", 10**4,
                (("data", "end_to_end"), ("op", "scale")))
    assert w.counters(case)["copied_bytes"] == 2 * 4 * 10**4  # x in, x * 5 out
    resident = Case("elementwise", "correct", "torch", "cuda:0", "float32", 10**4,
                    (("op", "scale"),))
    assert "copied_bytes" not in w.counters(resident)


@pytest.mark.gpu
@pytest.mark.parametrize("backend", ["cupy", "torch", "jax"])
def test_the_fused_chain_is_right_on_the_gpu(backend: str) -> None:
    pytest.importorskip(backend)
    case = Case("elementwise", "tuned", backend, "cuda:0", "float64", 10**6, (("op", "chain"),))
    b = backends.get(backend)
    if b.unavailable_reason("cuda:0"):
        pytest.skip(b.unavailable_reason("cuda:0"))
    m = measure(workloads.get("elementwise").prepare(b, case), case, b.clock("cuda:0"),
                FixedCount(n=3))
    assert m.status is Status.OK, m.reason


@pytest.mark.parametrize("op,value", [("scale", 5.0), ("chain", 50.0)])
def test_the_posts_ones_input_is_built_in_place_and_checked(op: str, value: float) -> None:
    case = Case("elementwise", "correct", "numpy", "cpu", "float64", 1000,
                (("input", "ones"), ("op", op)))
    prepared = workloads.get("elementwise").prepare(backends.get("numpy"), case)
    out = prepared.call()
    assert np.all(np.asarray(out) == value)
    prepared.check(out)
    with pytest.raises(WrongResult):  # an op that wrote nothing leaves the ones
        prepared.check(np.ones(1000))


def test_the_ones_input_applies_to_resident_ops_only() -> None:
    w = workloads.get("elementwise")
    ones_in = (("input", "ones"),)
    assert w.applies(Case("elementwise", "correct", "numpy", "cpu", "float64", 10,
                          (*ones_in, ("op", "scale"))))
    assert not w.applies(Case("elementwise", "correct", "numpy", "cpu", "float64", 10,
                              (*ones_in, ("op", "ones"))))
    assert not w.applies(Case("elementwise", "correct", "cupy", "cuda:0", "float64", 10,
                              (("data", "end_to_end"), *ones_in, ("op", "scale"))))
