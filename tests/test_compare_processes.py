"""`gpuvs.compare(…, processes=N)`: the user's function sampled in N worker processes, as
`gpuvs run-file` samples it, where a worker can import it by name; refused in one line
where it cannot."""

from __future__ import annotations

import threading

import pytest
from tests.importable import added, broken, doubled

import gpuvs
from gpuvs import stats
from gpuvs.analysis.speedup import data_of
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


def test_sizes_without_batch_resize_the_arguments_here_before_they_are_sent() -> None:
    r = gpuvs.compare(doubled, torch.rand(10, 3), sizes=[100, 1000], processes=2,
                      devices=CPU, budget_s=0.1)
    assert [(m.case.size, len(m.passes)) for m in r.measurements] == [(100, 2), (1000, 2)]


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


def _local_module() -> object:
    class Net(torch.nn.Module):
        def forward(self, x: object) -> object:
            return x

    return Net()


def test_a_module_is_pickled_to_the_workers_with_its_parameters() -> None:
    """`compare(model, x, processes=N)`: the module travels whole, its class imported by
    name, and each worker's copy moves with the data as compare's own does."""
    torch.manual_seed(0)
    model = torch.nn.Linear(64, 8)
    r = gpuvs.compare(model, torch.rand(16, 64), processes=2, devices=CPU, budget_s=0.1)
    (m,) = r.measurements
    assert m.status.value == "ok" and m.case.workload == "yours:Linear"
    assert len(m.passes) == 2
    r = gpuvs.compare({"forward": model.forward, "doubled": doubled}, torch.rand(8, 64),
                      processes=2, devices=CPU, budget_s=0.1)
    by = {m.case.workload: m for m in r.measurements}
    assert by["yours:forward"].status.value == "ok"  # a module's method: the module sent
    assert by["yours:doubled"].status.value == "wrong_result"  # against forward's output


@pytest.mark.parametrize(("call", "said"), [
    (lambda: gpuvs.compare(lambda x: x, torch.rand(4), processes=2),
     "lambda is not a function defined at the top of a module (a closure, a lambda, a "
     "method or a partial)"),
    (lambda: gpuvs.compare(_local_module(), torch.rand(4), processes=2),
     "Net is a module whose class Net is not defined at the top of a module, which a "
     "worker cannot import"),
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
    with pytest.raises(UsageError, match="processes= pickles the arguments for the worker "
                                         "processes, and pickling failed: TypeError"):
        gpuvs.compare(doubled, threading.Lock(), processes=2, devices=CPU)


@pytest.mark.parametrize("bad", [0, 33, 2.5, True, "5"])
def test_a_bad_process_count_is_one_line(bad: object) -> None:
    with pytest.raises(UsageError, match=r"processes= must be a whole number from 1 to 32; "
                                         f"got {bad!r}"):
        gpuvs.compare(doubled, torch.rand(4), processes=bad, devices=CPU)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_on_cuda_a_launch_bound_call_is_sampled_in_every_process_resident_and_end_to_end(
        ) -> None:
    """Where a launch-bound call's speed is decided per process: both GPU cases in all
    three, the arguments pickled from a CUDA tensor and copied back in for end-to-end."""
    r = gpuvs.compare(doubled, torch.rand(10_000, device="cuda"), processes=3, budget_s=0.3)
    gpu = {data_of(m.case): m for m in r.measurements if m.case.device == "cuda"}
    assert set(gpu) == {"resident", "end_to_end"}
    for m in gpu.values():
        assert m.status.value == "ok" and m.timer == "cuda_events", m.reason
        assert len(m.passes) == 3 and not m.one_process
    assert gpu["end_to_end"].counters["copied_bytes"] == 2 * 10_000 * 4
    assert r.speedup is not None and "outputs agree with cpu's" in repr(r)
