"""`gpuvs run-file` as a function: the user's function (or several implementations of it)
timed on each device in worker processes of its own (`yours.file_runner`), each case saved
the moment it arrives."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from gpuvs.execute.wire import RunFile
from gpuvs.jobs.recording import QUIET, Done, Job, Listener, Shown, record
from gpuvs.model import Measurement, RunKind
from gpuvs.store.runs import RunHandle

if TYPE_CHECKING:
    from gpuvs.store.sql import SqlStore


def run_file(store: SqlStore, request: RunFile, timeout_s: float, *, passes: int = 1,
             listener: Listener = QUIET) -> Done:
    """The request's cases into a new run, written at its first case (a file that does
    not load leaves none behind), sampled in `passes` processes of their own, after the
    machine's calibration (`calibrate`); the notes say why each GPU case came out as it
    did."""
    from gpuvs.yours.file_runner import run
    from gpuvs.yours.run_file import case_count
    explanation: list[str] = []

    def execute(recording: RunHandle, shown: Shown) -> Counter[str]:
        heard: set[str] = set()
        probes: list[Measurement] = []  # written with the first case: see `calibrate`
        with shown(case_count(request)) as advance:
            def kept(m: Measurement) -> None:  # saved the moment it arrives, then shown
                while probes:
                    recording.record(probes.pop(0))
                recording.record(m)
                if m.case.key not in heard:  # a later process adds to it: shown once
                    heard.add(m.case.key)
                    advance(m)

            outcome = run(request, timeout_s, kept, passes,
                          ready=lambda: probes.extend(calibrate(request, timeout_s, passes)))
        explanation.extend(outcome.explanation)
        return Counter(m.status.value for m in outcome.comparison.measurements)

    return record(store, Job(
        RunKind.YOURS, _config(request), execute,
        f"`gpuvs run-file {' '.join(request.targets)}` measures it again.", lazily=True),
        listener, notes=lambda: explanation)


def calibrate(request: RunFile, timeout_s: float, passes: int) -> list[Measurement]:
    """The machine's calibration for run-file (`workloads.calibration`), as `gpuvs run`
    measures it first, so that `gpuvs compare` and `check` can set two machines side by
    side and tell what of a change the machine explains. The user's code is named only
    once a worker has loaded it, so the probes are torch's on each device asked for (and
    NumPy's on the CPU): the frameworks run-file's arguments are most often in. They run
    in a pool of their own (`runner.execute`), in as many processes as the cases, once
    every run-file worker has loaded the file and while each waits for its turn; they
    are written to the run with its first case, so that a file whose inputs cannot be
    built leaves no run behind."""
    from gpuvs.config import RunConfig
    from gpuvs.execute.runner import Kept, execute
    from gpuvs.workloads.calibration import probes_for

    on = [("torch", d) for d in request.devices]
    if "cpu" in request.devices:
        on.append(("numpy", "cpu"))
    kept = Kept()
    execute(kept, probes_for(on), RunConfig(timeout_s=timeout_s, passes=passes).validate())
    return kept.measurements


def _config(request: RunFile) -> dict[str, Any]:
    """What the run records: its function and target; with several, each of them too."""
    names = [t.rpartition("::")[2] for t in request.targets]
    several = ({"functions": names, "targets": list(request.targets)} if len(names) > 1
               else {})
    return {"function": ", ".join(names), "target": " ".join(request.targets),
            "devices": list(request.devices), "sizes": list(request.sizes)} | several
