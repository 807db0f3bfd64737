"""The gates that keep the shape: lazy heavy imports, one-way imports, small units."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "gpuvs"
HEAVY = ("torch", "cupy", "jax", "matplotlib", "jinja2")

# Lower layers may import only these gpuvs modules (DESIGN.md, "Import direction").
ALLOWED = {
    "model": {"stats"},
    "units": set(),
    "stats": set(),
    "errors": set(),
    "criteria": {"stats", "errors"},
    "caveats": {"stats", "model"},
    "protocol": {"caveats", "criteria", "errors", "model", "replay", "stats"},
    "replay": set(),
}
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60
# name → why it may be longer
FUNCTION_ALLOWLIST = {
    "run": "the `gpuvs run` command: one Typer parameter per flag, each with its help text",
}


def test_importing_the_cli_leaves_heavy_frameworks_unloaded() -> None:
    code = (f"import sys, gpuvs.cli; heavy = {HEAVY!r}; "
            "print([m for m in sys.modules if m.split('.')[0] in heavy])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "[]"


def _gpuvs_imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("gpuvs"):
            found.add(node.module.split(".")[1] if "." in node.module else "")
            found.update(a.name for a in node.names if node.module == "gpuvs")
        elif isinstance(node, ast.Import):
            found.update(a.name.split(".")[1] for a in node.names
                         if a.name.startswith("gpuvs."))
    return found - {""}


@pytest.mark.parametrize("module", sorted(ALLOWED))
def test_lower_layers_import_nothing_above_them(module: str) -> None:
    assert _gpuvs_imports(SRC / f"{module}.py") <= ALLOWED[module]


def _code_lines(node: ast.AST, source: list[str]) -> int:
    """Lines of code in `node`, docstrings, comments and blank lines not counted."""
    doc_lines: set[int] = set()
    for n in ast.walk(node):
        body = getattr(n, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) \
                and isinstance(getattr(body[0], "value", None), ast.Constant) \
                and isinstance(body[0].value.value, str):
            doc_lines.update(range(body[0].lineno, body[0].end_lineno + 1))
    start, end = getattr(node, "lineno", 1), getattr(node, "end_lineno", len(source))
    return sum(1 for i in range(start, end + 1)
               if i not in doc_lines and source[i - 1].strip()
               and not source[i - 1].strip().startswith("#"))


def _modules() -> list[Path]:
    return sorted(SRC.rglob("*.py"))


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(SRC)))
def test_modules_and_functions_stay_small(path: Path) -> None:
    source = path.read_text().splitlines()
    tree = ast.parse("\n".join(source))
    assert _code_lines(tree, source) <= MAX_MODULE_LINES
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) \
                and node.name not in FUNCTION_ALLOWLIST:
            assert _code_lines(node, source) <= MAX_FUNCTION_LINES, node.name


def test_no_module_imports_a_framework_at_top_level() -> None:
    for path in _modules():
        tree = ast.parse(path.read_text())
        for node in tree.body:
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            for name in names:
                assert name.split(".")[0] not in HEAVY, f"{path.name} imports {name}"
