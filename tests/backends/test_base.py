"""What every backend shares: the reasons a GPU index is not there."""

from __future__ import annotations

from gpuvs.backends.base import device_count_reason


def test_a_missing_gpu_index_names_what_the_framework_sees() -> None:
    assert device_count_reason("cuda:0", 1, "torch") is None
    assert device_count_reason("cuda:0", 0, "CuPy") == "no CUDA device (CuPy sees none)"
    assert device_count_reason("cuda:3", 2, "JAX") == (
        "no device cuda:3; JAX sees 2 (cuda:0..cuda:1)")
