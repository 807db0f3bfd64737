"""Shared fixtures: a temporary store, and workers that load the test plug-ins."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import tests.fakes  # noqa: F401  (registers SimBackend and the test_* workloads here too)

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def worker_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Workers import tests.fakes, so failures planted there happen in a real child."""
    monkeypatch.setenv("GPUVS_PLUGINS", "tests.fakes")
    path = os.pathsep.join([str(REPO / "src"), str(REPO), os.environ.get("PYTHONPATH", "")])
    monkeypatch.setenv("PYTHONPATH", path)


@pytest.fixture
def db(tmp_path: Path) -> str:
    return str(tmp_path / "results.sqlite")
