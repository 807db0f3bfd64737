"""The conventions are checked, not hoped for: mypy --strict on the core, ruff everywhere."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "gpuvs"
STRICT = ("model.py", "measuring", "stats.py", "execute/plan.py", "execute/estimate.py",
          "analysis", "execute/policy.py", "execute/supervisor.py", "machine/watches.py",
          "table.py", "_version.py", "store/runs.py", "report/layout.py")


def test_core_modules_type_check_strictly(tmp_path: Path) -> None:
    pytest.importorskip("mypy")
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--ignore-missing-imports",
         "--cache-dir", str(tmp_path), *(str(SRC / p) for p in STRICT)],
        capture_output=True, text=True)
    assert result.returncode == 0, result.stdout


def test_the_code_passes_the_linter() -> None:
    pytest.importorskip("ruff")
    root = SRC.parents[1]
    result = subprocess.run([sys.executable, "-m", "ruff", "check", "src", "tests"], cwd=root,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout
