"""`gpuvs run-file` as a function: the user's function timed on each device in worker
processes of its own (`yours.file_runner`), each case saved the moment it arrives."""

from __future__ import annotations

from collections import Counter
from typing import Any

from gpuvs.execute.wire import RunFile
from gpuvs.jobs.recording import QUIET, Done, Job, Listener, Shown, record
from gpuvs.model import Measurement, RunKind
from gpuvs.store.runs import RunHandle


def run_file(store: Any, request: RunFile, timeout_s: float, *,
             listener: Listener = QUIET) -> Done:
    """The request's cases into a new run, written at its first case (a file that does
    not load leaves none behind); the notes say why each GPU case came out as it did."""
    from gpuvs.yours.file_runner import run
    from gpuvs.yours.run_file import case_count
    explanation: list[str] = []

    def execute(recording: RunHandle, shown: Shown) -> Counter[str]:
        with shown(case_count(request)) as advance:
            def kept(m: Measurement) -> None:  # saved the moment it arrives, then shown
                recording.record(m)
                advance(m)

            outcome = run(request, timeout_s, kept)
        explanation.extend(outcome.explanation)
        return Counter(m.status.value for m in outcome.comparison.measurements)

    return record(store, Job(
        RunKind.YOURS,
        {"function": request.target.rpartition("::")[2], "target": request.target,
         "devices": list(request.devices), "sizes": list(request.sizes)},
        execute, f"`gpuvs run-file {request.target}` measures it again.", lazily=True),
        listener, notes=lambda: explanation)
