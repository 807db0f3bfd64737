"""The README's examples run as written: every `$ gpuvs …` line of its console blocks and
its Python example. Commands that measure (`run`, `sweep`, `seeds`) run with `--dry-run`,
which checks every option and plans the cases; commands that read stored runs run for
real against a store holding two small runs; those that need GPUs or minutes (`dist`,
`ceilings`) or a GPU's device profile (`predict`) are parsed (`--help` of that command)."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text()
MEASURING = {"run", "sweep", "seeds"}
PARSED_ONLY = {"dist", "ceilings", "predict"}


def console_commands() -> list[str]:
    lines = []
    for block in re.findall(r"```console\n(.*?)```", README, re.S):
        for line in block.splitlines():
            if line.startswith("$ gpuvs "):
                lines.append(line[2:].split("  #")[0].strip())
    return lines


COMMANDS = console_commands()


def test_the_readme_has_examples_of_every_command() -> None:
    used = {shlex.split(c)[1] for c in COMMANDS}
    assert {"run", "sweep", "seeds", "show", "export", "report", "runs", "compare",
            "check", "dist", "env", "list", "--version"} <= used


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory with a store of two small runs (as `latest` and its baseline)."""
    where = tmp_path_factory.mktemp("readme")
    for _ in range(2):
        done = subprocess.run([sys.executable, "-m", "gpuvs", "run", "-w", "matmul", "-s",
                               "64", "-b", "numpy", "-d", "cpu", "--budget", "0.05",
                               "--db", str(where / "r.sqlite")],
                              capture_output=True, text=True, cwd=where, timeout=300)
        assert done.returncode == 0, done.stderr
    return where


@pytest.mark.parametrize("command", COMMANDS)
def test_a_readme_command_runs_as_written(command: str, workdir: Path) -> None:
    args = shlex.split(command)[1:]
    if "A" in args and "B" in args:
        pytest.skip("a placeholder (A B [C …]), not a command")
    args = [a.replace("docs/runs/", f"{REPO}/docs/runs/") for a in args]
    if args[0] in PARSED_ONLY:
        args = [*args, "--help"]
    elif args[0] in MEASURING and "--resume" not in args:
        args = [*args, "--dry-run"]
    if any(a.startswith("~/") for a in args):
        pytest.skip("names a file on the reader's machine")
    reads_store = not (args[-1] == "--help" or args[0] in {"env", "list", "profiles"}
                       or args[0].startswith("-"))  # `gpuvs --version`: no command
    done = subprocess.run([sys.executable, "-m", "gpuvs", *args, "--db",
                           str(workdir / "r.sqlite")] if reads_store
                          else [sys.executable, "-m", "gpuvs", *args],
                          capture_output=True, text=True, cwd=workdir, timeout=300,
                          env=_env())
    if "--resume" in args:  # nothing was interrupted in this store: said in one line
        assert done.returncode == 2, done.stderr
        assert "--resume latest: no interrupted run" in done.stderr
        return
    assert "Traceback" not in done.stderr
    if args[0] == "check" and done.returncode == 1:  # the gate met a slowdown: a real one
        assert "FAILED:" in done.stdout, done.stdout[-800:]  # two runs on a noisy box
        return
    assert done.returncode == 0, (command, done.stdout[-800:], done.stderr[-800:])


def test_the_python_example_runs(tmp_path: Path) -> None:
    block = re.search(r"### From Python\n\n```python\n(.*?)```", README, re.S)
    assert block is not None
    done = subprocess.run([sys.executable, "-c", block.group(1)], capture_output=True,
                          text=True, cwd=tmp_path, timeout=300, env=_env())
    assert done.returncode == 0, done.stderr
    numbers = done.stdout.split()
    assert len(numbers) >= 4 and float(numbers[0]) > 0


def _env() -> dict[str, str]:
    import os

    return os.environ | {"PYTHONPATH": str(REPO / "src"), "COLUMNS": "200"}
