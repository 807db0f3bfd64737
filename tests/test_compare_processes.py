"""`gpuvs.compare(…, processes=N)`: the user's function sampled in N worker processes, as
`gpuvs run-file` samples it, where a worker can import it by name; refused in one line
where it cannot."""

from __future__ import annotations

import threading

import pytest
from tests.importable import added, broken, doubled

import gpuvs
from gpuvs import stats
from gpuvs.errors import UsageError

torch = pytest.importorskip("torch")
CPU = ("cpu",)


def test_each_case_is_sampled_in_every_process_and_summed_up_over_them() -> None:
    r = gpuvs.compare(doubled, torch.rand(1000), processes=3, devices=CPU, budget_s=0.3)
    (m,) = r.measurements
    assert m.status.value == "ok" and m.case.workload == "yours:doubled"
    assert len(m.passes) == 3 and not m.one_process and sum(m.passes) == len(m.samples)
    medians = stats.group_medians(m.samples, m.passes)
    assert m.summary.median == pytest.approx(stats.median_of(medians))
    assert m.summary.ci_low <= min(medians) and max(medians) <= m.summary.ci_high
    text = repr(r)
    assert "intervals: over the processes that sampled each case (up to 3)" in text, text


def test_implementations_and_sizes_built_here_are_compared_in_the_workers() -> None:
    """`batch=` is the caller's (a lambda here): each size's arguments are built in this
    process and pickled to the workers."""
    r = gpuvs.compare({"doubled": doubled, "added": added},
                      batch=lambda n: (torch.rand(n),), sizes=[100, 1000], processes=2,
                      devices=CPU, budget_s=0.2)
    assert r.implementations == ("doubled", "added") and r.sizes == (100, 1000)
    assert all(len(m.passes) == 2 for m in r.measurements)
    assert all(m.counters["rel_error"] == 0 for m in r.measurements
               if m.case.workload == "yours:added")  # checked against doubled's output
    assert [w.size for w in r.winners] == [100, 1000]


def test_without_processes_the_call_is_timed_here_and_says_so() -> None:
    r = gpuvs.compare(doubled, torch.rand(1000), devices=CPU, budget_s=0.05)
    assert r.measurements[0].one_process
    assert "intervals: one process's each; a new process may land outside them" in repr(r)
    assert gpuvs.compare(doubled, torch.rand(10), devices=CPU, budget_s=0.05,
                         processes=1).measurements[0].one_process


def test_a_function_that_raises_in_the_workers_is_one_clear_error() -> None:
    with pytest.raises(UsageError, match="broken raised ValueError on cpu at .*importable"
                                         r"\.py:\d+: no such thing"):
        gpuvs.compare(broken, torch.rand(10), processes=2, devices=CPU, budget_s=0.05)


@pytest.mark.parametrize(("call", "said"), [
    (lambda: gpuvs.compare(lambda x: x, torch.rand(4), processes=2),
     "lambda is not a function defined at the top of a module (a closure, a lambda, a "
     "method or a partial)"),
    (lambda: gpuvs.compare(torch.nn.Linear(4, 4), torch.rand(4), processes=2),
     "Linear is a module (or its method), which a worker cannot import by name"),
    (lambda: gpuvs.compare(doubled, x=torch.rand(4), processes=2),
     "keyword arguments (x) are not passed to worker processes; pass them positionally"),
    (lambda: gpuvs.compare({"doubled(x)": doubled}, torch.rand(4), processes=2),
     "the implementation name 'doubled(x)' is not a Python identifier"),
])
def test_what_a_worker_cannot_import_is_refused_saying_why(call, said: str) -> None:
    with pytest.raises(UsageError) as e:
        call()
    assert str(e.value).startswith("processes=2 times the call in worker processes, which "
                                   f"import it by name: {said}"), str(e.value)
    assert str(e.value).endswith("; leave processes= out to time it in this process")


def test_arguments_that_do_not_pickle_are_refused_saying_so() -> None:
    with pytest.raises(UsageError, match="processes= sends the arguments to worker "
                                         "processes, and they do not pickle: TypeError"):
        gpuvs.compare(doubled, threading.Lock(), processes=2, devices=CPU)


@pytest.mark.parametrize("bad", [0, 33, 2.5, True, "5"])
def test_a_bad_process_count_is_one_line(bad: object) -> None:
    with pytest.raises(UsageError, match=r"processes= must be a whole number from 1 to 32; "
                                         f"got {bad!r}"):
        gpuvs.compare(doubled, torch.rand(4), processes=bad, devices=CPU)
