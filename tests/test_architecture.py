"""The gates that keep the shape (docs/architecture.md is the map they enforce): heavy
frameworks imported lazily, every unit's allowed imports listed and checked — imports
inside functions and type-only ones counted too — no import cycle, small units."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "gpuvs"
HEAVY = ("torch", "cupy", "jax", "matplotlib", "jinja2")
ROOT = "gpuvs"  # the package's own __init__

# A unit is a top-level module or subpackage of gpuvs. Each may import the units listed
# for it and nothing else. Bottom up, as docs/architecture.md draws the layers.
ALLOWED: dict[str, set[str]] = {
    # the nouns and pure arithmetic
    "_version": set(),
    "errors": set(),
    "units": set(),
    "stats": set(),
    "replay": set(),
    "table": set(),
    "model": {"stats"},
    "registry": {"errors"},
    "criteria": {"errors", "stats"},
    "caveats": {"model", "stats"},
    # measuring one case
    "protocol": {"caveats", "criteria", "errors", "model", "replay", "stats"},
    "backends": {"errors", "model", "protocol", "registry", "units"},
    "workloads": {"backends", "errors", "model", "protocol", "registry", "replay", "units"},
    "policy": {"model"},
    "telemetry": set(),
    "contention": set(),
    "env": {"backends", "model", "units"},
    "config": {"backends", "criteria", "errors", "workloads"},
    # many cases, each in a worker process
    "plan": {"backends", "config", "errors", "model", "workloads"},
    "worker": {"backends", "contention", "criteria", "errors", "model", "policy", "protocol",
               "telemetry", "units", "workloads"},
    "child": {"model", "policy"},
    "runner": {"backends", "caveats", "child", "config", "model", "protocol"},
    # results kept, and what they mean
    "store": {"_version", "env", "errors", "model"},
    "analysis": {"backends", "criteria", "env", "model", "protocol", "stats", "units",
                 "workloads"},
    # the five posts; several processes at once
    "seeds": {"analysis", "caveats", "model", "registry", "table", "units", "workloads"},
    "distributed": {"caveats", "criteria", "errors", "model", "store", "units", "workloads"},
    # everything drawn for a person
    "report": {"analysis", "caveats", "distributed", "env", "model", "seeds", "table",
               "units", "workloads"},
    # the user's own code, in the user's process (or, for run-file, in a worker)
    "yours": {"_version", "analysis", "backends", "child", "config", "criteria", "env",
              "errors", "model", "policy", "protocol", "replay", "report", "stats", "store",
              "units", "workloads"},
    # the public faces
    "api": {"backends", "config", "criteria", "errors", "model", "protocol", "telemetry",
            "yours"},
    "cli": {"analysis", "backends", "config", "contention", "criteria", "distributed", "env",
            "errors",
            "model", "plan", "report", "runner", "seeds", "store", "units", "workloads",
            "yours"},
    "__main__": {"cli"},
    ROOT: {"_version", "api", "model", "yours"},
}
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60
# qualified name → why it may be longer
FUNCTION_ALLOWLIST = {
    "gpuvs.cli.run.run": "the `gpuvs run` command: one Typer parameter per flag, each with "
                         "its help text",
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in sorted(SRC.rglob("*.py"))}


def _unit(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ROOT


def _imports(path: Path) -> set[str]:
    """Every gpuvs module `path` imports, wherever the import statement stands."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == ROOT:
            for alias in node.names:
                whole = f"{node.module}.{alias.name}"
                found.add(whole if whole in MODULES else node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == ROOT)
    return found - {_module_name(path)}


IMPORTS = {name: _imports(path) for name, path in MODULES.items()}


def test_every_unit_has_its_place_in_the_table() -> None:
    assert {_unit(m) for m in MODULES} == set(ALLOWED)


@pytest.mark.parametrize("unit", sorted(ALLOWED))
def test_each_unit_imports_only_what_its_layer_allows(unit: str) -> None:
    used = {_unit(target): module for module, targets in IMPORTS.items()
            if _unit(module) == unit for target in targets}
    extra = {u: m for u, m in used.items() if u != unit and u not in ALLOWED[unit]}
    assert not extra, f"{unit} may not import {sorted(extra)} (imported by {extra})"


def _reach(graph: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = list(graph.get(start, ()))
    while todo:
        v = todo.pop()
        if v not in seen:
            seen.add(v)
            todo.extend(graph.get(v, ()))
    return seen


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Groups of nodes that reach one another: each group is an import loop."""
    reach = {v: _reach(graph, v) for v in graph}
    loops = {tuple(sorted(w for w in reach[v] if v in reach[w])) for v in graph if v in reach[v]}
    return sorted(list(loop) for loop in loops)


def test_the_allowed_imports_run_one_way() -> None:
    assert _cycles({u: allowed - {u} for u, allowed in ALLOWED.items()}) == []


def test_no_module_imports_another_that_imports_it_back() -> None:
    assert _cycles({m: t & set(MODULES) for m, t in IMPORTS.items()}) == []


def test_the_cycle_finder_finds_a_lazy_loop() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_importing_the_cli_leaves_heavy_frameworks_unloaded() -> None:
    code = (f"import sys, gpuvs.cli; heavy = {HEAVY!r}; "
            "print([m for m in sys.modules if m.split('.')[0] in heavy])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "[]"


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


def _functions(node: ast.AST, prefix: str) -> Iterator[tuple[str, ast.AST]]:
    """(qualified name, node) of every function, methods and nested functions included."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            name = f"{prefix}.{child.name}"
            if not isinstance(child, ast.ClassDef):
                yield name, child
            yield from _functions(child, name)
        else:
            yield from _functions(child, prefix)


@pytest.mark.parametrize("module", sorted(MODULES))
def test_modules_and_functions_stay_small(module: str) -> None:
    source = MODULES[module].read_text().splitlines()
    tree = ast.parse("\n".join(source))
    assert _code_lines(tree, source) <= MAX_MODULE_LINES
    for name, node in _functions(tree, module):
        if name not in FUNCTION_ALLOWLIST:
            assert _code_lines(node, source) <= MAX_FUNCTION_LINES, name


def test_the_allowlist_names_functions_that_exist() -> None:
    tree_names = {name for module, path in MODULES.items()
                  for name, _ in _functions(ast.parse(path.read_text()), module)}
    assert set(FUNCTION_ALLOWLIST) <= tree_names


def test_no_module_imports_a_framework_at_top_level() -> None:
    for path in MODULES.values():
        tree = ast.parse(path.read_text())
        for node in tree.body:
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            for name in names:
                assert name.split(".")[0] not in HEAVY, f"{path.name} imports {name}"
