"""Every rank's own clock on its case: the deadline of the step in hand, re-armed at each
step, ends the case from a thread when the main thread is stuck in a collective."""

from __future__ import annotations

import threading
import time

from gpuvs.distributed.watchdog import Watchdog


def test_a_step_past_its_deadline_is_ended_once_with_its_case() -> None:
    ended: list[str] = []
    done = threading.Event()
    dog = Watchdog(0.2, lambda key: (ended.append(key), done.set()))
    dog.arm("a/1")
    dog.arm("a/2")  # the next step: the clock starts again, on this case
    assert done.wait(10)
    time.sleep(0.5)
    assert ended == ["a/2"]
    dog.stop()


def test_between_cases_nothing_fires() -> None:
    ended: list[str] = []
    dog = Watchdog(1.0, ended.append)
    dog.arm("a/1")
    dog.disarm()  # saved: the next case arms it again
    time.sleep(2.0)
    dog.stop()
    assert ended == []


def test_a_rank_waiting_out_a_case_it_is_not_in_waits_for_every_try() -> None:
    ended: list[str] = []
    dog = Watchdog(0.5, ended.append)
    dog.arm("scaling/1", tries=10)
    time.sleep(1.5)
    dog.stop()
    assert ended == []
