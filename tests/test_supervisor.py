"""The one supervisor of child processes: its three channels, its clock, its kill, its
death reasons — the same for a worker, run-file's worker and torchrun."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import psutil

from gpuvs.execute.supervisor import Child
from gpuvs.model import Status

PY = sys.executable


def _soon(seconds: float = 20.0) -> float:
    return time.monotonic() + seconds


def test_answers_on_stdout_are_events_and_stderr_is_the_tail() -> None:
    child = Child([PY, "-c", "import sys, json\n"
                   "print('warming up', file=sys.stderr, flush=True)\n"
                   "for line in sys.stdin: print(json.dumps({'echo': json.loads(line)}), "
                   "flush=True)"])
    assert child.send({"n": 1})
    assert child.event(_soon()) == {"echo": {"n": 1}}
    child.close()
    assert child.event(_soon()) is None  # its end, seen by every later read
    assert "warming up" in child.tail


def test_events_on_a_pipe_of_their_own_leave_prints_to_the_tail() -> None:
    child = Child([PY, "-c", "import os, sys, json\n"
                   "print('the user prints this')\n"
                   "os.write(int(sys.argv[1]), b'{\"start\": 1}\\n')", "{fd}"], channel="pipe")
    assert child.event(_soon()) == {"start": 1}
    assert child.event(_soon()) is None
    assert child.death(5.0) == (Status.CRASHED, "the worker died (exit code 0). "
                                                "the user prints this")


def test_events_appended_to_a_file_are_followed_until_the_child_ends(tmp_path: Path) -> None:
    events = tmp_path / "status.jsonl"
    events.touch()
    code = (f"import json, time\nf = open({str(events)!r}, 'a')\n"
            "for i in range(3):\n"
            "    f.write(json.dumps({'event': i}) + '\\n'); f.flush(); time.sleep(0.2)\n")
    child = Child([PY, "-c", code], channel="file", events_path=events)
    assert [child.event(_soon()) for _ in range(4)] == [
        {"event": 0}, {"event": 1}, {"event": 2}, None]


def test_a_child_past_its_deadline_is_killed_with_every_descendant() -> None:
    """torchrun's ranks, a framework's helpers: a grandchild in a session of its own is
    found before the first signal and killed too."""
    code = ("import subprocess, sys, time, json\n"
            "g = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'], "
            "start_new_session=True)\n"
            "print(json.dumps({'grandchild': g.pid}), flush=True)\ntime.sleep(600)")
    child = Child([PY, "-c", code])
    grandchild = child.event(_soon())["grandchild"]  # type: ignore[index]
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
    assert child.send({"big": "x" * 1000})
    started = time.monotonic()
    assert child.event(time.monotonic() + 0.5) is None
    assert time.monotonic() - started < 10
    assert child.death(0.5)[0] is Status.TIMEOUT
