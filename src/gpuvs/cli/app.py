"""The `gpuvs` command: the Typer app, and what every command shares (options, errors,
output checks, the plan printout). The cli package is the only one that prints or chooses
exit codes; each family of commands is a module of it.

Exit codes: 0 a run that finished (cases may still be skipped, unavailable, OOM or timed
out: those are results); 1 a run with a wrong result or a crashed case; 2 bad usage.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from gpuvs.errors import GpuvsError, Interrupted, UsageError
from gpuvs.report.console import console

EXIT_FAILED_RUN, EXIT_USAGE = 1, 2
EXIT_INTERRUPTED = 130  # as a shell reports a command ended by Ctrl-C


class OneLineErrors(TyperGroup):
    """The `gpuvs` group, whose parser's own errors (a value that is not a number, an
    unknown option, a missing argument) print as one line, as gpuvs's errors do, instead
    of click's usage, hint and message on three: an error is one line in a terminal and
    in a CI log alike. A reader gone from a pipe (`gpuvs show | head -1`) is no error, in
    the help as in a command's output: click's answer to one, exit 1, fails a `pipefail`
    pipeline. Everything else is click's: help, exit codes, Ctrl-C."""

    def make_context(self, *args: Any, **kwargs: Any) -> Any:
        with _reader_may_go():  # the root's --help is printed as it is parsed
            return super().make_context(*args, **kwargs)

    def invoke(self, ctx: Any) -> Any:
        with _reader_may_go():  # a command, and its own --help
            return super().invoke(ctx)

    def main(self, *args: Any, **kwargs: Any) -> Any:
        standalone = kwargs.get("standalone_mode", True)
        kwargs["standalone_mode"] = False
        try:
            code = super().main(*args, **kwargs)
        except _click_exception() as e:
            parsed: Any = e
            if type(e).__name__ == "NoArgsIsHelpError":  # `gpuvs` alone: the help
                parsed.show()
            else:
                print_error(_parser_message(e))
            if not standalone:
                raise
            sys.exit(parsed.exit_code)
        except typer.Abort:
            if not standalone:
                raise
            console(stderr=True).print("aborted", markup=False)
            sys.exit(EXIT_FAILED_RUN)
        if not standalone:
            return code
        sys.exit(code if isinstance(code, int) else 0)


@contextmanager
def _reader_may_go() -> Iterator[None]:
    """A closed pipe met outside the console (which handles its own: `console`), the end
    of the output: exit 0."""
    from gpuvs.report.console import reader_gone
    try:
        yield
    except BrokenPipeError:
        reader_gone(sys.stdout)
        raise typer.Exit(0) from None


def _click_exception() -> type[Exception]:
    """click's ClickException, which typer vendors from 0.28 on and re-exported before."""
    base: type[Exception] = next(c for c in typer.BadParameter.__mro__
                                 if c.__name__ == "ClickException")
    return base


def _parser_message(e: Any) -> str:
    """click's message, and where to read what the command accepts."""
    ctx = getattr(e, "ctx", None)
    # The root's name is how gpuvs was started ("python -m gpuvs" too): say `gpuvs`.
    path = ("gpuvs" + ctx.command_path.removeprefix(ctx.find_root().info_name or "")
            if ctx is not None else "")
    hint = f"; `{path} --help` lists what it accepts" if path else ""
    return f"{e.format_message().rstrip('.')}{hint}"


def print_error(message: str) -> None:
    """One red line on stderr: what every deliberate error of gpuvs looks like."""
    from rich.markup import escape

    console(stderr=True).print(f"[red]error:[/red] {escape(one_line(message))}",
                               soft_wrap=True)


app = typer.Typer(
    cls=OneLineErrors,
    help="Is the GPU faster than the CPU for this work, by how much, from what size on, "
         "and why? gpuvs runs the same workload on NumPy, PyTorch (CPU and CUDA), CuPy and "
         "JAX, times each case correctly (synchronised, device events, warm-up, CIs) in "
         "isolated workers, and saves every result as it finishes.",
    no_args_is_help=True, add_completion=False, rich_markup_mode=None,
)


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
        print_error(str(e))
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


def split(values: list[str] | None, flag: str = "", accepted: str = "") -> tuple[str, ...]:
    """Repeated options and comma lists alike: `-b numpy,torch -b jax`. A `flag` given
    with nothing in it (`-b ''`) is refused, naming `accepted`: read as not given, it
    would have run every backend."""
    if flag and any(not item.strip(" ,") for item in values or ()):
        raise UsageError(f"{flag} was given an empty value; accepted: {accepted}")
    return tuple(v.strip() for item in values or () for v in item.split(",") if v.strip())


DEVICES = "cpu, cuda, cuda:N"
SIZES = "a list (1000,4096) or a range START:STOP[:FACTOR] (1e3:1e7, 64:4096:2)"
def _not_empty(value: str | None) -> str | None:
    """An option given as '' is refused where it is read, whatever the command does next
    (a dry run opens no store, and would have let `--db ''` pass)."""
    if value is not None and not value.strip():
        raise typer.BadParameter("an empty value; give a SQLite path or a "
                                 "postgresql://USER@HOST/DB URL")
    return value


DbOption = Annotated[str | None, typer.Option(
    "--db", metavar="PATH", callback=_not_empty,
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
EnergyOpt = Annotated[bool, typer.Option(
    "--energy", help="Energy per call: sample each case at least 4 s where an energy counter "
                     "can be read (NVML on a GPU, RAPL on the CPU; NVML's counter moves in "
                     "100 ms steps), and measure each GPU's idle power first (1 s), for the "
                     "energy above idle. On without the flag wherever a case's samples span "
                     "4 s anyway.")]
CpuWattsOpt = Annotated[float | None, typer.Option(
    "--cpu-watts", metavar="WATTS",
    help="Declare the CPU's power where RAPL cannot be read (a VM): CPU energy per call is "
         "then WATTS × time per call, labelled declared, not measured.")]
PriceOpt = Annotated[list[str] | None, typer.Option(
    "--price", metavar="NAME=PRICE",
    help="Prices for cost per call: cpu=, gpu= (an hour of each machine), kwh= (energy), "
         "e.g. --price cpu=0.40,gpu=2.50. No defaults: without prices, no cost.")]
AxisOpt = Annotated[list[str] | None, typer.Option(
    "--axis", "-a", metavar="NAME=VALUE",
    help="Only the cases whose parameter NAME is VALUE (repeatable), e.g. -a shape=square "
         "-a data=resident for one case per size; `gpuvs list` names the parameters.")]


def build_config(workloads: tuple[str, ...], variant: list[str] | None,
                  backend: list[str] | None, device: list[str] | None,
                  dtype: list[str] | None, sizes: list[str] | None, budget: float | None,
                  timeout: float | None, criterion: str | None, cold: bool = False,
                  passes: int | None = None, axis: list[str] | None = None,
                  full_suite: bool = False, energy: bool = False,
                  cpu_watts: float | None = None, price: list[str] | None = None) -> Any:
    from gpuvs import backends
    from gpuvs import config as cfg
    from gpuvs.workloads.base import ITEMSIZE
    return cfg.build({
        "workloads": workloads, "variants": split(variant, "--variant", ", ".join(
            cfg.VARIANTS)),
        "backends": split(backend, "-b/--backend", ", ".join(backends.names())),
        "devices": split(device, "-d/--device", DEVICES),
        "dtypes": split(dtype, "--dtype", ", ".join(ITEMSIZE)),
        "sizes": cfg.parse_sizes(split(sizes, "-s/--sizes", SIZES)),
        "budget_s": budget, "timeout_s": timeout,
        "criterion": criterion, "cold": cold or None, "passes": passes,
        "axes": tuple(axis or ()), "full_suite": full_suite or None,
        "energy": energy or None, "cpu_watts": cpu_watts,
        "prices": cfg.parse_prices(price or ()),
    })


FAILED = frozenset({"crashed", "wrong_result"})


def energy_header(config: Any) -> list[str]:
    """What a run measures besides time, said before it starts: energy where asked for,
    and on which devices a counter can answer."""
    from gpuvs.backends.base import machine_has_gpu
    from gpuvs.machine import energy
    if not config.energy:
        return []
    gpus = [d for d in config.devices if d.startswith("cuda") and machine_has_gpu()]
    lines = [f"energy: each case sampled at least {energy.ENERGY_WINDOW_S:g} s where a counter "
             "can read it" + ("; each GPU's idle power measured before the first case"
                              if gpus else "")]
    for d in gpus:
        read = energy.gpu_millijoules(d)
        if isinstance(read, energy.NoEnergy):
            lines.append(f"GPU energy on {d}: {read.words}")
    if "cpu" in config.devices:
        found = energy.cpu_microjoules()
        if isinstance(found, energy.NoEnergy):
            declared = (f"; {config.cpu_watts:g} W declared (--cpu-watts), not measured"
                        if config.cpu_watts else "")
            lines.append(f"CPU energy: {found.words}{declared}")
        else:
            lines.append("CPU energy: RAPL's package and DRAM counters, the whole package's")
    return lines


def wrap_up(out: Any, run: Any, measurements: list[Any], counts: Mapping[str, int],
            json_path: Path | None, report_path: Path | None = None,
            ceilings: Sequence[Any] = (), failed_statuses: frozenset[str] = FAILED) -> int:
    """After a run's tables: its JSON and its report where asked for, and the exit code —
    1 when a case crashed or gave a wrong result (`failed_statuses`), since a run's
    numbers are then incomplete."""
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
    failed = sum(counts.get(status, 0) for status in failed_statuses)
    return EXIT_FAILED_RUN if failed else 0


def stored_ceilings(store: Any, record: Any) -> list[Any]:
    """This machine's measured ceilings, if `gpuvs ceilings` has run on it."""
    from gpuvs.analysis.ceilings import read
    from gpuvs.store.runs import find_ceilings_run
    found = find_ceilings_run(store, record.environment)
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

    from gpuvs.store.export import refuse_special
    for path in filter(None, paths):
        refuse_special(path)
        if path.is_dir():
            raise UsageError(f"{path} is a directory; give a file path")
        parent = next((p for p in path.absolute().parents if p.exists()), None)
        if parent is None or not parent.is_dir():
            raise UsageError(f"cannot write {path}: {parent} is a file, not a directory")
        if not os.access(parent, os.W_OK):
            raise UsageError(f"cannot write {path}: {parent} is not writable")


FILE_STEM_MAX = 100


def file_stem(name: str) -> str:
    """A file name made from data — a run id read from a JSON file or a shared store —
    that stays in the working directory: letters, digits, `.`, `_` and `-` only, no
    leading dot, at most FILE_STEM_MAX characters. A run id `../../x` or `/tmp/x` once
    wrote outside it and created directories on the way."""
    import re

    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).lstrip(".")[:FILE_STEM_MAX] or "run"


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


def emit_tables(tables: Sequence[Any], fmt: str, out: Any,
                data: Callable[[], Mapping[str, Any]], step_summary: bool = True) -> None:
    """Print what a command answers as `fmt` asks: its tables, in plain text or markdown,
    or with `json` the document `data` builds (`report.documents`: numbers, not the
    tables' strings). Markdown also goes to $GITHUB_STEP_SUMMARY when a GitHub Actions
    step sets it (unless the command writes its own summary: `step_summary=False`)."""
    from gpuvs.report import console as con
    from gpuvs.report.documents import dumps
    from gpuvs.report.markdown import to_markdown
    if fmt == "plain":
        con.print_tables(tables, out)
        return
    text = to_markdown(tables) if fmt == "md" else dumps(data())
    out.print(text, markup=False, highlight=False, soft_wrap=True, end="")
    if fmt == "md" and step_summary:
        append_step_summary(text)


def append_step_summary(text: str) -> None:
    """Append to $GITHUB_STEP_SUMMARY, where a GitHub Actions step sets it. The summary is
    a courtesy, never the result: a path that cannot be written (a directory, a missing
    or read-only one, a full device) costs one warning line on stderr, and the command
    ends as it would have."""
    import os

    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if not summary:
        return
    try:
        with open(summary, "a", encoding="utf-8") as f:
            f.write(text + "\n")
    except OSError as e:
        console(stderr=True).print(f"warning: cannot append to $GITHUB_STEP_SUMMARY "
                                   f"({summary}): {e.strerror or e}; the command's result "
                                   "is unchanged", markup=False, highlight=False,
                                   soft_wrap=True)
