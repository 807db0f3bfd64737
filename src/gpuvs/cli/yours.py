"""`gpuvs run-file SCRIPT.py::FUNC [SCRIPT.py::FUNC …]`: your own function (or several
implementations of it, side by side) on the CPU and the GPU, from the shell.
`gpuvs.compare` runs in a worker process (`gpuvs.yours.file_runner`; your code is imported
there, isolated from gpuvs but not sandboxed), so that a segfault, an exit or a hang in it
becomes a case `crashed` or `timeout` and the run carries on; this process prints the
tables, the crossover and why, and saves the run like any other."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from gpuvs.cli.app import app, usage_errors
from gpuvs.cli.options import (
    DEVICES,
    SIZES,
    BudgetOpt,
    DbOption,
    FormatOpt,
    JsonOpt,
    PassesOpt,
    SizesOpt,
    TimeoutOpt,
    check_format,
    open_store,
    split,
)
from gpuvs.cli.output import check_writable, finish, listening, narration
from gpuvs.store.output import JSON
from gpuvs.yours.run_file import DEFAULT_INPUTS

if TYPE_CHECKING:
    from gpuvs.store.sql import SqlStore


@app.command(name="run-file")
def run_file(
    targets: Annotated[list[str], typer.Argument(
        metavar="SCRIPT.py::FUNC [SCRIPT.py::FUNC …]",
        help="The function to time, in a Python file: FUNC(*args) is the work. Several are "
             "implementations of one function, compared side by side; the first is the "
             "reference whose output the others must match.")],
    inputs: Annotated[str, typer.Option(
        "--inputs", metavar="BUILDER",
        help="The function in the (first) target's file that builds FUNC's arguments: "
             "BUILDER(size) with --sizes (a tuple is spread into FUNC's arguments, anything "
             "else is the one argument), BUILDER() without.")] = DEFAULT_INPUTS,
    sizes: SizesOpt = None,
    device: Annotated[list[str] | None, typer.Option(
        "--device", "-d", metavar="DEVICE",
        help="cpu, cuda or cuda:N, repeated or comma-separated; default: cpu and cuda.")
    ] = None,
    budget: BudgetOpt = None,
    tolerance: Annotated[float | None, typer.Option(
        "--tolerance", metavar="REL",
        help="Relative tolerance between devices' outputs; default: the "
                            "output dtype's (float32 2e-3, float64 1e-10).")] = None,
    timeout: TimeoutOpt = None,
    passes: PassesOpt = None,
    db: DbOption = None,
    json_path: JsonOpt = None,
    fmt: FormatOpt = "plain",
) -> None:
    """Compare your own function on the CPU and the GPU, over sizes; or several
    implementations of it side by side: which one, on which device, is fastest.

    The file defines FUNC, the work, and BUILDER (by default `inputs`), which returns
    FUNC's arguments: torch tensors, nn.Modules, NumPy or CuPy arrays, in lists, tuples
    or dicts. They are built on the host and copied to each device; every device's
    output must agree with the CPU's (with several FUNCs, the first FUNC's on the first
    device). Example: `gpuvs run-file mlp.py::jacobian --sizes 1e2:1e4`, with `def
    inputs(size): return model, torch.rand(size, 1)` in mlp.py; `gpuvs run-file
    m.py::loop m.py::vectorised` sets two versions side by side.

    Your code runs in worker processes, each case sampled in --passes of them in turns:
    what it prints is kept out of the output (its last lines are quoted if it dies); a
    case that dies is recorded crashed, one that outlives --timeout is killed and
    recorded timeout, and a fresh worker runs the rest. Once your file has loaded, a few
    seconds of fixed probes calibrate the machine, as `gpuvs run` does, so that `gpuvs
    compare` and `check` can tell another machine's speed from your code's change.
    """
    from gpuvs.config import build, check_devices, check_tolerance, parse_sizes
    from gpuvs.execute.wire import RunFile, Sampling
    from gpuvs.yours.run_file import scripts

    with usage_errors():
        check_format(fmt)
        check_writable(db, (json_path, JSON))
        scripts(targets)  # the shapes and the files, before a worker starts
        chosen = parse_sizes(split(sizes, "-s/--sizes", SIZES))
        devices = check_devices(split(device, "-d/--device", DEVICES) or ("cpu", "cuda"))
        check_tolerance(tolerance)
        config = build({"budget_s": budget, "timeout_s": timeout, "passes": passes})
        store = open_store(db)
        request = RunFile(tuple(targets), inputs, chosen, devices, Sampling.of(config),
                          tolerance)
    raise typer.Exit(_recorded(store, request, config.timeout_s, config.passes, json_path,
                               fmt))


def _recorded(store: SqlStore, request: Any, timeout_s: float, passes: int,
              json_path: Path | None, fmt: str) -> int:
    """run-file's job (`jobs.own`): each case saved the moment the worker sends it, Ctrl-C
    keeping what finished, the run's JSON in the one run format; then shown."""
    from gpuvs.jobs import own
    from gpuvs.machine import contention
    from gpuvs.report.layout import status_line
    from gpuvs.yours.run_file import case_count

    # Read before any worker starts: the run is written at its first case, and by then
    # its own workers (and the calibration's) have raised the load average and taken CPU
    # time. The tree snapshot counts that time as run-file's own; what other processes
    # took since names a load begun seconds ago, which the load average hardly shows yet.
    load, began = contention.load_average(), contention.snapshot(tree=True)

    def header(run_id: str) -> list[str]:
        busy = contention.busy_line(since=began, load_at_start=load)
        return [*([busy] if busy else []),
                f"run {run_id}: {' '.join(request.targets)}, {case_count(request)} cases"]

    with usage_errors():
        done = own.run_file(store, request, timeout_s, passes=passes,
                            listener=listening(narration(fmt), header))
    return finish(done, "run-file", fmt, [
        f"run {done.run_id} finished: {status_line(dict(done.counts))}. Saved to "
        f"{store.path}; `gpuvs show {done.run_id}` prints it again."], json_path)
