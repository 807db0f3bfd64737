"""The `gpuvs dist` command in-process (typer's CliRunner); its ranks are real torchrun
subprocesses with Gloo on the CPU."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from typer.testing import CliRunner

from gpuvs.cli import app

Invoke = Callable[..., Any]


@pytest.fixture
def dist(db: str) -> Invoke:
    """`dist("collectives", "--nproc", "2")` → the CliRunner result, on a temporary store."""
    pytest.importorskip("torch")

    def invoke(*args: str) -> Any:
        return CliRunner().invoke(app, ["dist", *args, "--db", db], env={"COLUMNS": "200"})

    return invoke

