"""The one supervisor of every child process gpuvs starts: the run's workers (`gpuvs
run`, `seeds`, `ceilings`), run-file's worker (the user's own function), and `gpuvs
dist`'s torchrun with its ranks.

A `Child` runs in a session of its own, so that a kill reaches every helper it started
(frameworks start threads and processes; torchrun starts the ranks), and the kill takes
its descendants too, found before the first signal (a rank torchrun put in a session of
its own). One thread reads the child's **events** — `execute.wire` messages, one a line — from its
channel, whichever it is:

- `stdout`: the child answers on its stdout (a worker writes to a private copy of it);
  what it says on stderr is the tail;
- `pipe`: the child writes to a pipe of its own, whose file descriptor it is given as
  `{fd}` in its argument list (run-file's worker: the user's prints share stdout and
  stderr, which together are the tail);
- `file`: the child (rank 0, two processes down) appends to a file; the reader follows it
  until the child exits; stderr is the tail.

One clock: `event(deadline)` waits for the next event until `deadline` (of
`time.monotonic`), and kills the child when it passes. One death: `death()` says what the
case in hand is recorded as — `timeout` when gpuvs killed it, `oom` when SIGKILL came with
evidence of the out-of-memory killer (`policy.oom_evidence`), else `crashed` with the
signal or exit code named and the tail quoted — the same words for every kind of child.
"""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Literal

from gpuvs.execute import policy
from gpuvs.execute.wire import Message, decode, encode
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
# After the child exits, its output's last lines are read for at most this long: a
# descendant still holding the pipe open must not hold up the verdict.
TAIL_DRAIN_S = 2.0
# How often a followed file is read for new events.
FOLLOW_POLL_S = 0.1
PR_SET_PDEATHSIG = 1  # linux/prctl.h

Channel = Literal["stdout", "pipe", "file"]


class Child:
    """One child process and the events it sends (see the module's docstring)."""

    def __init__(self, argv: Sequence[str], channel: Channel = "stdout",
                 env: Mapping[str, str] | None = None, events_path: Path | None = None,
                 tail_lines: int = TAIL_LINES) -> None:
        read_fd = write_fd = -1
        if channel == "pipe":
            read_fd, write_fd = os.pipe()
            argv = [a.replace("{fd}", str(write_fd)) for a in argv]
        try:
            self.proc = subprocess.Popen(
                list(argv), stdin=subprocess.PIPE,
                stdout=subprocess.PIPE if channel != "file" else subprocess.DEVNULL,
                stderr=subprocess.STDOUT if channel == "pipe" else subprocess.PIPE,
                text=True, errors="replace", bufsize=1, start_new_session=True,
                pass_fds=(write_fd,) if channel == "pipe" else (),
                env=os.environ | dict(env or {}) | {"PYTHONUNBUFFERED": "1"})
        except BaseException:
            if channel == "pipe":
                os.close(read_fd)
            raise
        finally:
            if channel == "pipe":
                os.close(write_fd)  # only the child holds the writing end: its end is ours
        self.killed_by_us = False
        self.oom_kills_at_start = policy.oom_kills()
        self.tail: deque[str] = deque(maxlen=tail_lines)
        self._events: queue.Queue[Message | None] = queue.Queue()
        tail = self.proc.stdout if channel == "pipe" else self.proc.stderr
        assert tail is not None
        self._tail_reader = threading.Thread(target=self._keep_tail, args=(tail,), daemon=True)
        self._tail_reader.start()
        source: Iterable[str]
        if channel == "stdout":
            assert self.proc.stdout is not None
            source = self.proc.stdout
        elif channel == "pipe":
            source = open(read_fd, encoding="utf-8", errors="replace")  # noqa: SIM115
        else:
            assert events_path is not None
            source = self._followed(events_path)
        threading.Thread(target=self._read, args=(source,), daemon=True).start()

    # -- the channel ---------------------------------------------------------------
    def _keep_tail(self, output: Iterable[str]) -> None:
        for line in output:  # read to the end, so that the child never blocks on a full pipe
            self.tail.append(line.rstrip()[:TAIL_LINE_CHARS])

    def _read(self, lines: Iterable[str]) -> None:
        """Events until the channel ends; a line that is no message ends them too (the
        child is then found dead or killed at its deadline, as one that fell silent)."""
        with contextlib.suppress(ValueError, OSError):  # a closed pipe: the child's end
            for line in lines:
                if line.strip():
                    self._events.put(decode(line))
        self._events.put(None)

    def _followed(self, path: Path) -> Iterable[str]:
        """The lines appended to `path`, as they come, until the child has exited and
        the file has nothing more."""
        offset, partial = 0, ""
        while True:
            running = self.proc.poll() is None
            with contextlib.suppress(FileNotFoundError):
                with open(path, encoding="utf-8", errors="replace") as f:
                    f.seek(offset)
                    partial += f.read()
                    offset = f.tell()
                *lines, partial = partial.split("\n")
                yield from lines
            if not running:
                return
            time.sleep(FOLLOW_POLL_S)

    def send(self, message: Message) -> bool:
        """One request to the child's stdin, as a line; False when it has died (a broken
        pipe)."""
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(encode(message) + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, ValueError, OSError):
            return False
        return True

    def event(self, deadline: float) -> Message | None:
        """The child's next event; None once it has died, or when `deadline` (of
        `time.monotonic`) passed first — then it is killed, and `death` says `timeout`."""
        try:
            found = self._events.get(timeout=max(deadline - time.monotonic(), 0.0))
        except queue.Empty:
            self.kill()
            return None
        if found is None:
            self._events.put(None)  # every later read sees the end too
        return found

    # -- its end ---------------------------------------------------------------------
    def death(self, timeout_s: float) -> tuple[Status, str]:
        """What became of the child that gave no answer: the status of the case it had
        in hand, and why (its output's last lines included)."""
        if self.killed_by_us:
            return Status.TIMEOUT, (f"no result within the {timeout_s:g} s timeout; the "
                                    "worker was killed")
        code = self.proc.wait()
        # the child has exited, but its last lines may still be in the pipe: read them,
        # waiting no longer than a descendant that holds the pipe open would make us
        self._tail_reader.join(TAIL_DRAIN_S)
        tail = " | ".join(list(self.tail)[-TAIL_SHOWN:])
        if code == -signal.SIGKILL:
            evidence = policy.oom_evidence(self.proc.pid, self.oom_kills_at_start)
            if evidence:
                return Status.OOM, f"the worker was killed by SIGKILL: {evidence}. {tail}".strip()
            return Status.CRASHED, (
                "the worker was killed by SIGKILL, not by gpuvs; nothing says it ran out of "
                f"memory (no out-of-memory kill in its cgroup or the kernel log). {tail}"
            ).strip()
        how = f"signal {signal_name(-code)}" if code < 0 else f"exit code {code}"
        return Status.CRASHED, f"the worker died ({how}). {tail}".strip()

    def failure(self, case: Case, timeout_s: float) -> Measurement:
        """The measurement of the case the child had in hand when it died."""
        return Measurement(case, *self.death(timeout_s))

    def kill(self) -> None:
        """Terminate the child, its process group and every descendant: SIGTERM, a grace
        period, then SIGKILL. The descendants are found before the first signal, since
        their parent may not outlive it."""
        import psutil

        self.killed_by_us = True
        try:
            victims = [psutil.Process(self.proc.pid),
                       *psutil.Process(self.proc.pid).children(recursive=True)]
        except psutil.NoSuchProcess:
            victims = []
        for sig, wait in ((signal.SIGTERM, KILL_GRACE_S), (signal.SIGKILL, KILL_GRACE_S)):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, sig)
            for p in victims:
                with contextlib.suppress(psutil.Error):
                    p.send_signal(sig)
            _, alive = psutil.wait_procs(victims, timeout=wait)
            if not alive and self.proc.poll() is not None:
                break
            victims = alive
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=KILL_GRACE_S)

    def retire(self) -> None:
        """Tell the child to exit (its stdin closes) without waiting for it. Reap it
        later with `close`."""
        if self.proc.poll() is None and self.proc.stdin is not None:
            try:
                self.proc.stdin.close()
            except (BrokenPipeError, OSError):
                self.kill()

    def close(self, wait_s: float = 10.0) -> None:
        """Retire the child and wait for it to exit; kill it if it will not."""
        self.retire()
        try:
            self.proc.wait(timeout=wait_s)
        except subprocess.TimeoutExpired:
            self.kill()


def die_with_parent(sig: int, parent: int | None = None) -> None:
    """Have the kernel send this process `sig` when its parent dies (Linux's
    PR_SET_PDEATHSIG, through ctypes; elsewhere nothing). For a child that a third
    program starts (torchrun starts the ranks, gpuvs starts torchrun), so no kill of
    gpuvs's own can reach it once the parent is gone: SIGKILL of `gpuvs dist` left
    torchrun and its ranks running past the case's timeout. `parent` is the pid the
    parent is known by (read from the environment); a parent already gone when the
    signal was asked for sends it now, itself. The signal comes when the thread that
    started this process ends: every parent here starts its children from its main
    thread."""
    import ctypes

    expected = os.getppid() if parent is None else parent
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0) != 0:
            return
    except (OSError, AttributeError):  # not Linux: no parent-death signal to ask for
        return
    if os.getppid() != expected:
        os.kill(os.getpid(), sig)


def signal_name(number: int) -> str:
    """'SIGKILL' for 9; the number itself where it names no signal."""
    try:
        return signal.Signals(number).name
    except ValueError:
        return str(number)
