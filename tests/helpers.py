"""Small helpers the tests share."""

from __future__ import annotations

import importlib.util
import os
import re
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pytest
    from typer.testing import Result

REPO = Path(__file__).resolve().parents[1]
_RUN = re.compile(r"\brun (\d{8}-\d{6}-[0-9a-f]{4})\b")


def run_id(output: str) -> str:
    """The id of the run a command started, from its output (a line before it, such as
    the busy-machine warning, does not matter)."""
    found = _RUN.search(output)
    assert found is not None, output
    return found.group(1)


def benchmark(name: str) -> Any:
    """`benchmarks/NAME.py`, imported as a module of its own (the folder is no package:
    `benchmarks/corpus.py` stands beside `benchmarks/corpus/`)."""
    spec = importlib.util.spec_from_file_location(f"bench_{name}",
                                                  REPO / "benchmarks" / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def pythonpath() -> str:
    """This checkout's source and tests first, for processes the tests start."""
    return os.pathsep.join([str(REPO / "src"), str(REPO), os.environ.get("PYTHONPATH", "")])


def use_test_plugins(mp: pytest.MonkeyPatch) -> None:
    """Workers import tests.fakes, so failures planted there happen in a real child: for
    a function's `monkeypatch` (the `worker_env` fixture) or a wider fixture's own
    `pytest.MonkeyPatch.context()`."""
    mp.setenv("GPUVS_PLUGINS", "tests.fakes")
    mp.setenv("PYTHONPATH", pythonpath())


def invoke(*args: str, cwd: Path | None = None) -> Result:
    """`gpuvs ARGS` in this process (typer's CliRunner), 200 columns wide so that no
    table wraps under an assertion; with `cwd`, from that folder (its pyproject.toml).
    The command line is imported here, not above: conftest.py imports this module, and
    a test that watches what gpuvs imports must not find the CLI loaded before it ran."""
    from typer.testing import CliRunner

    from gpuvs.cli import app

    if cwd is None:
        return CliRunner().invoke(app, list(args), env={"COLUMNS": "200"})
    old = Path.cwd()
    os.chdir(cwd)
    try:
        return CliRunner().invoke(app, list(args), env={"COLUMNS": "200"})
    finally:
        os.chdir(old)


def stored_count(db: str) -> int:
    """How many cases of its plans a SQLite store holds (their runs' calibration probes,
    measured first, apart): 0 before the run has created it, so that a test can poll a
    run it started in another process."""
    try:
        with sqlite3.connect(db) as c:
            return int(c.execute("select count(*) from measurements "
                                 "where workload != 'calibration'").fetchone()[0])
    except sqlite3.OperationalError:
        return 0


def interruptible(cmd: list[str], stderr: int = subprocess.STDOUT) -> subprocess.Popen[str]:
    """`cmd` started as a command typed in a terminal is: with SIGINT's default
    disposition. A shell's background job starts with SIGINT ignored, and so do its
    children, whatever ran the suite; a run that starts so rightly ignores Ctrl-C, and a
    test that sends it one would wait forever."""
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=stderr, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def measured_and_observed(cases: Any, criterion: str = "fixed:n=3", budget_s: float = 0.02,
                          timeout_s: float = 300.0) -> dict[str, Any]:
    """`cases` measured as a run measures them, by key: timed in a worker process, then
    observed (parts timed alone, kernels profiled, a graph replayed) by a worker that
    times nothing more. A worker's `run_case` alone times only: the counters a case's
    record carries from its observation (`kernels`, a part's seconds) come from here."""
    from gpuvs.config import RunConfig
    from gpuvs.execute.runner import Kept, execute
    kept = Kept()
    execute(kept, list(cases), RunConfig(budget_s=budget_s, timeout_s=timeout_s, passes=1,
                                         criterion=criterion).validate())
    return {m.case.key: m for m in kept.measurements}
