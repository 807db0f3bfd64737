"""A run's JAX workers share their compiled programs, in a folder that outlives no run."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from gpuvs.backends import jax_


def test_a_worker_shares_its_parents_folder_and_removes_those_of_parents_gone(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    for name in ("JAX_COMPILATION_CACHE_DIR", "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS",
                 "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES"):
        monkeypatch.delenv(name, raising=False)
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    stale = tmp_path / f"{jax_.COMPILED_PREFIX}{gone.pid}"
    live = tmp_path / f"{jax_.COMPILED_PREFIX}{os.getpid()}"
    stale.mkdir()
    live.mkdir()
    jax_._share_compiled_programs()
    assert not stale.exists() and live.exists()
    assert os.environ["JAX_COMPILATION_CACHE_DIR"] == str(
        tmp_path / f"{jax_.COMPILED_PREFIX}{os.getppid()}")
    assert os.environ["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] == "0"


def test_a_cache_the_user_set_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JAX_COMPILATION_CACHE_DIR", "/somewhere/mine")
    jax_._share_compiled_programs()
    assert os.environ["JAX_COMPILATION_CACHE_DIR"] == "/somewhere/mine"
