"""`gpuvs run-file SCRIPT.py::FUNC [SCRIPT.py::FUNC …]`: what it asks for (an
`execute.wire.RunFile`, checked in gpuvs's own process as far as that needs none of the
user's code) and the loading, in the worker that runs it (`gpuvs.yours.file_worker`): each
user's file imported as `python SCRIPT.py` would, once, its FUNCs and the BUILDER of their
arguments found (in the first target's file), each missing piece a `UsageError` that names
what is there instead. Several targets are implementations of one function, side by side:
the first is the reference every other output must agree with."""

from __future__ import annotations

import importlib.util
import inspect
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gpuvs.errors import UsageError
from gpuvs.execute.wire import RunFile
from gpuvs.yours.compare import placements

DEFAULT_INPUTS = "inputs"


def case_count(request: RunFile) -> int:
    """How many cases a run-file request has: per implementation, one per size on the
    CPU, two on a GPU (one where it is not timed end-to-end)."""
    return (max(len(request.sizes), 1) * len(request.targets)
            * sum(len(placements(d, request.end_to_end)) for d in request.devices))


def script(target: str) -> tuple[Path, str]:
    """SCRIPT.py's path and FUNC's name, the file there; or a UsageError that says why
    not. Nothing of the file is run: gpuvs checks this before starting a worker."""
    path_text, sep, name = target.rpartition("::")
    if not sep or not path_text or not name:
        raise UsageError(f"expected SCRIPT.py::FUNC, e.g. mlp.py::jacobian; got {target!r}")
    path = Path(path_text)
    if not path.is_file():
        raise UsageError(f"no file {path_text!r}" + (" (it is a directory)" if path.is_dir()
                                                      else ""))
    return path, name


def scripts(targets: Sequence[str]) -> tuple[str, ...]:
    """Each target's FUNC, its file checked (`script`); several name one implementation
    each, so no two may share a FUNC."""
    names = tuple(script(t)[1] for t in targets)
    twice = next((n for i, n in enumerate(names) if n in names[:i]), None)
    if twice is not None:
        raise UsageError(f"two targets name the function {twice!r}: each implementation "
                         "compared is named by its function, so give each its own name")
    return names


def load_targets(targets: Sequence[str], inputs: str) -> tuple[dict[str, Any], Any]:
    """Each FUNC by name, and BUILDER from the first target's file; each file imported
    once; or a UsageError that names what is wrong."""
    modules: dict[Path, Any] = {}
    functions: dict[str, Any] = {}
    for target in targets:
        path, name = script(target)
        module = modules.get(path.resolve()) or modules.setdefault(path.resolve(),
                                                                   _import(path))
        fn = getattr(module, name, None)
        if not callable(fn):
            raise UsageError(f"{path} has no function {name!r}; {_known(module)}")
        functions[name] = fn
    path, first = script(targets[0])
    builder = getattr(modules[path.resolve()], inputs, None)
    if not callable(builder):
        raise UsageError(f"{path} has no function {inputs!r} to build {first}'s arguments; "
                         f"define {inputs}(size) returning them, or name another with "
                         f"--inputs ({_known(modules[path.resolve()])})")
    return functions, builder


def _known(module: Any) -> str:
    functions = sorted(n for n, v in vars(module).items()
                       if inspect.isfunction(v) and v.__module__ == module.__name__)
    return f"functions defined there: {', '.join(functions) or 'none'}"


def _import(path: Path) -> Any:
    spec = importlib.util.spec_from_file_location(f"gpuvs_run_file_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise UsageError(f"cannot import {path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(path.resolve().parent))  # as `python SCRIPT.py` would
    try:
        spec.loader.exec_module(module)
    except Exception as e:
        raise UsageError(f"importing {path} raised {type(e).__name__}: {e}") from e
    return module


def spread(built: Any) -> tuple[Any, ...]:
    """A tuple is FUNC's arguments; anything else is its one argument."""
    return built if isinstance(built, tuple) else (built,)


def check_builder(builder: Any, name: str, sized: bool) -> None:
    """BUILDER takes a size with --sizes and nothing without; say which when it does not."""
    try:
        inspect.signature(builder).bind(*((1,) if sized else ()))
    except TypeError:
        raise UsageError(
            f"{name}() takes a size: pass --sizes, e.g. --sizes 1e2:1e4" if not sized else
            f"{name}(size) must take one argument, the size") from None
    except ValueError:  # builtins without a signature: try them as they are
        pass
