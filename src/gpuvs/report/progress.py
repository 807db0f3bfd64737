"""Progress while cases run: a bar with an estimate of the time left in a terminal or a
notebook; one flushed line per finished case anywhere else (a file, a CI log). What a
command, `gpuvs.compare`'s sweeps and `run-file` show alike."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from gpuvs.report.console import console


@contextmanager
def progress(total: int, stderr: bool = False) -> Iterator[Callable[[Any], None]]:
    """What a long run shows while it runs. In a terminal: a bar with the time elapsed
    and an estimate of the time left. Anywhere else (a file, a CI log): one line per
    finished case, flushed at once, with the same estimate — on stdout, or on stderr
    when stdout carries machine-read tables (`--format md|json`)."""
    out = console(stderr=stderr)
    if not out.is_terminal:
        yield _case_lines(total, out)
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), TextColumn("left"), TimeRemainingColumn(),
                  console=console(stderr=True), transient=True) as bar:
        task = bar.add_task("measuring", total=total)

        def advance(m: Any) -> None:
            bar.update(task, advance=1, description=f"{m.case.key} → {m.status.value}")

        yield advance


def _case_lines(total: int, out: Any) -> Callable[[Any], None]:
    """'[12/60] matmul/correct/torch/cpu/float32/1024 ok 1.23 ms ±0.8% (about 0:42 left)'.

    The time left is the pace since the first measured case times the cases left: the
    first one also paid its worker's start-up and, with passes, the earlier passes (a
    case is reported when its last pass ends), so it sets no pace."""
    import time

    from gpuvs import units

    absent: set[tuple[str, str]] = set()  # (backend, device) already said unavailable
    done, measured = [0], [0]
    first: list[float] = []  # when the first measured case was reported

    def advance(m: Any) -> None:
        done[0] += 1
        if m.status.value == "unavailable":  # said once per backend and device, not per case
            where = (m.case.backend, m.case.device)
            if where not in absent:
                absent.add(where)
                out.print(f"[{done[0]}/{total}] {m.case.backend} on {m.case.device} "
                          f"unavailable: {m.reason.splitlines()[0][:120]} (its other cases "
                          "are not listed)", markup=False, highlight=False)
                out.file.flush()
            return
        now = time.monotonic()
        measured[0] += 1
        first[:] = first or [now]
        s = m.summary
        value = (f" {units.seconds(s.median)} ±{100 * s.ci_halfwidth_rel:.1f}%" if s else
                 f": {m.reason.splitlines()[0][:120]}" if m.reason else "")
        eta = ""
        if measured[0] > 1 and done[0] < total:
            left = (now - first[0]) / (measured[0] - 1) * (total - done[0])
            eta = f" (about {int(left // 60)}:{int(left % 60):02d} left)"
        out.print(f"[{done[0]}/{total}] {m.case.key} {m.status.value}{value}{eta}",
                  markup=False, highlight=False)
        out.file.flush()

    return advance
