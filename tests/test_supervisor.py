"""The one supervisor of child processes: its three channels, its clock, its kill, its
death reasons — the same for a worker, run-file's worker and torchrun."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import psutil

from gpuvs.execute.supervisor import Child
from gpuvs.execute.wire import Again, Ready, Started
from gpuvs.model import Case, Status

PY = sys.executable


def _soon(seconds: float = 20.0) -> float:
    return time.monotonic() + seconds


def test_answers_on_stdout_are_events_and_stderr_is_the_tail() -> None:
    child = Child([PY, "-c", "import sys\nfrom gpuvs.execute.wire import Again, decode, encode\n"
                   "print('warming up', file=sys.stderr, flush=True)\n"
                   "for line in sys.stdin: print(encode(Again(decode(line).why + '!')), "
                   "flush=True)"])
    assert child.send(Again("n=1"))
    assert child.event(_soon()) == Again("n=1!")
    child.close()
    assert child.event(_soon()) is None  # its end, seen by every later read
    assert "warming up" in child.tail


def test_events_on_a_pipe_of_their_own_leave_prints_to_the_tail() -> None:
    case = Case("w", "correct", "numpy", "cpu", "float32", 1)
    child = Child([PY, "-c", "import os, sys\nfrom gpuvs.execute.wire import Started, encode\n"
                   "from gpuvs.model import Case\n"
                   "print('the user prints this')\n"
                   "case = Case('w', 'correct', 'numpy', 'cpu', 'float32', 1)\n"
                   "os.write(int(sys.argv[1]), (encode(Started(case)) + '\\n').encode())",
                   "{fd}"], channel="pipe")
    assert child.event(_soon()) == Started(case)
    assert child.event(_soon()) is None
    assert child.death(5.0) == (Status.CRASHED, "the worker died (exit code 0). "
                                                "the user prints this")


def test_events_appended_to_a_file_are_followed_until_the_child_ends(tmp_path: Path) -> None:
    events = tmp_path / "status.jsonl"
    events.touch()
    code = (f"import time\nfrom gpuvs.execute.wire import Ready, encode\n"
            f"f = open({str(events)!r}, 'a')\n"
            "for i in range(3):\n"
            "    f.write(encode(Ready({'i': i})) + '\\n'); f.flush(); time.sleep(0.2)\n")
    child = Child([PY, "-c", code], channel="file", events_path=events)
    assert [child.event(_soon()) for _ in range(4)] == [
        Ready({"i": 0}), Ready({"i": 1}), Ready({"i": 2}), None]


def test_a_child_past_its_deadline_is_killed_with_every_descendant() -> None:
    """torchrun's ranks, a framework's helpers: a grandchild in a session of its own is
    found before the first signal and killed too."""
    code = ("import subprocess, sys, time\nfrom gpuvs.execute.wire import Ready, encode\n"
            "g = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'], "
            "start_new_session=True)\n"
            "print(encode(Ready({'grandchild': g.pid})), flush=True)\ntime.sleep(600)")
    child = Child([PY, "-c", code])
    ready = child.event(_soon())
    assert isinstance(ready, Ready)
    grandchild = ready.info["grandchild"]
    assert child.event(time.monotonic() + 0.5) is None
    assert child.death(0.5) == (Status.TIMEOUT, "no result within the 0.5 s timeout; the "
                                                "worker was killed")
    assert not psutil.pid_exists(grandchild) or \
        psutil.Process(grandchild).status() == psutil.STATUS_ZOMBIE


def test_a_death_by_signal_is_named_with_the_last_lines_it_wrote() -> None:
    child = Child([PY, "-c", "import os, signal, sys\nprint('about to abort', file=sys.stderr)\n"
                   "sys.stderr.flush(); os.kill(os.getpid(), signal.SIGABRT)"])
    assert child.event(_soon()) is None
    status, reason = child.death(5.0)
    assert status is Status.CRASHED
    assert reason == "the worker died (signal SIGABRT). about to abort"


def test_a_child_that_never_reads_its_stdin_does_not_stop_the_clock() -> None:
    child = Child([PY, "-c", "import time; time.sleep(600)"])
    assert child.send(Again("x" * 1000))
    started = time.monotonic()
    assert child.event(time.monotonic() + 0.5) is None
    assert time.monotonic() - started < 10
    assert child.death(0.5)[0] is Status.TIMEOUT
