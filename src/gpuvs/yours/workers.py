"""`gpuvs.compare(…, processes=N)`: the user's function timed in N worker processes, as
`gpuvs run-file` times it, instead of in the caller's own.

On the GPU VMs a launch-bound call's speed is decided per process, in two groups
(docs/accuracy.md): one process's interval shows its own group only, and a repeat in a
new process may land outside it. Where the function can be imported by name in another
process and its arguments pickled, compare hands the call to run-file's machinery
(`file_runner.run`): the functions are imported by name in a small file written for the
run, with the caller's `sys.path`, and the arguments (each size's, built here, where
`batch=` lives) are read back from pickles. Each case's figure is then the median of its
processes' medians and its interval covers them, as in `gpuvs run`.

A module (`compare(model, x, processes=5)`, or its method) is pickled to the workers,
parameters and all, its class imported by name. What cannot move is refused in one line
that says why (`movable`): a function a worker cannot import by name — defined in
`__main__` (a notebook, the script being run), a closure, a lambda, a method of anything
but a module — a module whose class is such, keyword arguments, an implementation name
that is not a Python identifier, arguments that do not pickle. Without
`processes=`, compare times the call in the caller's process, and its table says the
interval is one process's.
"""

from __future__ import annotations

import keyword
import pickle
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from gpuvs.config import KEYWORDS, MAX_PASSES, build, check_devices, check_tolerance
from gpuvs.errors import UsageError, one_line
from gpuvs.execute.wire import RunFile, Sampling
from gpuvs.model import Measurement
from gpuvs.report.progress import progress
from gpuvs.yours.compare import Functions, Implementation, implementations, plan_of
from gpuvs.yours.comparison import Comparison
from gpuvs.yours.file_runner import run as run_in_workers
from gpuvs.yours.run_file import case_count

BUILDER = "gpuvs_inputs"  # the generated file's builder of each size's arguments


class CannotMove(UsageError):
    """The call cannot reach a worker process; `why` says so in words each caller puts
    in its own sentence (compare's `processes=`, the magic's `--processes`; the fixture
    times the call in the test's process instead)."""

    def __init__(self, why: str, processes: int) -> None:
        super().__init__(f"processes={processes} times the call in worker processes, "
                         f"which import it by name: {why}; leave processes= out to time "
                         "it in this process")
        self.why = why


def check_processes(processes: object) -> int:
    """`processes=`, a whole number from 1 to MAX_PASSES, or a UsageError that says so."""
    if not (isinstance(processes, int) and not isinstance(processes, bool)
            and 1 <= processes <= MAX_PASSES):
        raise UsageError(f"processes= must be a whole number from 1 to {MAX_PASSES}; got "
                         f"{processes!r}")
    return processes


def run(fn: Functions, args: tuple[Any, ...], kwargs: Mapping[str, Any], *, processes: int,
        devices: Sequence[str] = ("cpu", "cuda"), batch: Callable[[int], Any] | None = None,
        sizes: Sequence[int] | str | None = None, budget_s: float | None = None,
        tolerance: float | None = None, name: str | None = None,
        show_progress: bool = False, end_to_end: bool = True) -> Comparison:
    """`gpuvs.compare` in `processes` worker processes (`file_runner.run`, run-file's
    passes): the same cases, checks and result, each case sampled in turns over the
    processes, the budget shared between them."""
    devices = check_devices(devices)
    config = build({"budget_s": budget_s, "devices": devices}, names=KEYWORDS)
    check_tolerance(tolerance, "tolerance")
    chosen = implementations(fn, name)
    originals = tuple(fn.values()) if isinstance(fn, Mapping) else (fn,)
    why = movable(chosen, originals, kwargs)
    if why:
        raise CannotMove(why, processes)
    plan = plan_of(args, dict(kwargs), batch, sizes)
    sized = batch is not None or sizes is not None
    with tempfile.TemporaryDirectory(prefix="gpuvs-compare-") as folder:
        where = Path(folder)
        for n in plan.sizes:
            _pickled(plan.inputs(n)[0], where / _inputs_file(n if sized else None),
                     "the arguments")
        for i, (impl, original) in enumerate(zip(chosen, originals, strict=True)):
            if impl.prefix:  # a module, or its method: sent whole, parameters and all
                _pickled(original, where / f"implementation-{i}.pickle", impl.name)
        script = where / "compared.py"
        script.write_text(_script(chosen, originals, where), encoding="utf-8")
        request = RunFile(tuple(f"{script}::{i.name}" for i in chosen), BUILDER,
                          plan.sizes if sized else (), devices, Sampling.of(config),
                          tolerance, explain=False, end_to_end=end_to_end)
        if not show_progress:
            return run_in_workers(request, config.timeout_s, passes=processes).comparison
        heard: set[str] = set()
        with progress(case_count(request), stderr=True) as advance:
            def shown(m: Measurement) -> None:  # a later process adds to it: shown once
                if m.case.key not in heard:
                    heard.add(m.case.key)
                    advance(m)

            return run_in_workers(request, config.timeout_s, shown, processes).comparison


def movable(chosen: Sequence[Implementation], originals: Sequence[object],
            kwargs: Mapping[str, Any]) -> str:
    """"" where every implementation can reach another process — a function by its name,
    a module (or its method) pickled with its class imported by name — else why not (the
    arguments are tried apart, as they are pickled)."""
    if kwargs:
        return (f"keyword arguments ({', '.join(kwargs)}) are not passed to worker "
                "processes; pass them positionally")
    for impl, original in zip(chosen, originals, strict=True):
        why = _why_not(original, impl.name, bool(impl.prefix))
        if why:
            return why
        if (not impl.name.isidentifier() or keyword.iskeyword(impl.name)
                or impl.name == BUILDER):
            return (f"the implementation name {impl.name!r} is not a Python identifier, "
                    "which a worker binds it to")
    return ""


def _importable(obj: object) -> tuple[str, str] | None:
    """(module, name) by which another process imports `obj` (a function, a class), else
    None: the module it was defined in (imported here already) holds it under its own
    name."""
    module, name = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    if not module or not name or module == "__main__" or "." in name or "<" in name:
        return None
    return (module, name) if getattr(sys.modules.get(module), name, None) is obj else None


def _why_not(original: object, name: str, module: bool) -> str:
    """Why `original` cannot reach a worker, or ""."""
    if module:  # pickled: its class is what the worker imports
        owner = getattr(original, "__self__", original)
        if _importable(type(owner)) is not None:
            return ""
        where = ("defined in __main__ (a notebook, or the script being run)"
                 if type(owner).__module__ == "__main__" else "not defined at the top of a "
                 "module")
        return (f"{name} is a module whose class {type(owner).__name__} is {where}, which "
                "a worker cannot import")
    if _importable(original) is not None:
        return ""
    if getattr(original, "__module__", None) == "__main__":
        return (f"{name} is defined in __main__ (a notebook, or the script being run), "
                "which a worker process cannot import")
    return (f"{name} is not a function defined at the top of a module (a closure, a "
            "lambda, a method or a partial)")


def _pickled(sent: object, path: Path, what: str) -> None:
    try:
        data = pickle.dumps(sent, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as e:
        raise UsageError(f"processes= pickles {what} for the worker processes, and "
                         f"pickling failed: {one_line(e)}; leave processes= out to time "
                         "the call in this process") from None
    path.write_bytes(data)


def _inputs_file(size: int | None) -> str:
    return "inputs.pickle" if size is None else f"inputs-{size}.pickle"


def _file_of(module: str) -> str | None:
    """The file a top-level, one-file module was loaded from (a worker loads that file,
    not whatever of its name comes first on its path), else None: imported by name."""
    found = sys.modules.get(module)
    path = getattr(found, "__file__", None)
    if "." in module or not path or not path.endswith(".py") or path.endswith("__init__.py"):
        return None
    return str(path)


def _script(chosen: Sequence[Implementation], originals: Sequence[object], where: Path
            ) -> str:
    """The file run-file's workers load: the caller's `sys.path` first (as
    multiprocessing's spawn passes it), each implementation bound to its name (a
    function imported by its own, a module unpickled), and the builder that reads a
    size's arguments back."""
    lines = ['"""Written by gpuvs.compare(…, processes=N) for one comparison."""',
             "import importlib as _importlib", "import os as _os", "import pickle as _pickle",
             "import sys as _sys", "",
             f"_sys.path[:0] = [p for p in {sys.path!r} if p not in _sys.path]", "", "",
             "def _module(name, path):",
             "    # A top-level file is loaded from that file: another of its name may come",
             "    # first on the path (a test file's name in two projects).",
             "    if path is None:",
             "        return _importlib.import_module(name)",
             "    found = _sys.modules.get(name)",
             "    if getattr(found, '__file__', None) == path:",
             "        return found",
             "    import importlib.util as _util",
             "    spec = _util.spec_from_file_location(name, path)",
             "    module = _sys.modules[name] = _util.module_from_spec(spec)",
             "    spec.loader.exec_module(module)",
             "    return module", ""]
    for i, (impl, original) in enumerate(zip(chosen, originals, strict=True)):
        if impl.prefix:
            lines.append(f"with open(_os.path.join({str(where)!r}, "
                         f"'implementation-{i}.pickle'), 'rb') as _f:")
            lines.append(f"    {impl.name} = _pickle.load(_f)")
            continue
        module, name = _importable(original) or ("", "")
        lines.append(f"{impl.name} = getattr(_module({module!r}, "
                     f"{_file_of(module)!r}), {name!r})")
    lines += ["", "", f"def {BUILDER}(size=None):",
              f"    name = {_inputs_file(None)!r} if size is None else f'inputs-{{size}}.pickle'",
              f"    with open(_os.path.join({str(where)!r}, name), 'rb') as f:",
              "        return _pickle.load(f)", ""]
    return "\n".join(lines)
