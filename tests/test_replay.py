"""The posts' timing methods, replayed: right on synchronous work, wrong on asynchronous
work in the way the posts were wrong — and `measure_as_written` checks the output either way."""

from __future__ import annotations

import queue
import threading
import time

from tests.fakes import spin

from gpuvs.errors import WrongResult
from gpuvs.measuring.as_written import timeit_loops, wall_once
from gpuvs.measuring.protocol import HostClock, Prepared, measure_as_written
from gpuvs.model import Case, Status

CASE = Case("w", "as_written", "b", "cpu", "float32", 1)
WORK_S = 0.02


class ThreadDevice:
    """A real asynchronous device: calls queue work on a thread and return at once."""

    def __init__(self) -> None:
        self.jobs: queue.Queue[float] = queue.Queue()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            spin(self.jobs.get())
            self.jobs.task_done()

    def launch(self, seconds: float) -> str:
        self.jobs.put(seconds)
        return "queued"

    def synchronize(self, result: object = None) -> None:
        self.jobs.join()


class ThreadClock(HostClock):
    is_async = True

    def __init__(self, device: ThreadDevice) -> None:
        self.device = device

    def synchronize(self, result: object = None) -> None:
        self.device.synchronize()


def _ok(out: object) -> None:
    return None


def test_timeit_on_synchronous_work_recovers_its_duration() -> None:
    samples, out = timeit_loops(lambda: spin(2e-3) or "done", repeat=3).run()
    assert len(samples) == 3 and out == "done"
    # A busy-wait cannot finish early; a busy machine can only make it late.
    assert 2e-3 <= min(samples) < 4e-3


def test_timeit_autoranges_like_ipython_by_powers_of_ten_to_a_fifth_of_a_second() -> None:
    calls = []

    def five_ms() -> None:
        spin(5e-3)
        calls.append(1)

    timeit_loops(five_ms, repeat=1).run()
    # Trials of 1, 10 and 100 loops (0.5 s ≥ 0.2 s), one run of 100, one call for the output.
    assert len(calls) == 1 + 10 + 100 + 100 + 1


def test_time_time_once_on_an_async_device_sees_the_launch_not_the_work() -> None:
    device = ThreadDevice()
    samples, _ = wall_once(lambda: device.launch(WORK_S)).run()
    device.synchronize()
    assert samples[0] < WORK_S / 10


def test_replay_keeps_the_posts_number_and_checks_the_output_after_the_device_drains() -> None:
    device = ThreadDevice()
    prepared = Prepared(call=lambda: device.launch(WORK_S), check=_ok,
                        self_timed=wall_once(lambda: device.launch(WORK_S)))
    t0 = time.perf_counter()
    m = measure_as_written(prepared, CASE, ThreadClock(device))
    assert time.perf_counter() - t0 >= WORK_S  # drained before the check
    assert m.status is Status.OK and len(m.samples) == 1
    assert m.samples[0] < WORK_S / 10
    assert m.timer.startswith("time.time() once")


def test_a_wrong_output_from_a_replay_is_a_wrong_result() -> None:
    def wrong(out: object) -> None:
        raise WrongResult("relative error 1.0e+00")

    prepared = Prepared(call=lambda: 1, check=wrong, self_timed=wall_once(lambda: 1))
    m = measure_as_written(prepared, CASE, HostClock())
    assert m.status is Status.WRONG_RESULT and "relative error" in m.reason
