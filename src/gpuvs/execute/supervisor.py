"""A child process that gpuvs runs code in and owns: the runner's workers (`gpuvs run`)
and run-file's (`gpuvs run-file`, the user's own function).

It starts in a session of its own, so that a kill reaches every helper it started
(frameworks start threads and processes); the tail of what it writes is kept, for the
note on its death; and when it dies, `death` says what its case is recorded as — the
same words for a registered workload and for the user's function: `timeout` when gpuvs
killed it, `oom` when SIGKILL came with evidence of the out-of-memory killer
(`policy.oom_evidence`), else `crashed` with the signal or exit code named.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from collections import deque
from collections.abc import Iterable, Mapping, Sequence

from gpuvs.execute import policy
from gpuvs.model import Case, Measurement, Status

# A fresh child imports its framework (and the user's file) and initialises the device
# before its first case: that case's timeout is this much longer.
STARTUP_ALLOWANCE_S = 120.0
TAIL_LINES = 20
TAIL_SHOWN = 5
KILL_GRACE_S = 1.0
# A line kept in the tail is cut to this many characters: a progress bar redrawn with
# carriage returns is one long line.
TAIL_LINE_CHARS = 500


class Child:
    """One child process, its stdin a pipe. Its output for the tail is stderr, or stdout
    and stderr together (`merged`) when its answers come on another channel."""

    def __init__(self, argv: Sequence[str], merged: bool = False,
                 pass_fds: Sequence[int] = (), env: Mapping[str, str] | None = None) -> None:
        self.proc = subprocess.Popen(
            list(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT if merged else subprocess.PIPE, text=True,
            errors="replace", bufsize=1, start_new_session=True, pass_fds=tuple(pass_fds),
            env=os.environ | dict(env or {}) | {"PYTHONUNBUFFERED": "1"},
        )
        self.killed_by_us = False
        self.oom_kills_at_start = policy.oom_kills()
        self.tail: deque[str] = deque(maxlen=TAIL_LINES)
        output = self.proc.stdout if merged else self.proc.stderr
        assert output is not None
        threading.Thread(target=self._keep_tail, args=(output,), daemon=True).start()

    def _keep_tail(self, output: Iterable[str]) -> None:
        for line in output:  # read to the end, so that the child never blocks on a full pipe
            self.tail.append(line.rstrip()[:TAIL_LINE_CHARS])

    def death(self, timeout_s: float) -> tuple[Status, str]:
        """What became of the child that gave no answer: the status of the case it had
        in hand, and why (its output's last lines included)."""
        if self.killed_by_us:
            return Status.TIMEOUT, (f"no result within the {timeout_s:g} s timeout; the "
                                    "worker was killed")
        code = self.proc.wait()
        tail = " | ".join(list(self.tail)[-TAIL_SHOWN:])
        if code == -signal.SIGKILL:
            evidence = policy.oom_evidence(self.proc.pid, self.oom_kills_at_start)
            if evidence:
                return Status.OOM, f"the worker was killed by SIGKILL: {evidence}. {tail}".strip()
            return Status.CRASHED, (
                "the worker was killed by SIGKILL, not by gpuvs; nothing says it ran out of "
                f"memory (no out-of-memory kill in its cgroup or the kernel log). {tail}"
            ).strip()
        how = f"signal {signal.Signals(-code).name}" if code < 0 else f"exit code {code}"
        return Status.CRASHED, f"the worker died ({how}). {tail}".strip()

    def failure(self, case: Case, timeout_s: float) -> Measurement:
        """The measurement of the case the child had in hand when it died."""
        return Measurement(case, *self.death(timeout_s))

    def kill(self) -> None:
        """Terminate the child's whole process group: frameworks start helpers."""
        self.killed_by_us = True
        for sig, wait in ((signal.SIGTERM, KILL_GRACE_S), (signal.SIGKILL, None)):
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                self.proc.wait(timeout=wait)
                break
            except subprocess.TimeoutExpired:
                continue

    def retire(self) -> None:
        """Tell the child to exit (its stdin closes) without waiting for it. Reap it
        later with `close`."""
        if self.proc.poll() is None and self.proc.stdin is not None:
            try:
                self.proc.stdin.close()
            except (BrokenPipeError, OSError):
                self.kill()

    def close(self) -> None:
        """Retire the child and wait for it to exit; kill it if it will not."""
        self.retire()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.kill()

