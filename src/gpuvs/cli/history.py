"""`gpuvs runs`, `gpuvs compare` and `gpuvs check`: answers across runs, commits and
machines. Runs are named by id, `latest`, or the path of a JSON export
(`gpuvs export RUN -f json`), so runs made on two machines compare without a shared store.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from gpuvs import units
from gpuvs.cli.app import EXIT_FAILED_RUN, app, usage_errors
from gpuvs.cli.options import DbOption, FormatOpt, check_format, is_export, open_store
from gpuvs.cli.output import (
    append_step_summary,
    check_writable,
    emit_tables,
    said,
    warn_thinned,
    write_file,
)
from gpuvs.errors import GpuvsError, UsageError
from gpuvs.report.console import console
from gpuvs.store.output import HTML

if TYPE_CHECKING:
    from gpuvs.analysis.regression import Gate
    from gpuvs.store.sql import SqlStore

ThresholdOpt = Annotated[str, typer.Option(
    "--threshold", metavar="PERCENT",
    help="How much slower or faster counts as a change: 5% (or 0.05).")]
ForceOpt = Annotated[bool, typer.Option(
    "--force", help="Compare anyway: cases whose workload versions differ, and (check) a "
                    "baseline from another set-up, as --allow-env-change.")]
RECENT_RUNS = 500
_RELATIVE = re.compile(r"^(\d+)([dhw])$")


def _store_for(specs: Sequence[str], db: str | None) -> SqlStore | None:
    """The store the runs `specs` name are read from; None where every one is a JSON
    export (files carried off two machines need no store, and none is made)."""
    return None if all(is_export(spec) for spec in specs) else open_store(db, reading=True)


def load(spec: str, store: SqlStore | None) -> tuple[Any, list[Any]]:
    """(run, measurements) from a run id, 'latest', or a JSON export's path."""
    if is_export(spec):
        from gpuvs.store.export import load_json
        run, ms, _ = load_json(Path(spec))
    else:
        if store is None:
            raise UsageError(f"no run {spec!r}: give a run id with its store (--db), or a "
                             "JSON export's path")
        run_id = (store.latest_run_id() or spec) if spec == "latest" else spec
        run = store.get_run(run_id)
        ms = store.measurements(run.run_id)
    warn_thinned(spec, ms)
    return run, ms


def _threshold(text: str) -> float:
    from gpuvs.analysis.regression import parse_threshold
    try:
        return parse_threshold(text)
    except ValueError:
        raise UsageError(f"--threshold/--fail-above {text!r} must be a positive percentage "
                         "(5%) or fraction (0.05)") from None


def _since(text: str | None) -> datetime | None:
    if text is None:
        return None
    found = _RELATIVE.match(text)
    if found:
        n, unit = int(found.group(1)), found.group(2)
        days = {"d": n, "h": n / 24, "w": 7 * n}[unit]
        try:
            return datetime.now(timezone.utc) - timedelta(days=days)
        except OverflowError:  # past timedelta's 999,999,999 days, or before year 1
            raise UsageError(f"--since {text!r} reaches back before the year 1; give a "
                             "span such as 7d, 12h, 2w, or a date") from None
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise UsageError(f"--since {text!r} is not a date; give 2026-11-20, "
                         "2026-11-20T08:00 or a span such as 7d, 12h, 2w") from None
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)


def _started(run: Any) -> datetime:
    when = datetime.strptime(run.started_at, "%Y-%m-%dT%H:%M:%S%z")
    return when.astimezone(timezone.utc)


@app.command()
def runs(
    workload: Annotated[str | None, typer.Option(
        "--workload", "-w", metavar="WORKLOAD", help="Only runs that measured this workload.")
    ] = None,
    machine: Annotated[str | None, typer.Option(
        "--machine", metavar="LABEL",
        help="Only runs made on this machine label ($GPUVS_MACHINE or the "
                              "host name when the run was made).")] = None,
    gpu: Annotated[str | None, typer.Option(
        "--gpu", metavar="TEXT", help="Only runs on a GPU whose name holds TEXT (H100, H200…).")
    ] = None,
    since: Annotated[str | None, typer.Option(
        "--since", metavar="WHEN", help="Only runs started since a date (2026-11-20) or for a span "
                                        "(7d, 12h, 2w).")] = None,
    limit: Annotated[int, typer.Option("--limit", metavar="N", help="At most N runs.")] = 20,
    db: DbOption = None, fmt: FormatOpt = "plain",
) -> None:
    """List stored runs, most recent first: id, kind, when, machine, GPU, git commit, and
    cases ok and failed."""
    from gpuvs.report.documents import runs_document
    from gpuvs.report.history import gpus_of, machine_of, runs_table
    with usage_errors():
        check_format(fmt)
        if limit < 1:
            raise UsageError(f"--limit must be a whole number from 1; got {limit}")
        after = _since(since)
        store = open_store(db, reading=True)
        found = []
        for run in store.runs(RECENT_RUNS):
            if (machine and machine_of(run) != machine
                    or gpu and gpu.lower() not in gpus_of(run).lower()
                    or after and _started(run) < after):
                continue
            ms = store.measurements(run.run_id)
            if workload and not any(m.case.workload == workload for m in ms):
                continue
            found.append((run, ms))
            if len(found) == limit:
                break
    if not found and fmt != "json":
        filtered = machine or gpu or after or workload
        console().print(f"no stored run in {store.path}"
                        + (" matches the filters given" if filtered else ""),
                        markup=False, highlight=False)
        return
    emit_tables([runs_table(found)], fmt, console(), lambda: runs_document(found))


def _clock(ms: list[Any]) -> str:
    """The SM clocks a run's GPU cases ran at, where NVML read them."""
    clocks = sorted({round(m.counters["sm_clock_mhz"]) for m in ms
                     if "sm_clock_mhz" in m.counters})
    return f"{clocks[0]}–{clocks[-1]} MHz" if len(clocks) > 1 else (
        f"{clocks[0]} MHz" if clocks else "")


@app.command()
def compare(
    runs_: Annotated[list[str], typer.Argument(
        metavar="A B [C …]", help="Runs: ids, 'latest', or JSON exports' paths. Each after "
                                  "the first is compared with the first.")],
    threshold: ThresholdOpt = "5%", force: ForceOpt = False,
    report_path: Annotated[Path | None, typer.Option(
        "--report", metavar="PATH", help="Also write the comparison as an HTML page.")
    ] = None,
    db: DbOption = None, fmt: FormatOpt = "plain",
) -> None:
    """Compare runs case by case: environments first, then each case's ratio with a 95 %
    CI, a rank test, and a verdict (faster, slower, same, ambiguous), and a geometric mean
    per workload. Runs from two machines compare by design (H100 against H200)."""
    from gpuvs.analysis import regression
    with usage_errors():
        check_format(fmt)
        check_writable(db, (report_path, HTML))
        if len(runs_) < 2:
            raise UsageError("compare needs two runs or more: gpuvs compare A B [C …]")
        t = _threshold(threshold)
        store = _store_for(runs_, db)
        loaded = [load(spec, store) for spec in runs_]
        base_run, base_ms = loaded[0]
        results = []
        for run, ms in loaded[1:]:
            probes = regression.machine(base_ms, ms, t)
            changes, unmatched = regression.compare(base_ms, ms, t, force, probes=probes)
            refused = [u for u in unmatched if u.why.startswith("workload version")]
            if refused and not force:
                raise UsageError(f"{len(refused)} case(s) ran at other workload versions "
                                 f"(e.g. {refused[0].key}: {refused[0].why}); their numbers "
                                 "measure different code — pass --force to compare anyway")
            results.append((run, ms, probes, changes, unmatched))
        if report_path is not None:
            _page(report_path, base_run, base_ms, results, t, db)
    _print(base_run, base_ms, results, t, force, fmt)


def _print(base_run: Any, base_ms: list[Any], results: list[Any], t: float, force: bool,
           fmt: str) -> None:
    from gpuvs.analysis.regression import geometric_means
    from gpuvs.report.documents import compare_document
    from gpuvs.report.history import (
        change_table,
        code_changed_lines,
        environment_diff,
        means_table,
        one_process_lines,
        unmatched_lines,
        verdict_counts,
    )

    out = console()
    compared = [(run, probes, changes, unmatched, geometric_means(changes),
                 (_clock(base_ms), _clock(ms)))
                for run, ms, probes, changes, unmatched in results]
    if fmt == "json":
        emit_tables([], fmt, out, lambda: compare_document(base_run, compared, t))
        return
    for (run, probes, changes, unmatched, means, clocks), (_, ms, *_) in zip(
            compared, results, strict=True):
        names = (base_run.run_id, run.run_id)
        lines = (environment_diff(base_run, run, clocks) + code_changed_lines(changes)
                 + one_process_lines(base_ms, ms)
                 + unmatched_lines(unmatched, force))
        said_first, first = _calibration(base_ms, ms, probes, names)
        for line in (*lines, *said_first):
            out.print(said(line, fmt), markup=False, highlight=False)
        emit_tables([*first, change_table(changes, t, names), means_table(means)], fmt, out,
                    dict)
        out.print(said(f"B ({run.run_id}) against A ({base_run.run_id}): "
                       f"{verdict_counts(changes)}", fmt), markup=False, highlight=False)


def _calibration(a_ms: list[Any], b_ms: list[Any], probes: list[Any],
                 names: tuple[str, str]) -> tuple[list[str], list[Any]]:
    """(lines, tables) shown before any case: the two runs' calibrations side by side,
    what of a change the machine explains; or the line that says why there are none."""
    from gpuvs.report.calibration import missing_line, side_by_side
    missing = missing_line(a_ms, b_ms)
    if missing:
        return [missing], []
    return [], [side_by_side(probes, names, a_ms, b_ms)] if probes else []


def _page(path: Path, base_run: Any, base_ms: list[Any], results: list[Any], t: float,
          db: str | None) -> None:
    from gpuvs.report.pages import render_compare
    write_file(path, render_compare(base_run, base_ms, results, t), "comparison", db)


AllowFailedOpt = Annotated[bool, typer.Option(
    "--allow-failed", help="Do not fail on cases of the judged run that did not end ok "
                           "(crashed, timeout, out of memory, wrong result, no longer "
                           "measured) or on a run that stopped early; they are still listed.")]
AllowEnvOpt = Annotated[bool, typer.Option(
    "--allow-env-change", help="Judge against a baseline from another set-up (another GPU, "
                               "driver, BLAS threads, torch…) instead of refusing it; the "
                               "output says what changed.")]
ACCEPTED = ("judged anyway (--allow-env-change): a verdict may be the set-up's change, not "
            "the code's")


@app.command()
def check(
    baseline: Annotated[str, typer.Option(
        "--baseline", metavar="RUN|latest",
        help="The run to compare against: an id, a JSON export, or 'latest' (the newest "
             "finished run before --run).")],
    run_spec: Annotated[str, typer.Option(
        "--run", metavar="RUN|latest", help="The run to judge; default the newest.")
    ] = "latest",
    fail_above: Annotated[str, typer.Option(
        "--fail-above", metavar="PERCENT",
        help="Fail (exit 1) when a case is slower by more than this, its whole CI above "
             "it.")] = "5%",
    force: ForceOpt = False, allow_failed: AllowFailedOpt = False,
    allow_env_change: AllowEnvOpt = False, db: DbOption = None, fmt: FormatOpt = "plain",
) -> None:
    """The CI gate, failing closed. Exit 1 when a case got slower beyond --fail-above with
    its whole CI above it; when a case cannot be judged (measured under contention in
    either run, or slower beyond --fail-above by its ratio with its CI above 1 but reaching
    below it); or (unless --allow-failed) when a case of the judged run did not end ok or
    the run stopped early. The cases are judged together: each CI is widened so that all
    hold at 95 % (Bonferroni), and a case whose processes spread wider than --fail-above,
    with no change the runs can see, passes and is named as not resolved; a case timed in
    one process (a call too long to sample in two) is judged with the spread its run's
    cases of its backend showed across processes; a post's timing replayed as written is
    shown beside the rest and never gated. Exit 2 when
    nothing can be judged: no case in common, or a baseline from another set-up (unless
    --allow-env-change); else 0. Your own functions (run-file, gpuvs.compare, the pytest
    fixture) are judged at a new version of their code, which the output says. What
    differs between the environments comes first; the verdict line also goes to
    $GITHUB_STEP_SUMMARY."""
    from gpuvs.analysis import regression
    from gpuvs.machine.env import setup_changes
    with usage_errors(), _gate_errors(fmt):
        check_format(fmt)
        t = _threshold(fail_above)
        store = _store_for((run_spec, baseline), db)
        run, ms = load(run_spec, store)
        base, base_ms = (_previous(store, run) if baseline == "latest" and store is not None
                         else load(baseline, store))
        changed = setup_changes(base.environment.facts, run.environment.facts)
        if changed and not (allow_env_change or force):
            raise UsageError(f"baseline {base.run_id} ran on another set-up "
                             f"({'; '.join(changed)}): its numbers are another set-up's; "
                             "compare with `gpuvs compare`, or pass --allow-env-change")
        unfinished = ("" if run.status == "finished" else
                      f"run {run.run_id} is {run.status}: the cases it never reached were "
                      "not checked")
        gate = regression.gate(base_ms, ms, t, force, allow_failed, unfinished)
        if gate.verdict == regression.ERROR:
            raise UsageError(gate.exit_reason)
    raise typer.Exit(_judged((base, base_ms), (run, ms), gate, fmt, (force, allow_failed)))


@contextmanager
def _gate_errors(fmt: str) -> Iterator[None]:
    """A gate that cannot judge still answers a script: with --format json, a document
    whose verdict is "error"; and the step summary says so. Then the one error line."""
    try:
        yield
    except GpuvsError as e:
        from gpuvs.report.documents import error_document
        from gpuvs.report.markdown import line
        reason = str(e)
        if fmt == "json":
            emit_tables([], fmt, console(), lambda: error_document("check", reason))
        append_step_summary(f"gpuvs check: **error**: {line(reason)}")
        raise


def _previous(store: SqlStore, run: Any) -> tuple[Any, list[Any]]:
    """The newest finished run before `run`."""
    seen = False
    for record in store.runs(RECENT_RUNS):
        if record.run_id == run.run_id:
            seen = True
        elif seen and record.status == "finished":
            return record, store.measurements(record.run_id)
    raise UsageError(f"no finished run before {run.run_id} to use as the baseline; name one "
                     "with --baseline RUN")


def _judged(base: tuple[Any, list[Any]], judged: tuple[Any, list[Any]], gate: Any, fmt: str,
            allowed: tuple[bool, bool]) -> int:
    """Print the gate's decision — the environments first, what was not compared, the
    table, the verdict — append the verdict to the step summary, return the exit code."""
    from gpuvs.report.documents import check_document
    from gpuvs.report.history import (
        change_table,
        code_changed_lines,
        environment_diff,
        not_measured_lines,
        one_process_lines,
        unmatched_lines,
        verdict_counts,
    )
    from gpuvs.report.markdown import line as md_line
    from gpuvs.report.markdown import to_markdown
    (a, a_ms), (b, b_ms) = base, judged
    out, clocks = console(), (_clock(a_ms), _clock(b_ms))
    names = (a.run_id, b.run_id)
    said_first, first = _calibration(a_ms, b_ms, list(gate.machine), names)
    tables = [*first, change_table(gate.changes, gate.threshold, names,
                                   together=len(gate.changes))]
    verdict = (f"FAILED: {gate.exit_reason}" if gate.verdict == "fail"
               else f"passed: {gate.exit_reason}")
    code = EXIT_FAILED_RUN if gate.verdict == "fail" else 0
    if fmt == "json":
        emit_tables(tables, fmt, out, lambda: check_document(a, b, gate, clocks))
        append_step_summary(md_line(f"gpuvs check, {b.run_id} against {a.run_id}: "
                                    f"{verdict}"))
        return code
    lines = [*environment_diff(a, b, clocks, across=ACCEPTED), *code_changed_lines(gate.changes),
             *one_process_lines(a_ms, b_ms),
             *unmatched_lines(gate.unmatched, allowed[0]),
             *not_measured_lines(gate, allowed[1]), *said_first]
    for line in lines:
        out.print(said(line, fmt), markup=False, highlight=False)
    emit_tables(tables, fmt, out, dict, step_summary=False)
    tail = [f"{b.run_id} against {a.run_id}: {verdict_counts(gate.changes)}"]
    if gate.unresolved:
        tail.append(unresolved_line(gate))
    tail.append(verdict)
    for line in tail:
        out.print(said(line, fmt), markup=False, highlight=False)
    append_step_summary("\n\n".join([*map(md_line, lines), to_markdown(tables),
                                     *map(md_line, tail)]) if fmt == "md"
                        else md_line(f"gpuvs check, {b.run_id} against {a.run_id}: "
                                     f"{verdict}"))
    return code


# The unresolved cases a verdict's line names; the JSON's `unresolved` lists every one.
UNRESOLVED_NAMED = 5


def unresolved_line(gate: Gate) -> str:
    """The cases a check passes though it cannot resolve its threshold in them, in one
    line a CI log keeps readable: how many, how wide the widest interval reaches either
    side of its figure (wider than the figure itself is '±>100 %', as a table says it),
    which of them are slower by their ratio only because their processes fell in two
    groups, and the first few by name."""
    widest = max(max(c.high / c.ratio, c.ratio / c.low) - 1 for c in gate.unresolved)
    spread = (f"±{100 * widest:.0f} %" if widest <= units.CI_REL_SHOWN_MAX
              else f"±>{100 * units.CI_REL_SHOWN_MAX:.0f} %")
    keys = [c.key for c in gate.unresolved]
    named = ", ".join(keys[:UNRESOLVED_NAMED]) + (
        f" and {len(keys) - UNRESOLVED_NAMED} more (the JSON's `unresolved` lists them)"
        if len(keys) > UNRESOLVED_NAMED else "")
    mixed = sum(1 for c in gate.unresolved if c.low > 1)
    why = [f"{len(keys) - mixed} with no change the runs can see"] if len(keys) > mixed else []
    why += [f"{mixed} slower by their ratio, but with processes in two groups whose mix "
            "moves the median (docs/across-machines.md)"] if mixed else []
    return (f"{len(keys)} case(s) not resolved at ±{100 * gate.threshold:g} %, not failing: "
            f"their intervals are wider than that (up to {spread}): {'; '.join(why)}; a "
            "change that small would pass there unseen, and more processes (--passes) "
            f"narrow them: {named}")
