"""The parent: start the ranks through torchrun, keep the clock, turn failures into statuses.

The ranks run under torchrun (`python -m gpuvs.distributed.agent …`: torchrun's agent,
`--standalone --nproc-per-node N`, which dies with this process) as `-m
gpuvs.distributed.rank_main SPEC`, with this interpreter and this environment (every NCCL_*
variable included: a host that turns NVLink multicast off with NCCL_NVLS_ENABLE=0 keeps it
off in the ranks), with this gpuvs first on PYTHONPATH. One launch takes every case:
scaling runs each rank count N on ranks 0…N−1 of it while the others wait, round after
round, so that N = 1 and N = 2 are measured seconds apart in the same processes.

Rank 0 saves each case itself and reports `Ready`, then `Started` before each step of a
case and `Measured` once it is saved (`execute.wire`); the parent only watches those
events, and is the watchdog: ranks that are not ready within the set-up allowance
(importing torch, the rendezvous, the process groups), or a step with no next event
within the case timeout,
have torchrun and every rank killed, and the case in that step is recorded `timeout`. A
rank that dies makes torchrun stop the others, and the case in flight is recorded
`crashed` (or `oom`) with the dead rank and its error. Either way the ranks are started
again for the cases left, so one bad case costs one case. On CUDA the collectives' graph
replays come once every case is saved (`Started` with `replay` before each, `Measured`
with `resaved` once it is saved again): a failure then costs no case, and the command's
closing lines say what it cost.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from gpuvs.distributed.rank_main import ERROR_PREFIX
from gpuvs.distributed.spec import Spec
from gpuvs.execute.supervisor import Child, signal_name
from gpuvs.execute.wire import Measured, Ready, Started
from gpuvs.model import Case, Measurement, Status

STDERR_TAIL_LINES = 200
_ROOT_CAUSE = re.compile(r"Root Cause.*?rank\s*:\s*(\d+).*?exitcode\s*:\s*(-?\d+)", re.S)


@dataclass
class _Launch:
    """What one torchrun invocation did: its events as they came, and how it ended."""

    ready: dict[str, Any] = field(default_factory=dict)
    in_flight: str = ""
    done: set[str] = field(default_factory=set)
    timed_out: bool = False
    returncode: int = 0
    stderr: tuple[str, ...] = ()


def torchrun_command(spec_path: str, nproc: int, folder: str) -> list[str]:
    """torchrun with this interpreter, so the ranks see the same packages and gpuvs, as
    the agent that dies with this process (`distributed.agent`), its logs in the
    launch's `folder` (torchrun's default leaves a folder in $TMPDIR at every start)."""
    return [sys.executable, "-m", "gpuvs.distributed.agent", str(os.getpid()), folder,
            "--standalone", f"--nproc-per-node={nproc}", "--monitor-interval=0.1",
            f"--log-dir={Path(folder, 'torchrun')}", "-m", "gpuvs.distributed.rank_main",
            spec_path]


def rank_environment() -> dict[str, str]:
    """This process's environment (NCCL_* included), with the directory this gpuvs was
    imported from first on PYTHONPATH: the ranks run the same gpuvs, installed or not."""
    source = str(Path(__file__).resolve().parents[2])  # the directory holding gpuvs/
    path = os.pathsep.join(p for p in (source, os.environ.get("PYTHONPATH", "")) if p)
    return os.environ | {"PYTHONPATH": path, "PYTHONUNBUFFERED": "1"}


def execute(spec: Spec, recording: Any, on_result: Callable[[Measurement], None]
            ) -> dict[str, Any]:
    """Run every case of `spec` into the run being recorded (rank 0 saves the cases it
    finishes; the parent, those it ended), launching the ranks again after a failure for
    the cases left. Returns what rank 0 reported when ready (versions, the ranks' NCCL
    variables)."""
    pending = list(spec.cases)
    info: dict[str, Any] = {}
    while pending:
        run = _launch(replace(spec, cases=tuple(pending)), on_result)
        info = info or run.ready
        pending = [c for c in pending if c.key not in run.done]
        if not pending:
            if run.timed_out or run.returncode != 0:  # after every case was saved
                info["after_saved"] = _after_saved(run, spec)
            break
        if run.ready:
            lost = [next((c for c in pending if c.key == run.in_flight), pending[0])]
        else:  # the ranks never came up: starting them again would fail the same way
            lost = pending
        for case in lost:
            m = _failure(case, run, spec)
            recording.record(m)
            on_result(m)
        pending = [c for c in pending if c not in lost]
    return info


def _launch(spec: Spec, on_result: Callable[[Measurement], None]) -> _Launch:
    """One torchrun, supervised (`execute.supervisor.Child`): rank 0's events followed
    from the status file it appends to, the watchdog's deadline, and torchrun with every
    rank killed when it passes."""
    run = _Launch()
    with tempfile.TemporaryDirectory(prefix="gpuvs-dist-") as tmp:
        spec_path, status_path = Path(tmp, "spec.json"), Path(tmp, "status.jsonl")
        status_path.touch()
        spec = replace(spec, status_path=str(status_path))
        spec_path.write_text(spec.to_json())
        child = Child(torchrun_command(str(spec_path), spec.setup.nproc, tmp), channel="file",
                      env=rank_environment(), events_path=status_path,
                      tail_lines=STDERR_TAIL_LINES)
        try:
            _watch(child, spec, run, on_result)
        finally:
            if child.proc.poll() is None:
                child.kill()
        run.timed_out = child.killed_by_us
        run.returncode = child.proc.wait()
        run.stderr = tuple(child.tail)
    return run


def _watch(child: Child, spec: Spec, run: _Launch,
           on_result: Callable[[Measurement], None]) -> None:
    """Follow rank 0's events until torchrun ends; the child is killed when the set-up or
    a case overstays. Until `Ready` the set-up allowance runs; after it, each event
    restarts the case's clock (a step of a case lies between its `Started` and the next
    event). A `Measured` case is saved already, by rank 0 (`resaved`: again, with its
    graph replays)."""
    deadline = time.monotonic() + spec.setup_timeout_s
    while (event := child.event(deadline)) is not None:
        if isinstance(event, Ready):
            run.ready = dict(event.info)
        elif isinstance(event, Started):
            run.in_flight = event.case.key
        elif isinstance(event, Measured):
            run.in_flight = ""
            if not event.resaved:  # saved again with its graph replays: counted before
                run.done.add(event.measurement.case.key)
                on_result(event.measurement)
        deadline = time.monotonic() + spec.timeout_s


def _failure(case: Case, run: _Launch, spec: Spec) -> Measurement:
    """The status and reason of a case whose ranks did not finish it: `timeout` when the
    watchdog killed them; else the status the dead rank's own policy decided
    (`execute.policy`, OOM only on its evidence), `crashed` where none said."""
    when = "" if run.ready else " before the ranks were ready"
    if run.timed_out and not run.ready:
        return Measurement(case, Status.TIMEOUT,
                           reason=f"the {spec.setup.nproc} ranks were not ready within "
                                  f"{spec.setup_timeout_s:g} s (set-up: importing torch, the "
                                  "rendezvous, the process groups); torchrun and every rank "
                                  "were killed")
    if run.timed_out:
        return Measurement(case, Status.TIMEOUT,
                           reason=f"no result within {spec.timeout_s:g} s; torchrun and "
                                  "every rank were killed")
    status, reason = crash_reason(list(run.stderr), spec.setup.nproc, run.returncode)
    return Measurement(case, status, reason=reason + when)


def _after_saved(run: _Launch, spec: Spec) -> str:
    """What went wrong once every case was saved (a graph replay, the ranks' exit): the
    cases stand as saved, and the user is told why some lack what came after."""
    why = (f"no event within {spec.timeout_s:g} s; torchrun and every rank were killed"
           if run.timed_out else crash_reason(list(run.stderr), spec.setup.nproc,
                                              run.returncode)[1])
    where = f" (in {run.in_flight})" if run.in_flight else ""
    return (f"the ranks ended badly after every case was saved{where}: {why}; a case "
            "without a graph replay column lost it then")


def crash_reason(stderr: list[str], nproc: int, returncode: int) -> tuple[Status, str]:
    """(status, 'rank 1 of 2 died (exit code 1): RuntimeError: …') from torchrun's report
    of the first failure and that rank's `gpuvs-dist-error` line, which carries the
    status the rank's policy gave its exception."""
    errors: dict[str, tuple[Status, str]] = {}
    for line in stderr:
        if line.startswith(ERROR_PREFIX):
            who, _, said = line[len(ERROR_PREFIX):].strip().partition(":")
            status, _, message = said.strip().partition(":")
            known = status.strip() in {s.value for s in Status}
            errors.setdefault(who.strip(), (Status(status.strip()) if known else Status.CRASHED,
                                            message.strip() if known else said.strip()))
    found = _ROOT_CAUSE.search("\n".join(stderr))
    if found is None:
        first = next(iter(errors.items()), None)
        said = f": {first[0]}: {first[1][1]}" if first else ""
        return (first[1][0] if first else Status.CRASHED,
                f"torchrun ended with exit code {returncode}{said}")
    rank, code = found.group(1), int(found.group(2))
    how = f"signal {signal_name(-code)}" if code < 0 else f"exit code {code}"
    status, message = errors.get(f"rank {rank}", (Status.CRASHED, ""))
    return status, f"rank {rank} of {nproc} died ({how})" + (f": {message}" if message else "")
