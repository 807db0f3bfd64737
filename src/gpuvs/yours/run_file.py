"""`gpuvs run-file SCRIPT.py::FUNC`: what it asks for (an `execute.wire.RunFile`, checked in
gpuvs's own process as far as that needs none of the user's code) and the loading, in the worker
that runs it (`gpuvs.yours.file_worker`): the user's file imported as `python SCRIPT.py`
would, its FUNC and the BUILDER of FUNC's arguments found, each missing piece a
`UsageError` that names what is there instead."""

from __future__ import annotations

import importlib.util
import inspect
import sys
from pathlib import Path
from typing import Any

from gpuvs.errors import UsageError
from gpuvs.execute.wire import RunFile
from gpuvs.yours.compare import placements

DEFAULT_INPUTS = "inputs"


def case_count(request: RunFile) -> int:
    """How many cases a run-file request has: one per size on the CPU, two on a GPU."""
    return max(len(request.sizes), 1) * sum(len(placements(d)) for d in request.devices)


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


def load_target(target: str, inputs: str) -> tuple[Any, Any]:
    """FUNC and BUILDER from SCRIPT.py::FUNC, or a UsageError that names what is wrong."""
    path, name = script(target)
    module = _import(path)
    functions = sorted(n for n, v in vars(module).items()
                       if inspect.isfunction(v) and v.__module__ == module.__name__)
    known = f"functions defined there: {', '.join(functions) or 'none'}"
    fn = getattr(module, name, None)
    if not callable(fn):
        raise UsageError(f"{path} has no function {name!r}; {known}")
    builder = getattr(module, inputs, None)
    if not callable(builder):
        raise UsageError(f"{path} has no function {inputs!r} to build {name}'s arguments; "
                         f"define {inputs}(size) returning them, or name another with "
                         f"--inputs ({known})")
    return fn, builder


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
