"""The gates that keep the shape (docs/architecture.md is the map they enforce): heavy
frameworks imported lazily, every unit's allowed imports listed and checked — imports
inside functions and type-only ones counted too — no import cycle, small units, and every
owner the map's owner list names still there."""

from __future__ import annotations

import ast
import importlib
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "gpuvs"
HEAVY = ("torch", "cupy", "jax", "matplotlib", "jinja2", "scipy")
ROOT = "gpuvs"  # the package's own __init__

# A unit is a top-level module or subpackage of gpuvs. Each may import the units listed
# for it and nothing else. Bottom up, as docs/architecture.md draws the layers.
ALLOWED: dict[str, set[str]] = {
    # the nouns and pure arithmetic
    "_version": set(),
    "errors": set(),
    "units": set(),
    "stats": set(),
    "table": set(),
    "model": {"stats", "units"},
    "registry": {"errors"},
    # measuring one case: the protocol, its criteria, caveats and watches
    "measuring": {"errors", "model", "stats"},
    "backends": {"errors", "measuring", "model", "registry"},
    "workloads": {"backends", "errors", "measuring", "model", "registry", "units"},
    "machine": {"backends", "measuring", "model", "units"},
    "config": {"backends", "errors", "measuring", "workloads"},
    # many cases, each in a process gpuvs supervises
    "execute": {"backends", "config", "errors", "machine", "measuring", "model", "stats",
                "units", "workloads"},
    # results kept, and what they mean
    "store": {"_version", "errors", "machine", "model"},
    "analysis": {"machine", "model", "stats", "units"},
    # a GPU's time predicted from counted work and a device profile
    "predicting": {"analysis", "errors", "model", "store", "units", "workloads"},
    # the five posts; several processes at once
    "seeds": {"analysis", "machine", "measuring", "model", "registry", "table", "units",
              "workloads"},
    "distributed": {"backends", "errors", "execute", "machine", "measuring", "model", "store",
                    "units", "workloads"},
    # everything drawn for a person
    "report": {"analysis", "distributed", "machine", "measuring", "model", "predicting", "seeds",
               "table", "units", "workloads"},
    # the user's own code, in the user's process (or, for run-file, in a worker)
    "yours": {"_version", "analysis", "backends", "config", "errors", "execute", "machine",
              "measuring", "model", "report", "stats", "store", "units", "workloads"},
    # what each command does, as a plain function that returns the run
    "jobs": {"analysis", "config", "distributed", "errors", "execute", "machine", "model",
             "predicting", "report", "seeds", "store", "workloads", "yours", "backends"},
    # the public faces
    "api": {"backends", "config", "errors", "execute", "machine", "measuring", "model",
            "predicting", "yours"},
    "cli": {"_version", "analysis", "backends", "config", "distributed", "errors", "execute",
            "jobs", "machine", "measuring", "model", "predicting", "report", "seeds", "store",
            "units", "workloads", "yours"},
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


# Calls that import a module named at run time; where a module may make one with a name
# that is not a literal, and why.
DYNAMIC_IMPORTS = {
    "gpuvs.registry": "plug-ins named by GPUVS_PLUGINS and each registry's built-ins",
}


def _imports(path: Path, module: str | None = None, named: bool = True) -> set[str]:
    """Every gpuvs module `path` imports, wherever the import statement stands: `import`
    and `from … import`, and (with `named`) a string naming a gpuvs module, which is what
    `importlib` and `python -m` are given. None is relative: a relative import is refused
    by `test_imports_are_absolute_and_named`."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == ROOT:
            for alias in node.names:
                whole = f"{node.module}.{alias.name}"
                found.add(whole if whole in MODULES else node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == ROOT)
        elif named and isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and node.value in MODULES and node.value != ROOT:
            found.add(node.value)
    return found - {module or _module_name(path)}


def _hidden_imports(source: str) -> list[str]:
    """Imports the layer check cannot read: relative ones, and `importlib.import_module`
    or `__import__` given something other than a literal name."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.level:
            found.append(f"line {node.lineno}: relative import from {'.' * node.level}"
                         f"{node.module or ''}")
        elif isinstance(node, ast.Call):
            f = node.func
            name = (f.attr if isinstance(f, ast.Attribute) else
                    f.id if isinstance(f, ast.Name) else "")
            literal = bool(node.args) and isinstance(node.args[0], ast.Constant)
            if name in ("import_module", "__import__") and not literal:
                found.append(f"line {node.lineno}: {name}() of a name known only at run time")
    return found


IMPORTS = {name: _imports(path, name) for name, path in MODULES.items()}
# Import statements alone: a registry's package names its built-in plug-ins as strings,
# and each plug-in imports the package to register itself — a loop by design, at run time.
STATEMENTS = {name: _imports(path, name, named=False) for name, path in MODULES.items()}


def test_every_unit_has_its_place_in_the_table() -> None:
    assert {_unit(m) for m in MODULES} == set(ALLOWED)


def _used(unit: str) -> dict[str, str]:
    """The units `unit` imports, each with one module of `unit` that imports it."""
    return {_unit(target): module for module, targets in IMPORTS.items()
            if _unit(module) == unit for target in targets if _unit(target) != unit}


@pytest.mark.parametrize("unit", sorted(ALLOWED))
def test_each_unit_imports_only_what_its_layer_allows(unit: str) -> None:
    used = _used(unit)
    extra = {u: m for u, m in used.items() if u not in ALLOWED[unit]}
    assert not extra, f"{unit} may not import {sorted(extra)} (imported by {extra})"


@pytest.mark.parametrize("unit", sorted(ALLOWED))
def test_each_allowance_is_used(unit: str) -> None:
    """An allowance nothing uses is a door left open: the map says less than it claims."""
    unused = ALLOWED[unit] - set(_used(unit))
    assert not unused, f"{unit} is allowed {sorted(unused)} but imports none of them"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_are_absolute_and_named(module: str) -> None:
    hidden = _hidden_imports(MODULES[module].read_text())
    if module in DYNAMIC_IMPORTS:
        hidden = [h for h in hidden if "import_module" not in h]
    assert not hidden, f"{module}: {hidden}"


def test_a_planted_relative_import_is_caught() -> None:
    assert _hidden_imports("def f():\n    from .report import layout\n") == [
        "line 2: relative import from .report"]


def test_a_planted_importlib_import_is_caught() -> None:
    source = "import importlib\nname = 'gpuvs.report'\nimportlib.import_module(name)\n"
    assert _hidden_imports(source) == [
        "line 3: import_module() of a name known only at run time"]


def test_a_module_named_in_a_string_counts_as_an_import(tmp_path: Path) -> None:
    planted = tmp_path / "planted.py"
    planted.write_text("import importlib\nimportlib.import_module('gpuvs.report.layout')\n")
    assert "gpuvs.report.layout" in _imports(planted, "gpuvs.stats")


def _documented_layers() -> dict[str, set[str]]:
    """docs/architecture.md's layer table: each unit and what it may import."""
    doc = (SRC.parents[1] / "docs" / "architecture.md").read_text()
    table: dict[str, set[str]] = {}
    for line in doc.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 4 or not cells[1].startswith("`"):
            continue
        unit = cells[1].split("`")[1].rstrip("/")
        unit = ROOT if unit.startswith(ROOT) else unit
        may = cells[3]
        table[unit] = set() if may in ("—", "-", "") else {
            w.strip("` ") for w in may.split(",")}
    return table


def test_the_documented_layer_table_is_the_enforced_one() -> None:
    assert _documented_layers() == ALLOWED


OWNER_SECTION = "## One owner per concept"
DOTTED = re.compile(r"`(gpuvs(?:\.\w+)+)`")


def _owner_lines(doc: str) -> list[str]:
    """The lines of docs/architecture.md's owner list: its section's `- ` items."""
    section = doc.split(OWNER_SECTION, 1)[1].split("\n## ", 1)[0]
    return [line for line in section.splitlines() if line.startswith("- ")]


def _owners(doc: str) -> dict[str, list[str]]:
    """Each owner line's concept → the gpuvs names it gives in backticks, the owner (the
    first one after the arrow) first. A line with no dotted owner maps to []."""
    found: dict[str, list[str]] = {}
    for line in _owner_lines(doc):
        concept, _, rest = line.partition(" → ")
        owner = DOTTED.match(rest)
        beside = DOTTED.findall(rest)[1:] if owner else DOTTED.findall(rest)
        found[concept] = ([owner.group(1)] if owner else []) + beside
    return found


def _resolves(dotted: str) -> str:
    """'' when `dotted` names a gpuvs module, or something inside one (a function, a
    class, a member of it), else why not."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        module = ".".join(parts[:cut])
        if module in MODULES:
            found: object = importlib.import_module(module)
            for i, name in enumerate(parts[cut:], start=cut):
                if not hasattr(found, name):
                    return f"{'.'.join(parts[:i])} has no {name!r}"
                found = getattr(found, name)
            return ""
    return f"no module of src/gpuvs begins {dotted}"


def test_every_concept_in_the_owner_list_has_one_owner() -> None:
    doc = (SRC.parents[1] / "docs" / "architecture.md").read_text()
    owners = _owners(doc)
    assert len(owners) >= 20, "the owner list is missing or was cut short"
    assert len(owners) == len(_owner_lines(doc)), "a concept is listed twice"
    unowned = [c for c, names in owners.items() if not names]
    assert not unowned, f"lines with no `gpuvs.…` owner right after the arrow: {unowned}"


def test_every_owner_the_map_names_exists() -> None:
    """The owner list cannot go stale silently: every gpuvs name it gives — each
    concept's owner and the names beside it — is a module, or is defined in one."""
    owners = _owners((SRC.parents[1] / "docs" / "architecture.md").read_text())
    missing = {name: why for names in owners.values() for name in names
               if (why := _resolves(name))}
    assert not missing, missing


def test_a_stale_owner_is_caught() -> None:
    doc = (f"{OWNER_SECTION}\n\n"
           "- **a** → `gpuvs.measuring.protocol.measure_watched`: here\n"
           "- **b** → `gpuvs.measuring.protocol.measure_twice`: renamed since\n"
           "- **c** → `gpuvs.nowhere.thing`\n"
           "- **d** → the protocol, with no dotted name\n\n"
           "## The next section\n\n- **e** → `gpuvs.not.in.the.list`\n")
    owners = _owners(doc)
    assert list(owners) == ["- **a**", "- **b**", "- **c**", "- **d**"]
    assert owners["- **d**"] == []
    assert [_resolves(names[0]) for names in list(owners.values())[:3]] == [
        "", "gpuvs.measuring.protocol has no 'measure_twice'", "gpuvs has no 'nowhere'"]


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
    assert _cycles({m: t & set(MODULES) for m, t in STATEMENTS.items()}) == []


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
