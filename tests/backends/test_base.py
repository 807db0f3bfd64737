"""What every backend shares: the reasons a GPU index is not there, and NumPy's BLAS kept
out of the way of the others' timed work."""

from __future__ import annotations

import os

import pytest

from gpuvs.backends.base import device_count_reason


def test_a_missing_gpu_index_names_what_the_framework_sees() -> None:
    assert device_count_reason("cuda:0", 1, "torch") is None
    assert device_count_reason("cuda:0", 0, "CuPy") == "no CUDA device (CuPy sees none)"
    assert device_count_reason("cuda:3", 2, "JAX") == (
        "no device cuda:3; JAX sees 2 (cuda:0..cuda:1)")


def test_another_frameworks_work_is_timed_with_numpys_blas_on_one_thread() -> None:
    """NumPy's BLAS has just built the inputs and the reference on every core; left so,
    its threads fight torch's pool (seed 000's torch-CPU product: 16 ms a call against
    76 µs on the H100 host). NumPy's own cases keep every thread; torch's pool is left."""
    from threadpoolctl import threadpool_info

    from gpuvs import backends
    def threads() -> dict[str, int]:
        return {("numpy" if "numpy" in i["filepath"] else i["internal_api"]): i["num_threads"]
                for i in threadpool_info()}

    pytest.importorskip("torch")
    before = threads()
    assert before["numpy"] > 1 or (os.cpu_count() or 1) == 1
    with backends.get("torch").quiet_numpy_blas():
        inside = threads()
    assert inside["numpy"] == 1
    assert {k: v for k, v in inside.items() if k != "numpy"} == \
        {k: v for k, v in before.items() if k != "numpy"}
    with backends.get("numpy").quiet_numpy_blas():
        assert threads() == before
    assert threads() == before
