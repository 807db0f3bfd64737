"""The worker's own duties around the protocol: thread limits, parts, as_written."""

from __future__ import annotations

import pytest

from gpuvs import backends
from gpuvs.execute.observe import observations, observe
from gpuvs.execute.wire import Observe, Sampling, Take
from gpuvs.execute.worker import run_case
from gpuvs.model import Case, Status

SAMPLING = Sampling(0.05, "fixed:n=5")


def _run(backend: str, case: Case):
    m, fatal = run_case(backends.get(backend), Take(case, SAMPLING))
    assert not fatal
    return m


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_a_threads_param_limits_the_cpu_threads_for_that_case_only(backend: str) -> None:
    pytest.importorskip(backend)
    b = backends.get(backend)
    before = b.threads()
    case = Case("matmul", "correct", backend, "cpu", "float32", 128,
                (("shape", "square"), ("threads", "1")))
    m = _run(backend, case)
    assert m.status is Status.OK, m.reason
    if before is not None:  # the backend reports its threads
        assert m.counters["threads"] == 1
    assert b.threads() == before


def test_parts_are_timed_alone_when_the_case_is_observed_not_while_it_is_timed() -> None:
    import tests.fakes  # noqa: F401

    case = Case("test_two_parts", "correct", "numpy", "cpu", "float32", 1)
    m = _run("numpy", case)
    assert m.status is Status.OK, m.reason
    assert "one_s" not in m.counters  # timing the case times the whole call only
    assert m.summary is not None and m.summary.median >= 3e-3
    assert observations(backends.get("numpy"), case, m.summary.median) == ("parts",)
    seen = observe(backends.get("numpy"), Observe(case, "parts", SAMPLING))
    one, two = seen["one_s"], seen["two_s"]
    assert 1e-3 <= one < two and two >= 2e-3  # busy-waits: never early, late when busy


def test_a_process_that_observed_refuses_to_time(monkeypatch) -> None:
    """The rule that keeps a profiler's cost out of later samples, checked at run time."""
    from gpuvs.measuring import watch

    monkeypatch.setattr(watch, "_OBSERVED", [])
    with watch.observing("the profile of a case"):
        pass
    m = _run("numpy", Case("matmul", "correct", "numpy", "cpu", "float32", 16))
    assert m.status is Status.CRASHED
    assert "already ran the profile of a case" in m.reason


def test_a_cuda_case_on_a_machine_without_a_gpu_says_so_before_importing_anything() -> None:
    from gpuvs.backends.base import NO_GPU, machine_has_gpu
    if machine_has_gpu():
        pytest.skip("this machine has a GPU")
    for name in ("torch", "cupy", "jax"):
        assert backends.get(name).unavailable_reason("cuda:0") == NO_GPU


def test_a_later_pass_builds_no_reference_and_the_first_pass_does(monkeypatch) -> None:
    """The first pass checked the output against the float64 reference; a later pass
    times the same call on the same seeded inputs, and building the reference again
    would cost it seconds on large cases (a 4096³ product: 0.3 s on 16 cores)."""
    from gpuvs.workloads import matmul
    built: list[int] = []
    seen = matmul.as_device_sees
    monkeypatch.setattr(matmul, "as_device_sees", lambda a, dtype: built.append(1) or seen(
        a, dtype))
    case = Case("matmul", "correct", "numpy", "cpu", "float32", 64, (("shape", "square"),))
    first, _ = run_case(backends.get("numpy"), Take(case, SAMPLING))
    assert first.status is Status.OK and len(built) == 2  # a @ b in float64: both sides
    later, _ = run_case(backends.get("numpy"),
                        Take(case, SAMPLING, samples_only=True))
    assert later.status is Status.OK and len(later.samples) == 5
    assert len(built) == 2  # none built again


def test_what_a_case_imports_is_left_out_of_later_collections() -> None:
    """The collection after every case walks only what cases made: a framework's objects
    (frozen when the worker starts) and what a case imported are not walked again."""
    import gc
    import sys

    import tests.fakes  # noqa: F401

    assert "tests.late_import" not in sys.modules
    try:
        m = _run("numpy", Case("test_late_import", "correct", "numpy", "cpu", "float32", 1))
        assert m.status is Status.OK, m.reason
        from tests.late_import import LONG_LIVED

        walked = {id(o) for o in gc.get_objects()}
        assert not walked & {id(LONG_LIVED), *map(id, LONG_LIVED)}
    finally:
        gc.unfreeze()
