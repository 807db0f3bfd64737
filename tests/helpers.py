"""Small helpers the tests share."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pytest

REPO = Path(__file__).resolve().parents[1]
_RUN = re.compile(r"\brun (\d{8}-\d{6}-[0-9a-f]{4})\b")


def run_id(output: str) -> str:
    """The id of the run a command started, from its output (a line before it, such as
    the busy-machine warning, does not matter)."""
    found = _RUN.search(output)
    assert found is not None, output
    return found.group(1)


def pythonpath() -> str:
    """This checkout's source and tests first, for processes the tests start."""
    return os.pathsep.join([str(REPO / "src"), str(REPO), os.environ.get("PYTHONPATH", "")])


def use_test_plugins(mp: pytest.MonkeyPatch) -> None:
    """Workers import tests.fakes, so failures planted there happen in a real child: for
    a function's `monkeypatch` (the `worker_env` fixture) or a wider fixture's own
    `pytest.MonkeyPatch.context()`."""
    mp.setenv("GPUVS_PLUGINS", "tests.fakes")
    mp.setenv("PYTHONPATH", pythonpath())
