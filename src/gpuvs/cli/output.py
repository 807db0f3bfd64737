"""What a command shows and writes: its tables (plain, markdown or the JSON document),
its files (`--json`, `--report`, written atomically where they may be written), the
GitHub step summary, and the exit code; and the end every command that makes a run
shares (`finish`: a job's tables by its run's view, its closing lines, its files)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpuvs.cli.app import EXIT_FAILED_RUN, usage_errors
from gpuvs.errors import UsageError
from gpuvs.report.console import console

if TYPE_CHECKING:
    from rich.console import Console

    from gpuvs.jobs.recording import Done
    from gpuvs.model import Run


def narration(fmt: str) -> Any:
    """The console for a command's own lines (its header, progress, "finished", "wrote"):
    stdout, or stderr when stdout carries machine-read tables (`--format md|json`)."""
    return console(stderr=fmt != "plain")


FAILED = frozenset({"crashed", "wrong_result"})


def wrap_up(out: Console, run: Any, measurements: list[Any], counts: Mapping[str, int],
            json_path: Path | None, report_path: Path | None = None,
            ceilings: Sequence[Any] = (), failed_statuses: frozenset[str] = FAILED) -> int:
    """After a run's tables: its JSON and its report where asked for, and the exit code —
    1 when a case crashed or gave a wrong result (`failed_statuses`), since a run's
    numbers are then incomplete."""
    db = run.store.location
    if json_path:
        from gpuvs.store.export import json_text
        with usage_errors():
            try:
                write_file(json_path, json_text(run.stored(), measurements, ceilings),
                           "JSON", db)
            except UsageError as e:  # the measurements are safe: say how to get the file
                raise UsageError(f"{e}; the run is saved: `gpuvs export {run.run_id} -o "
                                 "PATH` writes it") from None
        out.print(f"wrote {json_path}")
    if report_path:
        with usage_errors():
            try:
                write_report(report_path, run.stored(), measurements, list(ceilings), db)
            except UsageError as e:  # the measurements are safe: say how to get the page
                raise UsageError(f"{e}; the run is saved: `gpuvs report {run.run_id} -o "
                                 "PATH` writes its report") from None
        out.print(f"wrote {report_path}")
    failed = sum(counts.get(status, 0) for status in failed_statuses)
    return EXIT_FAILED_RUN if failed else 0


def check_writable(db: str | None, *outputs: tuple[Path | None, str]) -> None:
    """Before a command starts: each output given as (path, the kind written there) may be
    written (`store.output.check_output`: never over the results store at `db`, never
    over a file of another kind) and its nearest existing directory is writable, so that
    a bad path fails in one line at once, not after the whole run."""
    import os

    from gpuvs.store.output import check_output
    protected = protected_files(db)
    for path, kind in outputs:
        if path is None:
            continue
        check_output(path, kind, protected)
        parent = next((p for p in path.absolute().parents if p.exists()), None)
        if parent is None or not parent.is_dir():
            raise UsageError(f"cannot write {path}: {parent} is a file, not a directory")
        if not os.access(parent, os.W_OK):
            raise UsageError(f"cannot write {path}: {parent} is not writable")


def protected_files(db: str | None) -> tuple[Path, ...]:
    """The files of the results store `--db` names (else $GPUVS_DB, else the default):
    no output is ever written over them."""
    from gpuvs.store import files
    return files(db)


FILE_STEM_MAX = 100


def file_stem(name: str) -> str:
    """A file name made from data — a run id read from a JSON file or a shared store —
    that stays in the working directory: letters, digits, `.`, `_` and `-` only, no
    leading dot, at most FILE_STEM_MAX characters. A run id `../../x` or `/tmp/x` once
    wrote outside it and created directories on the way."""
    import re

    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).lstrip(".")[:FILE_STEM_MAX] or "run"


def write_report(path: Path, record: Run, measurements: list[Any], ceilings: list[Any],
                 db: str | None) -> None:
    """Render and write atomically; a path that cannot be written is bad usage."""
    from gpuvs.report.html import render_html
    write_file(path, render_html(record, measurements, ceilings), "report", db)


def write_file(path: Path, content: str | bytes, what: str, db: str | None) -> None:
    """Write atomically, never over the results store at `db` or a file of another kind
    (`store.output.write_atomic`); a path that cannot be written is bad usage, said in
    one line."""
    from gpuvs.store.output import write_atomic
    try:
        write_atomic(path, content, protected_files(db))
    except OSError as e:
        # mkdir under a file says only "File exists": name the file in the way instead.
        blocker = next((p for p in path.parents if p.exists()), None)
        why = (f"{blocker} is a file, not a directory" if blocker and not blocker.is_dir()
               else e.strerror or str(e))
        raise UsageError(f"cannot write the {what} to {path}: {why}") from None


def emit_tables(tables: Sequence[Any], fmt: str, out: Console,
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
    or read-only one, a full device), that is no regular file (a FIFO blocked the command
    forever; it is opened without waiting, then refused) or that holds a database (the
    results store: appended to, it would be damaged) costs one warning line on stderr,
    and the command ends as it would have."""
    import os

    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if not summary:
        return
    try:
        if os.path.exists(summary):  # said by name: opening a FIFO says "no such device"
            _summary_file(os.stat(summary).st_mode, summary)
        fd = os.open(summary, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK, 0o644)
        with open(fd, "a", encoding="utf-8", closefd=True) as f:
            _summary_file(os.fstat(fd).st_mode, summary)  # what was opened, after all
            f.write(text + "\n")
    except (OSError, UsageError) as e:
        why = e.strerror or str(e) if isinstance(e, OSError) else str(e)
        console(stderr=True).print(f"warning: cannot append to $GITHUB_STEP_SUMMARY "
                                   f"({summary}): {why}; the command's result is unchanged",
                                   markup=False, highlight=False, soft_wrap=True)


def _summary_file(mode: int, path: str) -> None:
    """UsageError unless the file of `mode` at `path` is a regular file other than a
    database: a FIFO, a device or a socket, or a SQLite file is no step summary."""
    import stat

    from gpuvs.store.output import HEAD, kind_of
    if not stat.S_ISREG(mode):
        kind = ("a FIFO" if stat.S_ISFIFO(mode) else "a device" if stat.S_ISCHR(mode)
                or stat.S_ISBLK(mode) else "a socket" if stat.S_ISSOCK(mode) else "no file")
        raise UsageError(f"it is {kind}, not a regular file")
    with open(path, "rb") as f:
        head = f.read(HEAD)
    if kind_of(head).startswith("a SQLite"):
        raise UsageError(f"it holds {kind_of(head)}, not a step summary")


def said(text: str, fmt: str) -> str:
    """A command's own line as `fmt` prints it: with `md` (a pull request's comment, a
    step summary) the names and values from data in it are escaped (`markdown.line`)."""
    from gpuvs.report.markdown import line
    return line(text) if fmt == "md" else text


def warn_thinned(source: str, measurements: Sequence[Any]) -> None:
    """One line on stderr where cases of a run read from `source` held more samples than
    gpuvs reads (`store.export.thinned`): their intervals are wider than all the samples
    would give."""
    from gpuvs.model import Caveat
    from gpuvs.store.export import MAX_SAMPLES, SAMPLES_STORED
    thinned = [m for m in measurements if Caveat.THINNED in m.caveats]
    if thinned:
        most = max(m.counters.get(SAMPLES_STORED, 0) for m in thinned)
        console(stderr=True).print(
            f"warning: {len(thinned)} case(s) of {source} held up to {most:,.0f} samples; "
            f"an evenly spaced {MAX_SAMPLES:,} of each were read (caveat thinned: their "
            "intervals are wider than all the samples would give)",
            markup=False, highlight=False, soft_wrap=True)


def finish(done: Done, command: str, fmt: str, closing: Sequence[str] = (),
           json_path: Path | None = None, report_path: Path | None = None,
           failed_statuses: frozenset[str] = FAILED) -> int:
    """After a job (`jobs.recording.Done`): its tables as its run's kind shows them
    (`report.views`), the job's notes and the command's `closing` lines, the files asked
    for, and the exit code."""
    from gpuvs.report import views
    from gpuvs.report.documents import cases_document
    ms, ceilings, record = list(done.measurements), list(done.ceilings), done.record
    emit_tables(views.of(record.kind).tables(record, ms, ceilings), fmt, console(),
                lambda: cases_document(command, ms, ceilings, record))
    out = narration(fmt)
    for line in (*done.notes, *closing):
        out.print(line, markup=False, highlight=False)
    return wrap_up(out, done.run, ms, done.counts, json_path, report_path, ceilings,
                   failed_statuses)


def listening(out: Console, header: Callable[[str], Sequence[str]] = lambda run_id: ()
              ) -> Any:
    """How a command hears its job (`jobs.recording.Listener`): the `header` lines once the
    run has its id, a progress bar (a line per case outside a terminal) on `out`'s stream,
    and each line the job says."""
    from gpuvs.jobs.recording import Listener
    from gpuvs.report.progress import progress

    def say(line: str) -> None:
        out.print(line, markup=False, highlight=False)

    def started(run_id: str) -> None:
        for line in header(run_id):
            say(line)

    return Listener(started, lambda n: progress(n, out.stderr), say)
