"""`gpuvs run-file SCRIPT.py::FUNC`: your own function on the CPU and the GPU, from the
shell. It runs `gpuvs.compare` in this process (your code is imported, not sandboxed),
prints the tables, the crossover and why, and saves the run like any other."""

from __future__ import annotations

import importlib.util
import inspect
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from gpuvs.cli.app import (
    EXIT_FAILED_RUN,
    BudgetOpt,
    DbOption,
    JsonOpt,
    SizesOpt,
    app,
    console,
    open_store,
    progress,
    split,
    usage_errors,
)
from gpuvs.errors import UsageError

DEFAULT_INPUTS = "inputs"


@app.command(name="run-file")
def run_file(
    target: Annotated[str, typer.Argument(
        metavar="SCRIPT.py::FUNC",
        help="The function to time, in a Python file: FUNC(*args) is the work.")],
    inputs: Annotated[str, typer.Option(
        metavar="BUILDER",
        help="The function in the same file that builds FUNC's arguments: BUILDER(size) "
             "with --sizes (a tuple is spread into FUNC's arguments, anything else is the "
             "one argument), BUILDER() without.")] = DEFAULT_INPUTS,
    sizes: SizesOpt = None,
    device: Annotated[list[str] | None, typer.Option(
        "--device", "-d", metavar="DEVICE",
        help="cpu, cuda or cuda:N, repeated or comma-separated; default: cpu and cuda.")
    ] = None,
    budget: BudgetOpt = None,
    tolerance: Annotated[float | None, typer.Option(
        metavar="REL", help="Relative tolerance between devices' outputs; default: the "
                            "output dtype's (float32 2e-3, float64 1e-10).")] = None,
    db: DbOption = None,
    json_path: JsonOpt = None,
) -> None:
    """Compare your own function on the CPU and the GPU, over sizes.

    The file defines FUNC, the work, and BUILDER (by default `inputs`), which returns
    FUNC's arguments: torch tensors, nn.Modules, NumPy or CuPy arrays, in lists, tuples
    or dicts. They are built on the host and copied to each device; every device's
    output must agree with the CPU's. Example: `gpuvs run-file mlp.py::jacobian --sizes
    1e2:1e4`, with `def inputs(size): return model, torch.rand(size, 1)` in mlp.py.
    """
    from gpuvs.config import parse_sizes
    from gpuvs.yours.compare import check_devices, run

    with usage_errors():
        fn, builder = load_target(target, inputs)
        chosen = parse_sizes(split(sizes))
        devices = check_devices(split(device) or ("cpu", "cuda"))
        _check_builder(builder, inputs, bool(chosen))
        if budget is not None and not budget > 0:
            raise UsageError(f"--budget must be a positive number of seconds; got {budget}")
        store = open_store(db)
        total = max(len(chosen), 1) * sum(1 if d == "cpu" else 2 for d in devices)
        with progress(total) as advance:
            args = () if chosen else _spread(builder())
            result = run(fn, args, {}, devices=devices, batch=builder if chosen else None,
                         sizes=chosen or None, budget_s=budget or 1.0, tolerance=tolerance,
                         name=fn.__name__, on_result=advance)
    raise typer.Exit(_report(result, store, target, json_path))


def load_target(target: str, inputs: str) -> tuple[Any, Any]:
    """FUNC and BUILDER from SCRIPT.py::FUNC, or a UsageError that names what is wrong."""
    path_text, sep, name = target.rpartition("::")
    if not sep or not path_text or not name:
        raise UsageError(f"expected SCRIPT.py::FUNC, e.g. mlp.py::jacobian; got {target!r}")
    path = Path(path_text)
    if not path.is_file():
        raise UsageError(f"no file {path_text!r}" + (" (it is a directory)" if path.is_dir()
                                                      else ""))
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


def _spread(built: Any) -> tuple[Any, ...]:
    return built if isinstance(built, tuple) else (built,)


def _check_builder(builder: Any, name: str, sized: bool) -> None:
    try:
        inspect.signature(builder).bind(*((1,) if sized else ()))
    except TypeError:
        raise UsageError(
            f"{name}() takes a size: pass --sizes, e.g. --sizes 1e2:1e4" if not sized else
            f"{name}(size) must take one argument, the size") from None
    except ValueError:  # builtins without a signature: try them as they are
        pass


def _report(result: Any, store: Any, target: str, json_path: Path | None) -> int:
    from gpuvs.report import console as con
    from gpuvs.report.layout import result_tables
    from gpuvs.yours.comparison import KIND, save_run

    out = console()
    con.print_tables(result_tables(result.measurements), out)
    for line in str(result.explain()).splitlines():
        out.print(line, highlight=False, markup=False)
    run_id = save_run(store, result.measurements, {
        "kind": KIND, "function": result.name, "target": target,
        "devices": list(result.devices), "sizes": list(result.sizes)})
    out.print(f"saved as run {run_id} in {store.path}; `gpuvs show {run_id}` prints it again.",
              markup=False)
    if json_path:
        import os

        tmp = json_path.with_name(json_path.name + ".tmp")
        tmp.write_text(result.to_json(indent=1))
        os.replace(tmp, json_path)  # atomically: a reader never sees half a file
        out.print(f"wrote {json_path}", markup=False)
    return EXIT_FAILED_RUN if result.failed else 0
