"""The case policy: what a case that raised is recorded as, the same in a worker process
(`gpuvs run`, `seeds`, `ceilings`) and in the user's own process (`gpuvs.compare`,
`run-file`). Failures are data: a case ends `oom` only with evidence of running out of
memory, otherwise `crashed` with the error's own words."""

from __future__ import annotations

import re
import subprocess
import traceback
from collections.abc import Hashable
from pathlib import Path
from typing import Any

from gpuvs.errors import BackendUnavailable, one_line
from gpuvs.model import Case, Measurement, Status

# What the host allocators say when they cannot allocate: torch raises a plain
# RuntimeError ("DefaultCPUAllocator: can't allocate memory"), Python a MemoryError.
_HOST_OOM_WORDS = ("can't allocate memory", "out of memory")


def out_of_memory(backend: Any, e: BaseException) -> bool:
    """Evidence of running out of memory: the backend's own out-of-memory error (CUDA's,
    CuPy's, XLA's), a MemoryError, or a host allocator's error that says so."""
    if backend.is_oom(e) or isinstance(e, MemoryError):
        return True
    text = str(e).lower()
    return isinstance(e, RuntimeError) and any(w in text for w in _HOST_OOM_WORDS)


def failure(backend: Any, case: Case, e: BaseException, crashed: str | None = None
            ) -> tuple[Measurement, bool]:
    """The measurement of a case that raised `e`, and whether the process that ran it
    must be replaced (a sticky device error poisons every later case there). `crashed`
    words a crash for the caller (whose function raised); by default the error's tail.
    A backend that cannot do what the case needs here (no way to flush this device's
    caches) skips the case: nothing was measured, and nothing crashed."""
    if isinstance(e, BackendUnavailable):
        return Measurement(case, Status.SKIPPED, reason=str(e)), False
    if out_of_memory(backend, e):
        backend.empty_cache(case.device)
        return Measurement(case, Status.OOM, reason=f"out of memory: {one_line(e)}"), False
    return (Measurement(case, Status.CRASHED, reason=crashed or tail(e)),
            bool(backend.is_fatal(e)))


class OutOfMemorySeries:
    """A series stops growing once a size runs out of memory: every larger size needs
    more. One owner for the runner (a series is `Case.series`) and `gpuvs.compare` (a
    series is a device); `key` says which series a case is in."""

    def __init__(self) -> None:
        self._at: dict[Hashable, int] = {}

    def note(self, key: Hashable, m: Measurement) -> None:
        if m.status is Status.OOM:
            self._at.setdefault(key, m.case.size)

    def stopped(self, key: Hashable, case: Case) -> Measurement | None:
        """The case, skipped, when its series already ran out of memory; else None."""
        if key not in self._at:
            return None
        return Measurement(case, Status.SKIPPED,
                           reason=f"not run: size {self._at[key]} already ran out of memory")


def tail(e: BaseException) -> str:
    """The first line and the last frames of the traceback, on one line."""
    tb = traceback.format_exception(type(e), e, e.__traceback__)
    return (one_line(e) + " | " + " ".join(tb[-3:]).replace("\n", " "))[:2000]


def oom_kills(cgroups: Path = Path("/sys/fs/cgroup"),
              membership: Path = Path("/proc/self/cgroup")) -> int | None:
    """How many processes the out-of-memory killer has killed in this process's memory
    cgroup (v2 `memory.events`, v1 `memory.oom_control`); None where it cannot be read."""
    try:
        lines = membership.read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        rel = path.lstrip("/")
        if controllers == "":
            found = _oom_kill_count(cgroups / rel / "memory.events")
        elif "memory" in controllers.split(","):
            found = _oom_kill_count(cgroups / "memory" / rel / "memory.oom_control")
        else:
            continue
        if found is not None:
            return found
    return None


def _oom_kill_count(path: Path) -> int | None:
    try:
        text = path.read_text()
    except OSError:
        return None
    found = re.search(r"^oom_kill (\d+)$", text, re.M)
    return int(found.group(1)) if found else None


def oom_evidence(pid: int, kills_before: int | None, kernel_log: str | None = None) -> str:
    """Why a process killed by SIGKILL ran out of memory, or '' when nothing says so: the
    cgroup's OOM-kill count rose since it started, or the kernel log names its pid."""
    now = oom_kills()
    if kills_before is not None and now is not None and now > kills_before:
        return f"the memory cgroup's out-of-memory killer fired ({kills_before} → {now} kills)"
    log = kernel_log if kernel_log is not None else _kernel_log()
    line = next((x for x in log.splitlines()
                 if re.search(rf"(Killed process |oom-kill:.*pid=){pid}\b", x)), "")
    return f"the kernel log says: {line.strip()}" if line else ""


def _kernel_log() -> str:
    try:
        return subprocess.run(["dmesg"], capture_output=True, text=True, timeout=2).stdout
    except (OSError, subprocess.SubprocessError):  # no dmesg, or not allowed to read it
        return ""
