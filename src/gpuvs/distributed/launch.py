"""The parent: start the ranks through torchrun, keep the clock, turn failures into statuses.

The ranks run `python -m torch.distributed.run --standalone --nproc-per-node N -m
gpuvs.distributed.rank_main SPEC` with this interpreter and this environment (every NCCL_*
variable included: a host that turns NVLink multicast off with NCCL_NVLS_ENABLE=0 keeps it
off in the ranks), with this gpuvs first on PYTHONPATH. Each rank count gets a launch of
its own (scaling's N = 1 is one process, not one rank of a larger world), so no rank ever
waits in a sub-group it is not part of.

Rank 0 saves each case itself and reports `ready`, then `start` before each step of a
case and `done` once it is saved; the parent only watches those lines, and is the
watchdog: ranks that are not `ready` within the set-up allowance (importing torch, the
rendezvous, the process groups), or a step with no next event within the case timeout,
have torchrun and every rank killed, and the case in that step is recorded `timeout`. A
rank that dies makes torchrun stop the others, and the case in flight is recorded
`crashed` (or `oom`) with the dead rank and its error. Either way the ranks are started
again for the cases left, so one bad case costs one case.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from gpuvs.distributed.rank_main import ERROR_PREFIX
from gpuvs.distributed.spec import Spec
from gpuvs.model import Case, Measurement, Status

POLL_S = 0.1
KILL_GRACE_S = 3.0
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
    lines_read: int = 0
    stderr: deque[str] = field(default_factory=lambda: deque(maxlen=STDERR_TAIL_LINES))


def torchrun_command(spec_path: str, nproc: int) -> list[str]:
    """torchrun with this interpreter, so the ranks see the same packages and gpuvs."""
    return [sys.executable, "-m", "torch.distributed.run", "--standalone",
            f"--nproc-per-node={nproc}", "--monitor-interval=0.1", "-m",
            "gpuvs.distributed.rank_main", spec_path]


def rank_environment() -> dict[str, str]:
    """This process's environment (NCCL_* included), with the directory this gpuvs was
    imported from first on PYTHONPATH: the ranks run the same gpuvs, installed or not."""
    source = str(Path(__file__).resolve().parents[2])  # the directory holding gpuvs/
    path = os.pathsep.join(p for p in (source, os.environ.get("PYTHONPATH", "")) if p)
    return os.environ | {"PYTHONPATH": path, "PYTHONUNBUFFERED": "1"}


def execute(spec: Spec, recording: Any, on_result: Callable[[Measurement], None]
            ) -> dict[str, Any]:
    """Run every case of `spec`, one launch per rank count, into the run being recorded
    (rank 0 saves the cases it finishes; the parent, those it ended). Returns what rank 0
    reported when ready (versions, the ranks' NCCL variables)."""
    info: dict[str, Any] = {}
    for part in by_world_size(spec):
        info = _execute_part(part, recording, on_result) or info
    return info


def by_world_size(spec: Spec) -> list[Spec]:
    """The spec split by the ranks its cases need, in the cases' order: a scaling case
    runs on `size` ranks, a collective on all of them."""
    worlds: dict[int, list[Case]] = {}
    for case in spec.cases:
        n = case.size if spec.command == "scaling" else spec.setup.nproc
        worlds.setdefault(n, []).append(case)
    return [replace(spec, setup=replace(spec.setup, nproc=n), cases=tuple(cases))
            for n, cases in worlds.items()]


def _execute_part(spec: Spec, recording: Any, on_result: Callable[[Measurement], None]
                  ) -> dict[str, Any]:
    """The cases of one rank count, relaunching the ranks after a failure for the cases
    left."""
    pending = list(spec.cases)
    info: dict[str, Any] = {}
    while pending:
        run = _launch(replace(spec, cases=tuple(pending)), recording, on_result)
        info = info or run.ready
        pending = [c for c in pending if c.key not in run.done]
        if not pending:
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


def _launch(spec: Spec, recording: Any, on_result: Callable[[Measurement], None]) -> _Launch:
    run = _Launch()
    with tempfile.TemporaryDirectory(prefix="gpuvs-dist-") as tmp:
        spec_path, status_path = Path(tmp, "spec.json"), Path(tmp, "status.jsonl")
        status_path.touch()
        spec = replace(spec, status_path=str(status_path))
        spec_path.write_text(spec.to_json())
        proc = subprocess.Popen(
            torchrun_command(str(spec_path), spec.setup.nproc), stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
            start_new_session=True, env=rank_environment())
        reader = threading.Thread(target=_read_stderr, args=(proc, run.stderr), daemon=True)
        reader.start()
        try:
            _watch(proc, status_path, spec, recording, run, on_result)
        finally:
            if proc.poll() is None:
                kill_tree(proc)
        run.returncode = proc.wait()
        reader.join(timeout=KILL_GRACE_S)
        _follow(status_path, run, spec, recording, on_result)
    return run


def _watch(proc: subprocess.Popen[str], status_path: Path, spec: Spec, recording: Any,
           run: _Launch, on_result: Callable[[Measurement], None]) -> None:
    """Follow rank 0's events until torchrun ends; kill it when the set-up or a case
    overstays. Until `ready` the set-up allowance runs; after it, each event restarts the
    case's clock (a step of a case lies between its `start` and the next event)."""
    deadline = time.monotonic() + spec.setup_timeout_s
    while proc.poll() is None:
        time.sleep(POLL_S)
        if _follow(status_path, run, spec, recording, on_result):
            deadline = time.monotonic() + spec.timeout_s
        if time.monotonic() > deadline:
            run.timed_out = True
            kill_tree(proc)
            return


def _follow(status_path: Path, run: _Launch, spec: Spec, recording: Any,
            on_result: Callable[[Measurement], None]) -> bool:
    """Take rank 0's new events into `run`; True when there were any."""
    lines = status_path.read_text(encoding="utf-8").splitlines(keepends=True)
    fresh = [json.loads(line) for line in lines[run.lines_read:] if line.endswith("\n")]
    run.lines_read += len(fresh)
    for event in fresh:
        if event["event"] == "ready":
            run.ready = {k: v for k, v in event.items() if k != "event"}
        elif event["event"] == "start":
            run.in_flight = event["case"]
        elif event["event"] == "done":
            run.done.add(event["case"])
            run.in_flight = ""
            on_result(_saved(recording, event["case"]))
    return bool(fresh)


def _saved(recording: Any, key: str) -> Measurement:
    """The case rank 0 saved, as the store holds it."""
    found: Measurement = next(m for m in recording.measurements() if m.case.key == key)
    return found


def _read_stderr(proc: subprocess.Popen[str], tail: deque[str]) -> None:
    assert proc.stderr is not None
    for line in proc.stderr:
        tail.append(line.rstrip())


def kill_tree(proc: subprocess.Popen[str]) -> None:
    """Stop torchrun and every rank: SIGTERM, a grace period, then SIGKILL. The ranks are
    found as torchrun's descendants before it goes, because it may not outlive them."""
    import psutil

    try:
        top = psutil.Process(proc.pid)
        victims = [top, *top.children(recursive=True)]
    except psutil.NoSuchProcess:
        return
    for p in victims:
        try:
            p.terminate()
        except psutil.NoSuchProcess:
            continue
    _, alive = psutil.wait_procs(victims, timeout=KILL_GRACE_S)
    for p in alive:
        try:
            p.kill()
        except psutil.NoSuchProcess:
            continue
    psutil.wait_procs(alive, timeout=KILL_GRACE_S)


def _failure(case: Case, run: _Launch, spec: Spec) -> Measurement:
    """The status and reason of a case whose ranks did not finish it."""
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
    reason = crash_reason(list(run.stderr), spec.setup.nproc, run.returncode)
    status = Status.OOM if "OutOfMemoryError" in reason else Status.CRASHED
    return Measurement(case, status, reason=reason + when)


def crash_reason(stderr: list[str], nproc: int, returncode: int) -> str:
    """'rank 1 of 2 died (exit code 1): RuntimeError: …' from torchrun's report of the
    first failure and that rank's `gpuvs-dist-error` line."""
    errors: dict[str, str] = {}
    for line in stderr:
        if line.startswith(ERROR_PREFIX):
            who, _, message = line[len(ERROR_PREFIX):].strip().partition(":")
            errors.setdefault(who.strip(), message.strip())
    found = _ROOT_CAUSE.search("\n".join(stderr))
    if found is None:
        first = next(iter(errors.items()), None)
        said = f": {first[0]}: {first[1]}" if first else ""
        return f"torchrun ended with exit code {returncode}{said}"
    rank, code = found.group(1), int(found.group(2))
    how = f"signal {_signal_name(-code)}" if code < 0 else f"exit code {code}"
    message = errors.get(f"rank {rank}", "")
    return f"rank {rank} of {nproc} died ({how})" + (f": {message}" if message else "")


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return str(number)
