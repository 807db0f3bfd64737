"""The protocol: known durations recovered, async devices timed right, first call apart."""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from tests.fakes import SimClock, SimDevice, SimTimer, UnsyncedClock, spin

from gpuvs.errors import WrongResult
from gpuvs.measuring.criteria import FixedCount, MedianCI
from gpuvs.measuring.protocol import (
    GOVERNED_SAMPLE_S,
    Budget,
    HostClock,
    Prepared,
    measure,
    measure_watched,
)
from gpuvs.measuring.watch import Seen, Watch, Watches
from gpuvs.model import Case, Caveat, Status

CASE = Case("w", "correct", "b", "cpu", "float32", 1)


def _ok(out: object) -> None:
    return None


@pytest.mark.parametrize("duration_s", [2e-4, 2e-3])
def test_recovers_the_duration_of_an_operation_of_known_length(duration_s: float) -> None:
    m = measure(Prepared(lambda: spin(duration_s), _ok), CASE, HostClock(), MedianCI(),
                Budget(seconds=0.5))
    assert m.status is Status.OK
    assert m.summary is not None
    assert m.summary.median == pytest.approx(duration_s, rel=0.05)


def test_on_an_async_device_host_timing_without_sync_is_wrong_and_gpuvs_is_right() -> None:
    kernel_s = 500e-6  # the device is busy 100x longer than a launch costs the host
    naive_dev, right_dev = SimDevice(launch_s=5e-6), SimDevice(launch_s=5e-6)
    prepared = lambda dev: Prepared(lambda: dev.launch(kernel_s), _ok)  # noqa: E731
    naive = measure(prepared(naive_dev), CASE, UnsyncedClock(naive_dev), FixedCount(n=20))
    right = measure(prepared(right_dev), CASE, SimClock(right_dev), FixedCount(n=20))
    assert naive.summary is not None and right.summary is not None
    assert naive.summary.median == pytest.approx(5e-6, rel=0.01)  # the launch, not the work
    # Within a sample the device idles only for the first launch: well under 1 %.
    assert right.summary.median == pytest.approx(kernel_s, rel=0.01)
    # Synchronised wall time is kept beside the device time, and costs the sync once a sample.
    assert right.wall_summary is not None
    assert right.summary.median <= right.wall_summary.median < 1.1 * kernel_s


def test_launch_bound_work_is_timed_at_the_launch_rate_not_the_kernel() -> None:
    dev = SimDevice(launch_s=10e-6)
    m = measure(Prepared(lambda: dev.launch(1e-6), _ok), CASE, SimClock(dev), FixedCount(n=10))
    assert m.summary is not None
    assert m.summary.median == pytest.approx(10e-6, rel=0.01)


def test_first_call_is_timed_alone_and_kept_out_of_the_samples() -> None:
    calls = []

    def slow_first() -> None:
        spin(0.05 if not calls else 2e-4)
        calls.append(1)

    m = measure(Prepared(slow_first, _ok), CASE, HostClock(), MedianCI(), Budget(seconds=0.3))
    assert m.first_call_s is not None and m.first_call_s >= 0.05
    assert m.summary is not None and m.summary.max < 0.01
    assert Caveat.FIRST_CALL_SLOW in m.caveats


def test_a_call_longer_than_the_budget_is_warm_after_the_first_and_sampled_twice() -> None:
    dev = SimDevice(launch_s=1e-6)
    calls = []

    def long_call() -> None:
        calls.append(dev.launch(0.5))

    m = measure(Prepared(long_call, _ok, single_call=True), CASE, SimClock(dev), MedianCI(),
                Budget(seconds=0.25))
    assert len(calls) == 3  # the first call, then two samples: the warm-up call is one
    assert m.warmups == 1 and len(m.samples) == 2
    assert Caveat.FEW_SAMPLES in m.caveats
    assert m.summary is not None and m.summary.median == pytest.approx(0.5, rel=0.01)


def test_a_wrong_result_is_caught_outside_the_timed_region_and_nothing_is_timed() -> None:
    def check(out: object) -> None:
        raise WrongResult("off by one")

    m = measure(Prepared(lambda: 41, check), CASE, HostClock(), MedianCI())
    assert m.status is Status.WRONG_RESULT
    assert m.reason == "off by one"
    assert m.samples == ()


def test_loops_are_calibrated_so_a_sample_is_long_next_to_the_timer() -> None:
    dev = SimDevice(launch_s=1e-6)
    m = measure(Prepared(lambda: dev.launch(10e-6), _ok), CASE, SimClock(dev), FixedCount(n=5),
                Budget(target_sample_s=1e-3))
    assert m.summary is not None
    assert m.wall_summary is not None
    # A synchronised sample spans the target; back to back, a sample loses only the sync.
    assert m.loops * m.summary.median >= 0.95e-3
    assert m.loops < 120  # and not far beyond it
    assert m.summary.median == pytest.approx(10e-6, rel=0.01)


def test_single_call_cases_are_never_looped() -> None:
    m = measure(Prepared(lambda: spin(1e-5), _ok, single_call=True), CASE, HostClock(),
                FixedCount(n=5))
    assert m.loops == 1


def test_sampling_stops_at_the_budget_when_the_criterion_is_never_met() -> None:
    dev = SimDevice(launch_s=1e-6, jitter=0.5, seed=1)
    m = measure(Prepared(lambda: dev.launch(1e-3), _ok), CASE, SimClock(dev),
                MedianCI(rel=1e-9), Budget(seconds=0.2))
    assert Caveat.BUDGET_EXHAUSTED in m.caveats
    assert 0.2 <= dev.host < 0.4


def test_cpu_measurements_keep_no_separate_wall_samples() -> None:
    m = measure(Prepared(lambda: spin(1e-4), _ok), CASE, HostClock(), FixedCount(n=5))
    assert m.wall_samples == ()
    assert m.timer == "host"


def test_a_flush_runs_before_every_timed_call_and_cold_samples_are_single_calls() -> None:
    dev = SimDevice(launch_s=1e-6)
    flushes: list[float] = []

    def flush() -> None:
        flushes.append(dev.host)
        dev.launch(1e-3)  # evicting the cache takes device time too, outside the samples

    m = measure(Prepared(lambda: dev.launch(1e-5), _ok, single_call=True, flush=flush), CASE,
                SimClock(dev), FixedCount(n=10))
    assert m.loops == 1
    assert len(flushes) >= m.warmups + len(m.samples)
    # The flush's millisecond stays out; one call on an idle queue also waits its launch.
    assert m.summary is not None and m.summary.median == pytest.approx(1e-5 + 1e-6, rel=0.01)


def test_a_kernel_that_starts_on_an_idle_device_does_not_inflate_the_samples() -> None:
    """Samples back to back keep the device busy: a sync around every sample let every
    kernel start from idle, which on the H100 cost a 4096² product 2.9 %."""
    dev = SimDevice(launch_s=1e-6, idle_start_s=76e-6)
    kernel_s = 2.649e-3
    m = measure(Prepared(lambda: dev.launch(kernel_s), _ok), CASE, SimClock(dev), MedianCI(),
                Budget(seconds=0.5))
    assert m.summary is not None
    assert m.summary.median == pytest.approx(kernel_s, rel=2e-3)
    one_per_sync = SimTimer(dev)  # what timing one call per synchronisation sees
    for _ in range(5):
        dev.synchronize()
        one_per_sync.start()
        dev.launch(kernel_s)
        one_per_sync.stop()
    assert min(one_per_sync.elapsed()) == pytest.approx(kernel_s + 76e-6, rel=1e-3)


def test_samples_laid_end_to_end_miss_nothing_a_loop_of_calls_pays() -> None:
    """One event ends a sample and starts the next: the samples of a batch add up to the
    device time the batch took, events included. A start and a stop event per sample left
    one event's device time (about 1 µs on the H100) between every two samples."""
    dev = SimDevice(launch_s=1e-6, event_s=1e-6)
    kernel_s = 270e-6
    m = measure(Prepared(lambda: dev.launch(kernel_s), _ok, single_call=True), CASE,
                SimClock(dev), FixedCount(n=20))
    assert m.summary is not None
    assert m.summary.median == pytest.approx(kernel_s + dev.event_s, rel=1e-6)
    paired = SimTimer(dev)  # the old way: a start and a stop event around each sample
    dev.synchronize()
    begin = dev.queue_end = dev.host
    for _ in range(5):
        paired.start()
        dev.launch(kernel_s)
        paired.stop()
    span = dev.queue_end - begin
    assert span - sum(paired.elapsed()) == pytest.approx(5 * dev.event_s, rel=1e-6)


class PowerCap(Watch):
    """The sensors of a card whose power limit sets its clocks (or does not)."""

    def __init__(self, governed: bool) -> None:
        self._governed = governed

    def settled(self) -> bool:
        return True

    def governed(self) -> bool:
        return self._governed


@pytest.mark.parametrize("capped", [False, True])
def test_under_a_power_cap_samples_span_the_whole_budget_not_one_phase_of_the_swing(
        capped: bool) -> None:
    """At its power cap an H100 swings its clocks for about a second at a time, in steps:
    a 1.5 ms bf16 product took 1455–1730 µs a call in 100 ms windows. Stopping as soon as
    the CI is tight reports the step the samples happened to fall in."""
    dev = SimDevice(launch_s=1e-6)
    dev.host = dev.queue_end = 0.2  # the slowest step of the swing starts
    def swing() -> float:  # 0.1 s steps of a 0.8 s swing, ±10 % around 1.5 ms
        return 1.5e-3 * (1 + 0.1 * math.sin(2 * math.pi * (dev.queue_end // 0.1) / 8))
    sensors = Watches([PowerCap(capped)])
    m = measure(Prepared(lambda: dev.launch(swing()), _ok, watches=sensors), CASE,
                SimClock(dev), MedianCI(), Budget(seconds=1.6))
    assert m.summary is not None
    sampled_s = len(m.samples) * m.loops * m.summary.median
    if capped:
        assert m.loops * m.summary.median >= 0.9 * GOVERNED_SAMPLE_S
        assert sampled_s > 0.9 * 1.6 and m.counters == {"clocks_governed": 1.0}
        assert m.summary.median == pytest.approx(1.5e-3, rel=0.05)
    else:
        assert sampled_s < 0.1 and m.counters == {}
        assert m.summary.median == pytest.approx(1.65e-3, rel=0.005)  # one step: the top


class CapSetsIn(PowerCap):
    """A card that meets its power limit after `after` readings; its kernels slow down."""

    def __init__(self, after: int) -> None:
        super().__init__(False)
        self.readings, self.after = 0, after

    def governed(self) -> bool:
        self.readings += 1
        return self.readings > self.after


def test_a_cap_that_sets_in_while_sampling_starts_the_sampling_again_under_it() -> None:
    """A cool card runs the first hundreds of ms of a bf16 product under its limit; the
    samples taken before the cap belong to clocks the rest of the run never sees."""
    dev = SimDevice(launch_s=1e-6)
    sensors = CapSetsIn(after=2)  # after the warm-up's reading and the first batch's
    kernel = lambda: 1.5e-3 if sensors.readings > sensors.after else 1.2e-3  # noqa: E731
    m = measure(Prepared(lambda: dev.launch(kernel()), _ok, watches=Watches([sensors])), CASE,
                SimClock(dev), MedianCI(), Budget(seconds=0.5))
    assert m.summary is not None and m.counters == {"clocks_governed": 1.0}
    assert m.summary.min == pytest.approx(1.5e-3, rel=1e-3)  # nothing from before the cap
    assert m.loops * m.summary.median >= 0.9 * GOVERNED_SAMPLE_S


class Diary(Watch):
    """A watch that writes down what it hears, and says one thing at the end."""

    def __init__(self, said: Seen | None = None) -> None:
        self.heard: list[str] = []
        self.said = said or Seen()

    def case_started(self) -> None:
        self.heard.append("case")

    def timing(self) -> Any:
        @contextmanager
        def held() -> Iterator[None]:
            self.heard.append("hold")
            yield
            self.heard.append("release")
        return held()

    def sampling_started(self) -> None:
        self.heard.append("sampling")

    def sampling_ended(self, calls: int) -> None:
        self.heard.append(f"sampled {calls} calls")

    def case_ended(self) -> Seen:
        self.heard.append("end")
        return self.said


SHORT = Budget(seconds=0.05)


def _timed_on_sim(watches: Watches, budget: Budget = SHORT) -> Any:
    dev = SimDevice(launch_s=1e-6)
    made: list[int] = []

    def make() -> Prepared:
        made.append(1)
        return Prepared(lambda: dev.launch(1e-4), _ok)
    m, _ = measure_watched(make, CASE, SimClock(dev), MedianCI, budget, watches,
                           pause=lambda s: None)
    return m, len(made)


def test_every_entry_point_times_inside_its_watches_in_one_order() -> None:
    diary = Diary(Seen((Caveat.THROTTLED,), {"power_w": 300.0}))
    m, _ = _timed_on_sim(Watches([diary]))
    assert diary.heard[:3] == ["case", "hold", "sampling"]
    assert diary.heard[-2:] == ["release", "end"]
    calls = int(diary.heard[3].split()[1])
    assert calls >= len(m.samples) * m.loops  # every call run while sampling, lead-ins too
    assert Caveat.THROTTLED in m.caveats and m.counters["power_w"] == 300.0


def test_a_contended_case_is_measured_again_after_a_pause_and_kept_clean_if_it_clears(
        ) -> None:
    class BusyOnce(Watch):
        def __init__(self) -> None:
            self.ends = 0

        def case_ended(self) -> Seen:
            self.ends += 1
            return Seen((Caveat.CONTENDED,) if self.ends == 1 else ())

    m, made = _timed_on_sim(Watches([BusyOnce()]))
    assert made == 2 and Caveat.CONTENDED not in m.caveats
    assert m.counters["contended_retries"] == 1.0


def test_a_case_that_stays_contended_is_kept_with_the_caveat() -> None:
    always = Watches([Diary(Seen((Caveat.CONTENDED,)))])
    m, made = _timed_on_sim(always)
    assert made == 2 and Caveat.CONTENDED in m.caveats


def test_an_energy_window_keeps_sampling_after_the_criterion_is_met() -> None:
    """A counter that moves every 100 ms needs about a second of calls: sampling goes on
    for `min_sampling_s` even once the CI is tight."""
    quick, _ = _timed_on_sim(Watches())
    spanned, _ = _timed_on_sim(Watches(), Budget(seconds=0.05, min_sampling_s=1.0))
    assert sum(quick.samples) * quick.loops < 0.2
    assert sum(spanned.samples) * spanned.loops >= 0.9


def test_a_process_that_has_observed_takes_no_timed_samples(monkeypatch) -> None:
    from gpuvs.measuring import watch

    monkeypatch.setattr(watch, "_OBSERVED", [])
    with watch.observing("a profiler session"):
        pass
    with pytest.raises(watch.Observed, match="already ran a profiler session"):
        _timed_on_sim(Watches())
