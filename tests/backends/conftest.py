"""Backend tests look past the machine-level check (no NVIDIA device node → "no CUDA
device", before any framework is asked) to what each framework itself says."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _as_if_the_machine_had_a_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("gpuvs.backends.base.machine_has_gpu", lambda: True)
