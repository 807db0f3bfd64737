"""Shared fixtures: a temporary store, workers that load the test plug-ins, and one real
`gpuvs seeds --seed 0 --quick` that several tests read."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import tests.fakes  # noqa: F401  (registers SimBackend and the test_* workloads here too)
from tests.helpers import pythonpath, use_test_plugins


@pytest.fixture
def worker_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Workers import tests.fakes, so failures planted there happen in a real child."""
    use_test_plugins(monkeypatch)


@pytest.fixture
def db(tmp_path: Path) -> str:
    return str(tmp_path / "results.sqlite")


@dataclass(frozen=True)
class SeedsRun:
    output: str  # what it printed, piped to a file
    db: Path
    cwd: Path


@pytest.fixture(scope="session")
def seed000_run(tmp_path_factory: pytest.TempPathFactory) -> SeedsRun:
    """`gpuvs seeds --seed 0 --quick` as a user runs it: a process of its own, its output
    piped to a file under a narrow COLUMNS, in a project whose pyproject.toml sets
    `[tool.gpuvs] budget_s`. One run (about 30 s on a 2-core CPU) serves the tests of its
    table, its piped layout and its budget."""
    cwd = tmp_path_factory.mktemp("seed000")
    (cwd / "pyproject.toml").write_text("[tool.gpuvs]\nbudget_s = 0.03\n")
    db, out = cwd / "r.sqlite", cwd / "out.txt"
    env = os.environ | {"COLUMNS": "40", "PYTHONPATH": pythonpath()}
    with open(out, "w") as sink:
        proc = subprocess.run([sys.executable, "-m", "gpuvs", "seeds", "--seed", "0",
                               "--quick", "--db", str(db)], stdout=sink,
                              stderr=subprocess.PIPE, text=True, env=env, cwd=cwd, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return SeedsRun(out.read_text(), db, cwd)
