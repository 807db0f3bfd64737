"""Progress while cases run: a bar with an estimate of the time left in a terminal or a
notebook; one flushed line per finished case anywhere else (a file, a CI log). What a
command, `gpuvs.compare`'s sweeps and `run-file` show alike."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from gpuvs.report.console import console

# advance(finished measurement, the run's time left if its runner knows it)
Advance = Callable[..., None]


@contextmanager
def progress(total: int, stderr: bool = False) -> Iterator[Advance]:
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
        ProgressColumn,
        TextColumn,
        TimeElapsedColumn,
    )
    from rich.table import Column
    from rich.text import Text

    class Left(ProgressColumn):
        """The estimate counting down between cases, which may take minutes each."""

        def render(self, task: Any) -> Text:
            end = task.fields.get("end")
            return Text("" if end is None else
                        f"about {_clock(max(end - time.monotonic(), 0.0))} left", no_wrap=True)

    left = _Pacer(total)
    # The case last: a narrow terminal cuts the line's end, and the count and the time
    # left are what must stay.
    with Progress(BarColumn(bar_width=20), MofNCompleteColumn(), TimeElapsedColumn(),
                  Left(table_column=Column(min_width=15, no_wrap=True)),
                  TextColumn("{task.description}", table_column=Column(
                      ratio=1, no_wrap=True, overflow="ellipsis")),
                  console=console(stderr=True), transient=True, expand=True) as bar:
        task = bar.add_task("measuring", total=total, end=None)

        def advance(m: Any, left_s: float | None = None) -> None:
            left_s = left(m, left_s)
            bar.update(task, advance=1, description=f"{m.case.key} → {m.status.value}",
                       end=None if left_s is None else time.monotonic() + left_s)

        yield advance


class _Pacer:
    """The time left after each finished case: the runner's (`runner.Pace`, which paces
    each pass apart) where it gives one; otherwise the pace since the first measured case
    times the cases left — the first one also paid its worker's start-up, so it sets no
    pace. Unavailable cases take no time and set none. None until there is a pace, and
    after the last case."""

    def __init__(self, total: int) -> None:
        self.total, self.done, self._measured = total, 0, 0
        self._first: float | None = None  # when the first measured case was reported

    def __call__(self, m: Any, left_s: float | None) -> float | None:
        self.done += 1
        if m.status.value == "unavailable":
            return None
        now = time.monotonic()
        self._measured += 1
        if self._first is None:
            self._first = now
        if left_s is None and self._measured > 1:
            left_s = (now - self._first) / (self._measured - 1) * (self.total - self.done)
        return left_s if self.done < self.total else None


def _case_lines(total: int, out: Any) -> Advance:
    """'[12/60] matmul/correct/torch/cpu/float32/1024 ok 1.23 ms ±0.8% (about 0:42 left)'."""
    from gpuvs import units
    absent: set[tuple[str, str]] = set()  # (backend, device) already said unavailable
    left = _Pacer(total)

    def advance(m: Any, left_s: float | None = None) -> None:
        left_s = left(m, left_s)
        if m.status.value == "unavailable":  # said once per backend and device, not per case
            where = (m.case.backend, m.case.device)
            if where not in absent:
                absent.add(where)
                out.print(f"[{left.done}/{total}] {m.case.backend} on {m.case.device} "
                          f"unavailable: {m.reason.splitlines()[0][:120]} (its other cases "
                          "are not listed)", markup=False, highlight=False)
                out.file.flush()
            return
        s = m.summary
        value = (" " + units.seconds_ci(s.median, s.ci_halfwidth_rel) if s else
                 f": {m.reason.splitlines()[0][:120]}" if m.reason else "")
        eta = "" if left_s is None else f" (about {_clock(left_s)} left)"
        out.print(f"[{left.done}/{total}] {m.case.key} {m.status.value}{value}{eta}",
                  markup=False, highlight=False)
        out.file.flush()

    return advance


def _clock(seconds: float) -> str:
    return f"{int(seconds // 60)}:{int(seconds % 60):02d}"
