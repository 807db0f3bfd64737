"""Every command-line option names its flags in the code. An option left to take its name
from the parameter was called `--DTYPE` (from its metavar) by typer 0.27 with click 8.5,
which gpuvs's `typer>=0.26` allows: `gpuvs run --dtype bfloat16` then failed with "No such
option: --dtype" on the H100 machine while it passed here."""

from __future__ import annotations

import ast
from pathlib import Path

CLI = Path(__file__).resolve().parents[1] / "src" / "gpuvs" / "cli"


def _options() -> list[tuple[str, int, ast.Call]]:
    found = []
    for path in sorted(CLI.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "Option"):
                found.append((path.name, node.lineno, node))
    return found


def test_the_cli_has_options_to_check() -> None:
    assert len(_options()) > 20


def test_every_option_names_its_flags_instead_of_leaving_typer_to_derive_them() -> None:
    unnamed = [f"{name}:{line}" for name, line, call in _options()
               if not any(isinstance(a, ast.Constant) and isinstance(a.value, str)
                          and a.value.startswith("-") for a in call.args)]
    assert unnamed == []
