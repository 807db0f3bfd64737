"""The conventions are checked, not hoped for: mypy --strict on all of src/ (its settings
in pyproject.toml's [tool.mypy]), ruff everywhere."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "gpuvs"


def test_all_of_src_type_checks_strictly() -> None:
    pytest.importorskip("mypy")
    root = SRC.parents[1]
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--cache-dir",
         str(Path(tempfile.gettempdir()) / "gpuvs-mypy-cache"), "src/gpuvs"],
        cwd=root, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout


def test_the_code_passes_the_linter() -> None:
    pytest.importorskip("ruff")
    root = SRC.parents[1]
    result = subprocess.run([sys.executable, "-m", "ruff", "check", "src", "tests"], cwd=root,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout
