"""The host's own cost of a call beyond its ops' dispatch, measured on the CPU run: what a
GPU prediction adds to the launches (Python between the ops, a module's hooks). Timings
on a shared 2-core machine: each check compares the call with itself or with plain
Python of a known length, with wide margins, never with a fixed number of seconds."""

from __future__ import annotations

import time
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from gpuvs.predicting import hostcost  # noqa: E402
from gpuvs.predicting.counting import count  # noqa: E402


def _least(fn: Any, *args: Any) -> float:
    best = float("inf")
    for _ in range(20):
        started = time.perf_counter()
        fn(*args)
        best = min(best, time.perf_counter() - started)
    return best


def _python(n: int = 40_000) -> int:
    total = 0
    for i in range(n):
        total += i
    return total


def test_python_between_the_ops_is_the_hosts_own_cost() -> None:
    def busy(x: Any) -> Any:
        y = x * 2
        _python()
        return y + 1

    work, _ = count(busy, (torch.rand(100),), {})
    alone = _least(_python)
    assert 0.5 * alone < work.host_s < 3 * alone, (work.host_s, alone)


def test_a_call_that_is_one_op_costs_the_host_next_to_nothing_more() -> None:
    one, _ = count(lambda x: x * 2, (torch.rand(100),), {})
    busy, _ = count(lambda x: [_python(), x * 2][1], (torch.rand(100),), {})
    assert one.host_s < busy.host_s / 5


def test_a_modules_hooks_are_the_hosts_own_cost_and_never_more_than_the_call() -> None:
    net = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(),
                              torch.nn.Linear(64, 64))
    x = torch.rand(4, 64)
    plain, _ = count(net, (x,), {})
    assert 0 <= plain.host_s <= _least(net, x) * 3
    def slow_hook(*_: Any) -> None:  # a hook that takes its time, changing nothing
        _python()

    net[1].register_forward_hook(slow_hook)
    hooked, _ = count(net, (x,), {})
    alone = _least(_python)
    assert 0.5 * alone < hooked.host_s < 3 * alone + plain.host_s, (hooked.host_s, alone)


def test_a_call_over_much_data_is_timed_on_one_row_when_its_ops_stay_the_same() -> None:
    """An op over 64 MiB leaves the CPU's caches cold for the Python after it (100–200 µs
    a GPU's host never pays): the same call on one row runs the same ops, in cache."""
    def norm_sum(x: Any) -> Any:
        return (x * 2).sum(dim=-1)

    big = torch.rand(4096, 4096)
    small = hostcost._shrunk((big,), {})
    assert small is not None and small[0][0].shape == (1, 4096)
    assert hostcost._ops(norm_sum, *small) == hostcost._ops(norm_sum, (big,), {})
    work, _ = count(norm_sum, (big,), {})
    assert work.host_s < _least(norm_sum, big) / 50


def test_arguments_that_do_not_fit_together_cut_are_timed_as_given() -> None:
    table, idx = torch.rand(1000, 8), torch.arange(500, 1000)
    small = hostcost._shrunk((table, idx), {})
    assert small is not None
    assert hostcost._ops(lambda t, i: t[i], *small) is None  # index 500 of one row
    work, _ = count(lambda t, i: t[i], (table, idx), {})
    assert work.host_s >= 0 and [t.op_class for t in work.tallies] == ["gather"]


def test_an_op_that_needs_the_data_is_timed_on_it() -> None:
    work, _ = count(torch.unique, (torch.randint(0, 10, (1000,)),), {})
    assert work.host_s >= 0 and [(t.op_class, t.syncs) for t in work.tallies] == [
        ("unique", True)]
