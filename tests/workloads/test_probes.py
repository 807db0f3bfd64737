"""The probes `gpuvs predict` prices work by: the `dispatch` probe's op families (each
runs and checks its own result; the fused one only where a workload fuses, on a GPU)
and each backend's own copy path."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gpuvs import backends, workloads
from gpuvs.measuring.criteria import FixedCount
from gpuvs.measuring.protocol import measure
from gpuvs.model import OP_FAMILIES, Case, Status


def _probe(backend: str, device: str, family: str) -> Case:
    return Case("dispatch", "correct", backend, device, "float32", 1,
                (("mode", "loop"), ("op", family)))


@pytest.mark.parametrize("backend", ["numpy", "torch"])
@pytest.mark.parametrize("family", ["create", "product"])
def test_a_family_probe_times_one_small_op_of_its_family_and_checks_it(
        backend: str, family: str) -> None:
    pytest.importorskip(backend)
    case, b = _probe(backend, "cpu", family), backends.get(backend)
    m = measure(workloads.get("dispatch").prepare(b, case), case, b.clock("cpu"),
                FixedCount(n=3))
    assert m.status is Status.OK, m.reason
    assert m.summary is not None and m.summary.median < 1e-3  # one tiny op, not work


def test_the_fused_family_is_the_elementwise_workloads_own_fused_chain_on_a_gpu() -> None:
    probe = workloads.get("dispatch")
    assert probe.applies(_probe("torch", "cuda:0", "fused"))
    assert not probe.applies(_probe("torch", "cpu", "fused"))  # nothing fuses on a CPU
    assert not probe.applies(_probe("numpy", "cpu", "fused"))
    assert {dict(p).get("op") for p in probe.param_sets()} == {None, *OP_FAMILIES}


def test_workloads_name_the_family_of_the_ops_they_launch() -> None:
    ew, mm = workloads.get("elementwise"), workloads.get("matmul")
    case = Case("elementwise", "correct", "torch", "cuda:0", "float32", 1000, (("op", "ones"),))
    assert ew.op_family(case) == "create"
    assert ew.op_family(replace(case, params=(("op", "scale"),))) == ""
    assert ew.op_family(Case("elementwise", "tuned", "torch", "cuda:0", "float64", 1000,
                             (("op", "chain"),))) == "fused"
    assert mm.op_family(Case("matmul", "correct", "cupy", "cuda:0", "float32", 64,
                             (("shape", "square"),))) == "product"
    assert workloads.get("gru").op_family(
        Case("gru", "correct", "torch", "cuda:0", "float32", 20, (("how", "batched"),))) == ""


@pytest.mark.parametrize("backend", ["numpy", "torch"])
@pytest.mark.parametrize("direction", ["h2d", "d2h"])
def test_a_backends_copy_path_is_timed_through_from_numpy_and_to_numpy(
        backend: str, direction: str) -> None:
    pytest.importorskip(backend)
    case = Case("transfer", "correct", backend, "cpu", "float32", 1 << 16,
                (("direction", direction), ("path", "backend")))
    b, probe = backends.get(backend), workloads.get("transfer")
    assert not probe.applies(case)  # a CPU has no link to price: only GPUs are probed
    m = measure(probe.prepare(b, case), case, b.clock("cpu"), FixedCount(n=3))
    assert m.status is Status.OK, m.reason
    assert probe.applies(replace(case, backend="jax", device="cuda:0"))
