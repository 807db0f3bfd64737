"""Every command takes its settings through one path (`config.build`): a 0 given for a budget
or a pass count is a value given, and refused in one line — never read as "not given" and
replaced by a default, as `gpuvs predict --budget 0 --passes 0` once ran with 0.1 s and
one pass."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.helpers import invoke

from gpuvs.config import MAX_PASSES, MAX_SECONDS, build

SCRIPT = "import torch\n\ndef f(x):\n    return x * 2\n\ndef inputs():\n    return torch.ones(4)\n"

# Each command that has --budget or --passes, with what it needs to get as far as reading
# them (a dry run where it has one: nothing is measured before the refusal).
COMMANDS = {
    "run": ["run", "--dry-run", "-w", "matmul"],
    "sweep": ["sweep", "matmul", "--dry-run"],
    "seeds": ["seeds", "--dry-run"],
    "ceilings": ["ceilings"],
    "predict": ["predict", "-w", "matmul", "--target", "h100"],
    "run-file": ["run-file", "SCRIPT::f"],
}
PASSES = ("run", "sweep", "predict")


def _args(command: str, tmp_path: Path) -> list[str]:
    script = tmp_path / "mine.py"
    script.write_text(SCRIPT)
    return [a.replace("SCRIPT", str(script)) for a in COMMANDS[command]] + [
        "--db", str(tmp_path / "r.sqlite")]


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_budget_of_zero_is_refused_in_one_line(command: str, tmp_path: Path) -> None:
    result = invoke(*_args(command, tmp_path), "--budget", "0")
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert lines == ["error: --budget must be a positive number of seconds up to "
                     f"{MAX_SECONDS:,} (a week); got 0.0"]
    assert not (tmp_path / "r.sqlite").exists()  # refused before a store is made


@pytest.mark.parametrize("command", PASSES)
def test_zero_passes_are_refused_in_one_line(command: str, tmp_path: Path) -> None:
    result = invoke(*_args(command, tmp_path), "--passes", "0")
    assert result.exit_code == 2, result.output
    assert result.output.strip().splitlines() == [
        f"error: --passes must be a whole number from 1 to {MAX_PASSES}; got 0"]


def test_a_commands_own_default_gives_way_to_the_project_and_to_what_is_given(
        tmp_path: Path) -> None:
    project = tmp_path / "pyproject.toml"
    project.write_text("[tool.gpuvs]\nbudget_s = 0.3\n")
    assert build({}, project, defaults={"budget_s": 0.1}).budget_s == 0.3
    assert build({"budget_s": 2.0}, project, defaults={"budget_s": 0.1}).budget_s == 2.0
    assert build({}, tmp_path / "none.toml", defaults={"budget_s": 0.1}).budget_s == 0.1


def test_the_python_api_names_its_keyword_in_the_refusal() -> None:
    import gpuvs
    from gpuvs.errors import UsageError

    with pytest.raises(UsageError, match="budget_s must be a positive number of seconds"):
        gpuvs.measure(lambda: None, budget_s=0)
