"""The `gpuvs` command: the Typer app, and what every command shares (options, errors,
output checks, the plan printout). The cli package is the only one that prints or chooses
exit codes; each family of commands is a module of it.

Exit codes: 0 a run that finished (cases may still be skipped, unavailable, OOM or timed
out: those are results); 1 a run with a wrong result or a crashed case; 2 bad usage.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer

from gpuvs.errors import GpuvsError, Interrupted, UsageError
from gpuvs.report.console import console

app = typer.Typer(
    help="Is the GPU faster than the CPU for this work, by how much, from what size on, "
         "and why? gpuvs runs the same workload on NumPy, PyTorch (CPU and CUDA), CuPy and "
         "JAX, times each case correctly (synchronised, device events, warm-up, CIs) in "
         "isolated workers, and saves every result as it finishes.",
    no_args_is_help=True, add_completion=False, rich_markup_mode=None,
)

EXIT_FAILED_RUN, EXIT_USAGE = 1, 2
EXIT_INTERRUPTED = 130  # as a shell reports a command ended by Ctrl-C


def _print_version(asked: bool) -> None:
    if asked:
        from gpuvs._version import __version__
        console().print(f"gpuvs {__version__}", markup=False, highlight=False)
        raise typer.Exit(0)


@app.callback()
def _options(
    version: Annotated[bool, typer.Option(
        "--version", callback=_print_version, is_eager=True,
        help="Print gpuvs's version and exit.")] = False,
) -> None:
    """The options of `gpuvs` itself, before any command: `gpuvs --version` answers as
    every installed Python tool does, so a bug report can name the version it ran."""


@contextmanager
def usage_errors() -> Iterator[None]:
    """Every deliberate gpuvs error becomes one red line and exit code 2."""
    try:
        yield
    except Interrupted as e:
        console(stderr=True).print(f"interrupted: {e}", soft_wrap=True, markup=False,
                                   highlight=False)
        raise typer.Exit(EXIT_INTERRUPTED) from None
    except GpuvsError as e:
        from rich.markup import escape

        console(stderr=True).print(f"[red]error:[/red] {escape(one_line(str(e)))}",
                                   soft_wrap=True)
        raise typer.Exit(EXIT_USAGE) from None


def narration(fmt: str) -> Any:
    """The console for a command's own lines (its header, progress, "finished", "wrote"):
    stdout, or stderr when stdout carries machine-read tables (`--format md|json`)."""
    return console(stderr=fmt != "plain")


def one_line(text: str) -> str:
    """A message that a library wrote over several lines (tarfile, pickle), joined: an
    error is one line, in a terminal and in a CI log alike."""
    import re

    return "; ".join(re.sub(r"^\s*(- )?", "", part).rstrip()
                     for part in text.splitlines() if part.strip())


def split(values: list[str] | None) -> tuple[str, ...]:
    """Repeated options and comma lists alike: `-b numpy,torch -b jax`."""
    return tuple(v.strip() for item in values or () for v in item.split(",") if v.strip())


DbOption = Annotated[str | None, typer.Option(
    "--db", metavar="PATH",
    help="Results database (SQLite path). Default: $GPUVS_DB, else the user data directory.")]


def open_store(db: str | None, reading: bool = False) -> Any:
    """The results store (`--db`); a command that only reads it never creates one."""
    from gpuvs.store import open_store
    return open_store(db, reading)


VariantOpt = Annotated[list[str] | None, typer.Option(
    "--variant", metavar="VARIANT",
    help="correct (the default), as_written (the post's own timing method, replayed) or "
         "tuned (the fix a performance engineer would apply), where the workload has it.")]
BackendOpt = Annotated[list[str] | None, typer.Option(
    "--backend", "-b", metavar="BACKEND", help="numpy, torch, cupy, jax; default: all.")]
DeviceOpt = Annotated[list[str] | None, typer.Option(
    "--device", "-d", metavar="DEVICE", help="cpu, cuda or cuda:N; default: cpu and cuda.")]
DtypeOpt = Annotated[list[str] | None, typer.Option(
    "--dtype", metavar="DTYPE",
    help="float16, bfloat16, float32, float64; default: the workload's (float32).")]
SizesOpt = Annotated[list[str] | None, typer.Option(
    "--sizes", "-s", metavar="SIZES",
    help="Sizes: a list (1000,4096) or a range START:STOP[:FACTOR] (1e3:1e7 steps ×10; "
         "64:4096:2 doubles).")]
BudgetOpt = Annotated[float | None, typer.Option(
    "--budget", metavar="SECONDS",
    help="Sampling seconds per case (default 1). More budget, tighter intervals.")]
TimeoutOpt = Annotated[float | None, typer.Option(
    "--timeout", metavar="SECONDS",
    help="Seconds before a case is killed and recorded as timeout (default 300).")]
CriterionOpt = Annotated[str | None, typer.Option(
    "--criterion", metavar="NAME[:K=V]",
    help="When to stop sampling: median-ci[:rel=0.01], stdrel[:max_noise=0.005], "
         "fixed[:n=7].")]
FORMATS = ("plain", "md", "json")
FormatOpt = Annotated[str, typer.Option(
    "--format", metavar="plain|md|json",
    help="How tables print: plain text (the terminal's), md (GitHub-flavoured markdown, "
         "also appended to $GITHUB_STEP_SUMMARY when it is set) or json.")]
JsonOpt = Annotated[Path | None, typer.Option(
    "--json", metavar="PATH",
    help="Also write the run (config, environment, raw samples) here.")]
WorkloadsOpt = Annotated[list[str] | None, typer.Option(
    "--workload", "-w", metavar="WORKLOAD",
    help="Workload(s) to run, each whole; default: the first-answer suite (square products "
         "and x *= 5 over sizes; --all for every workload). See `gpuvs list`.")]
ColdOpt = Annotated[bool, typer.Option(
    "--cold", help="Flush the caches before every timed call (GPU L2, CPU last-level "
                   "cache); one call per sample.")]
PassesOpt = Annotated[int | None, typer.Option(
    "--passes", metavar="N",
    help="Measure the plan N times, each pass in fresh worker processes with 1/N of the "
         "budget, and merge each case's samples, so that its CI covers what a new process "
         "a moment later gives (default 2; 1 for one process).")]
ResumeOpt = Annotated[str | None, typer.Option(
    "--resume", metavar="RUN_ID|latest",
    help="Finish an interrupted run: skip its recorded cases, run the rest. `latest`: the "
         "most recent run that did not finish.")]
DryRunOpt = Annotated[bool, typer.Option(
    "--dry-run", help="Check the options and print the plan (how many cases, of what), "
                      "then stop: nothing is measured or stored.")]
AxisOpt = Annotated[list[str] | None, typer.Option(
    "--axis", "-a", metavar="NAME=VALUE",
    help="Only the cases whose parameter NAME is VALUE (repeatable), e.g. -a shape=square "
         "-a data=resident for one case per size; `gpuvs list` names the parameters.")]


def build_config(workloads: tuple[str, ...], variant: list[str] | None,
                  backend: list[str] | None, device: list[str] | None,
                  dtype: list[str] | None, sizes: list[str] | None, budget: float | None,
                  timeout: float | None, criterion: str | None, cold: bool = False,
                  passes: int | None = None, axis: list[str] | None = None,
                  full_suite: bool = False) -> Any:
    from gpuvs import config as cfg
    return cfg.build({
        "workloads": workloads, "variants": split(variant), "backends": split(backend),
        "devices": split(device), "dtypes": split(dtype),
        "sizes": cfg.parse_sizes(split(sizes)), "budget_s": budget, "timeout_s": timeout,
        "criterion": criterion, "cold": cold or None, "passes": passes,
        "axes": tuple(axis or ()), "full_suite": full_suite or None,
    })


def wrap_up(out: Any, run: Any, measurements: list[Any], counts: Mapping[str, int],
            json_path: Path | None, report_path: Path | None = None,
            ceilings: Sequence[Any] = ()) -> int:
    """After a run's tables: its JSON and its report where asked for, and the exit code —
    1 when a case crashed or gave a wrong result, since a run's numbers are then
    incomplete."""
    from gpuvs.model import Status
    if json_path:
        from gpuvs.store.export import write_json
        with usage_errors():
            try:
                write_json(json_path, run.stored(), measurements, ceilings)
            except OSError as e:  # the measurements are safe: say how to get the file
                raise UsageError(f"cannot write the JSON to {json_path}: "
                                 f"{e.strerror or e}; the run is saved: `gpuvs export "
                                 f"{run.run_id} -o PATH` writes it") from None
        out.print(f"wrote {json_path}")
    if report_path:
        with usage_errors():
            try:
                write_report(report_path, run.stored(), measurements, list(ceilings))
            except UsageError as e:  # the measurements are safe: say how to get the page
                raise UsageError(f"{e}; the run is saved: `gpuvs report {run.run_id} -o "
                                 "PATH` writes its report") from None
        out.print(f"wrote {report_path}")
    failed = counts.get(Status.WRONG_RESULT.value, 0) + counts.get(Status.CRASHED.value, 0)
    return EXIT_FAILED_RUN if failed else 0


def stored_ceilings(store: Any, record: Any) -> list[Any]:
    """This machine's measured ceilings, if `gpuvs ceilings` has run on it."""
    from gpuvs.analysis.ceilings import read
    from gpuvs.store.runs import find_ceilings_run
    found = find_ceilings_run(store, record.environment.fingerprint)
    return read(store.measurements(found.run_id)) if found else []


def print_plan(cases: Sequence[Any], config: Any, estimated: Any) -> None:
    """What a run would measure: the case count and its estimated time, then per
    workload its backends, devices, sizes and the values of each of its axes — for
    `--dry-run`, before committing an hour to a plan."""
    from collections import defaultdict

    from gpuvs import units
    out = console()
    by: dict[str, list[Any]] = defaultdict(list)
    for c in cases:
        by[c.workload].append(c)
    out.print(f"{len(cases)} cases, {estimate_line(estimated, config)}; nothing was run "
              "(--dry-run)", markup=False)
    for name, cs in by.items():
        targets = sorted({f"{c.backend} on {c.device}" for c in cs})
        sizes = sorted({c.size for c in cs})
        shown = ", ".join(units.size(n) for n in sizes[:8]) + (" …" if len(sizes) > 8 else "")
        axes: dict[str, set[str]] = defaultdict(set)
        for c in cs:
            for k, v in c.params:
                axes[k].add(v)
        named = "".join(f"; {k} {', '.join(sorted(v))}" for k, v in sorted(axes.items()))
        out.print(f"  {name}: {len(cs)} cases; {', '.join(targets)}; sizes {shown}{named}",
                  markup=False, highlight=False)


def plan_estimate(cases: Sequence[Any], config: Any, store: Any = None,
                  db: str | None = None, environment: Any = None) -> Any:
    """How long the plan takes (`execute.estimate`): from this machine's stored cases of
    its workloads — in `store`, or at `db` if a store is there (a dry run creates none)
    — a quick probe of the CPU, and whether the machine is busy now."""
    from gpuvs.execute.estimate import estimate, quick_rates
    from gpuvs.machine import contention, env
    fingerprint = (environment or env.collect()).fingerprint
    past = _past(store, db, fingerprint, sorted({c.workload for c in cases}))
    return estimate(tuple(cases), config, past, quick_rates(), contention.loaded())


def _past(store: Any, db: str | None, fingerprint: str, workloads: list[str]) -> list[Any]:
    """This set-up's stored cases of these workloads, with their runs' budget and passes."""
    from gpuvs.config import RunConfig
    from gpuvs.errors import StoreError
    from gpuvs.execute.estimate import Past
    from gpuvs.store import open_store as open_any
    opened = store is None
    if opened:
        try:
            store = open_any(db, reading=True)
        except StoreError:  # no store yet, or none readable: nothing is known
            return []
    try:
        rows = store.history(fingerprint, workloads)
    finally:
        if opened:
            store.close()
    default = RunConfig()
    return [Past(m, float(cfg.get("budget_s", default.budget_s)),
                 int(cfg.get("passes", default.passes))) for cfg, m in rows]


def estimate_line(estimated: Any, config: Any) -> str:
    """'about 4 min 50 s (from this machine's past runs for 40 of 54 cases; budget 1 s a
    case, 2 passes)': to 10 s below ten minutes, to the minute above."""
    seconds = estimated.seconds
    minutes, rest = divmod(round(seconds / 10) * 10, 60)
    about = (f"about {seconds / 60:.0f} min" if seconds >= 600 else
             f"about {minutes} min" + (f" {rest} s" if rest else "") if seconds >= 90 else
             f"about {max(seconds, 1):.0f} s")
    known, measured = estimated.from_history, estimated.measured
    source = ("no case can run here" if not measured else
              "from this machine's past runs" if known == measured else
              f"from this machine's past runs for {known} of {measured} cases" if known else
              "a model: no past run of these cases on this machine")
    passes = f"{config.passes} pass{'es' if config.passes > 1 else ''}"
    return f"{about} ({source}; budget {config.budget_s:g} s a case, {passes})"


def check_writable(*paths: Path | None) -> None:
    """Before a run starts: each output path given can be written (its nearest existing
    directory is writable and the path is no directory), so that a bad path fails in one
    line at once, not after the whole run."""
    import os

    for path in filter(None, paths):
        if path.is_dir():
            raise UsageError(f"{path} is a directory; give a file path")
        parent = next((p for p in path.absolute().parents if p.exists()), None)
        if parent is None or not parent.is_dir():
            raise UsageError(f"cannot write {path}: {parent} is a file, not a directory")
        if not os.access(parent, os.W_OK):
            raise UsageError(f"cannot write {path}: {parent} is not writable")


def write_report(path: Path, record: Any, measurements: list[Any], ceilings: list[Any]) -> None:
    """Render and write atomically; a path that cannot be written is bad usage."""
    from gpuvs.report.html import render_html
    write_file(path, render_html(record, measurements, ceilings), "report")


def write_file(path: Path, content: str | bytes, what: str) -> None:
    """Write atomically; a path that cannot be written is bad usage, said in one line."""
    from gpuvs.store.export import write_atomic
    try:
        write_atomic(path, content)
    except OSError as e:
        # mkdir under a file says only "File exists": name the file in the way instead.
        blocker = next((p for p in path.parents if p.exists()), None)
        why = (f"{blocker} is a file, not a directory" if blocker and not blocker.is_dir()
               else e.strerror or str(e))
        raise UsageError(f"cannot write the {what} to {path}: {why}") from None


def check_format(fmt: str) -> str:
    """One of FORMATS, or a UsageError naming what would be accepted."""
    if fmt not in FORMATS:
        raise UsageError(f"unknown format {fmt!r}; accepted: {', '.join(FORMATS)}")
    return fmt


def emit_tables(tables: Sequence[Any], fmt: str, out: Any) -> None:
    """Print tables as `fmt` asks. Markdown also goes to $GITHUB_STEP_SUMMARY when a
    GitHub Actions step sets it, so a CI run's summary page shows the tables."""
    import os

    from gpuvs.report import console as con
    from gpuvs.report.markdown import to_json, to_markdown
    if fmt == "plain":
        con.print_tables(tables, out)
        return
    text = to_markdown(tables) if fmt == "md" else to_json(tables)
    out.print(text, markup=False, highlight=False, soft_wrap=True, end="")
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if fmt == "md" and summary:
        with open(summary, "a", encoding="utf-8") as f:
            f.write(text + "\n")
