"""`gpuvs.compare`: your own function on each device, moved, checked, timed, summarised.

On this CPU-only machine the CPU side runs for real (torch, NumPy, an nn.Module) and CUDA
is `skipped` with the reason; the GPU side is tested on a GPU machine (marked `gpu`).
"""

from __future__ import annotations

import json
import sqlite3

import numpy as np
import pytest

import gpuvs
from gpuvs.errors import UsageError
from gpuvs.model import Status

torch = pytest.importorskip("torch")
QUICK = 0.03
CUDA = torch.cuda.is_available()
needs_cuda = pytest.mark.skipif(not CUDA, reason="no CUDA device")


def statuses(result: gpuvs.Comparison) -> dict[tuple[str, str], Status]:
    return {(m.case.device, m.case.param("data", "resident")): m.status
            for m in result.measurements}


@pytest.mark.skipif(CUDA, reason="this machine has a CUDA device")
@pytest.mark.parametrize("make", ["torch", "numpy", "module"])
def test_the_cpu_side_runs_and_cuda_is_skipped_with_its_reason(make: str) -> None:
    x = torch.rand(64, 8)
    net = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 4))
    fn, args = {"torch": (torch.tanh, (x,)), "numpy": (np.sin, (x.numpy(),)),
                "module": (net, (x,))}[make]
    result = gpuvs.compare(fn, *args, budget_s=QUICK)
    got = statuses(result)
    assert got[("cpu", "resident")] is Status.OK
    assert got[("cuda", "resident")] is Status.UNAVAILABLE
    text = repr(result)
    assert "cuda: skipped: " in text and "no CUDA device" in text
    assert result.speedup is None and result.crossover is None
    assert result.sizes == (64,)
    cpu = result.measurements[0]
    assert cpu.case.backend == ("numpy" if make == "numpy" else "torch")
    assert cpu.case.dtype == ("float32")
    assert cpu.summary is not None and cpu.first_call_s is not None


def test_a_modules_parameters_move_with_it_and_its_output_is_right() -> None:
    net = torch.nn.Linear(3, 2)
    x = torch.rand(5, 3)
    seen = []

    def forward(model: torch.nn.Module, t: torch.Tensor) -> torch.Tensor:
        seen.append(model)
        return model(t)

    result = gpuvs.compare(forward, net, x, devices=("cpu",), budget_s=QUICK)
    assert statuses(result)[("cpu", "resident")] is Status.OK
    assert seen[0] is not net  # a copy ran, with the same weights
    assert torch.equal(seen[0].weight, net.weight)


def test_the_callers_arguments_are_never_modified() -> None:
    x = torch.ones(4, requires_grad=True)
    a = np.ones(4)
    net = torch.nn.Linear(4, 1)
    before = net.weight.detach().clone()

    def scribble(t: torch.Tensor, arr: np.ndarray, model: torch.nn.Module) -> torch.Tensor:
        arr += 1
        with torch.no_grad():
            model.weight.mul_(2)
        out = (t * 3).sum()
        out.backward()
        return out.detach()

    gpuvs.compare(scribble, x, a, net, devices=("cpu",), budget_s=QUICK)
    assert x.grad is None and torch.equal(x.detach(), torch.ones(4))
    assert np.array_equal(a, np.ones(4))
    assert torch.equal(net.weight.detach(), before)


def test_an_in_place_function_still_compares_its_first_outputs() -> None:
    def scale(t: torch.Tensor) -> torch.Tensor:
        return t.mul_(5)  # every call scales the same buffer again

    result = gpuvs.compare(scale, torch.ones(8), devices=("cpu",), budget_s=QUICK)
    assert statuses(result)[("cpu", "resident")] is Status.OK


def test_sizes_resize_the_batch_axis_and_batch_builds_the_arguments() -> None:
    resized = gpuvs.compare(lambda t: t.sum(0), torch.rand(3, 2), sizes=[10, 100],
                            devices=("cpu",), budget_s=QUICK)
    assert resized.sizes == (10, 100)
    built = gpuvs.compare(lambda a, b: a @ b, batch=lambda n: (np.ones((n, 4)), np.ones(4)),
                          sizes="1e1:1e2", devices=("cpu",), budget_s=QUICK)
    assert built.sizes == (10, 100)
    assert [m.case.backend for m in built.measurements] == ["numpy", "numpy"]
    assert "sizes 10–100 (2)" in repr(built)


@pytest.mark.parametrize(("call", "message"), [
    (lambda: gpuvs.compare(lambda t: t, torch.ones(2), devices=("cpu", "tpu")),
     "unknown device 'tpu'; accepted: cpu, cuda, cuda:N"),
    (lambda: gpuvs.compare(lambda t: t, torch.ones(2), devices=("cpu", "cpu")),
     "device listed twice"),
    (lambda: gpuvs.compare(lambda t: t, torch.ones(2), budget_s=0),
     "budget_s must be a positive number"),
    (lambda: gpuvs.compare(lambda t: t, torch.ones(2), batch=lambda n: n),
     "pass the arguments or batch=, not both"),
    (lambda: gpuvs.compare(lambda t: t, 3, sizes=[10]), "sizes= without batch="),
    (lambda: gpuvs.compare(lambda t: t, batch=lambda n: 1 / 0, sizes=[10]),
     "batch(10) raised ZeroDivisionError"),
    (lambda: gpuvs.compare(lambda t: t, torch.ones(2), sizes=[0]),
     "sizes must be positive integers"),
    (lambda: gpuvs.compare(42), "compare needs a function to call"),
])
def test_bad_input_is_a_usage_error_naming_the_value(call, message: str) -> None:
    with pytest.raises(UsageError, match=message.replace("(", r"\(").replace(")", r"\)")):
        call()


def test_a_function_that_raises_is_named_with_its_error_device_and_line() -> None:
    def broken(t: torch.Tensor) -> torch.Tensor:
        raise ValueError("shapes do not line up")

    line = broken.__code__.co_firstlineno + 1
    with pytest.raises(UsageError, match=rf"^broken raised ValueError on cpu at \S*"
                                         rf"test_compare\.py:{line}: shapes do not line up$"
                       ) as info:
        gpuvs.compare(broken, torch.ones(2))
    assert isinstance(info.value.__cause__, ValueError)  # the traceback is kept


def test_the_line_named_is_the_users_not_the_librarys_it_called() -> None:
    def parse(t: torch.Tensor) -> object:
        return json.loads("{")  # raises deep inside the standard library's json

    line = parse.__code__.co_firstlineno + 1
    with pytest.raises(UsageError, match=rf"JSONDecodeError on cpu at \S*test_compare\.py:"
                                         rf"{line}: "):
        gpuvs.compare(parse, torch.ones(2))


def test_an_error_with_no_frame_of_the_users_names_no_line() -> None:
    with pytest.raises(UsageError, match=r"^matmul raised RuntimeError on cpu: "):
        gpuvs.compare(torch.matmul, torch.ones(2, 3), torch.ones(2, 3))


def test_arguments_that_cannot_be_moved_are_named() -> None:
    class Frame:
        def __array__(self) -> np.ndarray:
            return np.ones(2)

    with pytest.raises(UsageError, match=r"cannot move args\[1\] \(test_compare.*Frame\) to "
                                         "cpu: gpuvs moves torch tensors"):
        gpuvs.compare(lambda a, b: a, torch.ones(2), Frame())


def test_a_function_without_data_runs_on_the_cpu_and_says_why_not_on_cuda() -> None:
    result = gpuvs.compare(lambda n: sum(range(n)), 100, budget_s=QUICK)
    assert "nothing to move" in repr(result)


def test_save_writes_a_run_that_gpuvs_show_reads(db: str) -> None:
    result = gpuvs.compare(torch.tanh, torch.rand(32), devices=("cpu",), budget_s=QUICK)
    run_id = result.save(db)
    rows = sqlite3.connect(db).execute(
        "SELECT workload, device, status FROM measurements WHERE run_id = ?", (run_id,))
    assert rows.fetchall() == [("yours:tanh", "cpu", "ok")]
    from tests.helpers import invoke
    shown = invoke("show", run_id, "--db", db)
    assert shown.exit_code == 0 and "yours:tanh" in shown.output


def test_to_json_holds_the_raw_samples_and_table_and_plot_render() -> None:
    result = gpuvs.compare(torch.tanh, torch.rand(32), sizes=[8, 16], devices=("cpu",),
                           budget_s=QUICK)
    doc = json.loads(result.to_json())
    assert doc["run"]["config"]["kind"] == "yours" and doc["run"]["config"]["sizes"] == [8, 16]
    assert all(m["samples"] for m in doc["measurements"])
    assert "yours:tanh · correct · float32" in str(result.table())
    pytest.importorskip("matplotlib")
    fig = result.plot()
    assert fig.axes[0].get_xscale() == "log"


def test_explain_on_a_cpu_only_machine_says_what_it_could_not_compare() -> None:
    result = gpuvs.compare(torch.tanh, torch.rand(32), budget_s=QUICK)
    text = str(result.explain())
    if not CUDA:
        assert "cuda: skipped" in text and "nothing to compare the CPU with" in text


@pytest.mark.gpu
@needs_cuda
def test_on_cuda_both_resident_and_end_to_end_run_and_agree() -> None:
    x = torch.rand(2048, 2048)
    result = gpuvs.compare(torch.matmul, x, x, budget_s=0.3)
    got = statuses(result)
    assert got[("cuda", "resident")] is Status.OK and got[("cuda", "end_to_end")] is Status.OK
    assert result.speedup is not None and result.speedup_end_to_end is not None
    assert result.speedup.estimate > result.speedup_end_to_end.estimate  # copies cost
    assert "outputs agree with cpu's" in repr(result)
    gpu = [m for m in result.measurements if m.case.device == "cuda"]
    assert all(m.timer == "cuda_events" for m in gpu)
    # the end-to-end call copied both inputs in and the product out: three 16 MiB arrays
    copied = next(m for m in gpu if m.case.param("data") == "end_to_end")
    assert copied.counters["copied_bytes"] == 3 * x.nbytes


@pytest.mark.gpu
@needs_cuda
def test_on_cuda_outputs_that_disagree_are_a_wrong_result_naming_where() -> None:
    def biased(t: torch.Tensor) -> dict[str, torch.Tensor]:
        return {"y": t * 2 + (1.0 if t.is_cuda else 0.0)}

    result = gpuvs.compare(biased, torch.rand(1000), budget_s=0.1)
    m = next(m for m in result.measurements if m.case.device == "cuda")
    assert m.status is Status.WRONG_RESULT
    assert "output['y'] on cuda differs from cpu: relative error" in m.reason
    assert "float32 tolerance 2e-03" in m.reason
    assert result.failed


@pytest.mark.gpu
@needs_cuda
def test_on_cuda_a_function_that_fails_only_there_is_recorded_crashed() -> None:
    def cpu_only(t: torch.Tensor) -> torch.Tensor:
        return t + torch.ones(t.shape)  # a tensor made on the CPU, whatever t's device

    result = gpuvs.compare(cpu_only, torch.rand(100), budget_s=0.1)
    m = next(m for m in result.measurements if m.case.device == "cuda")
    assert m.status is Status.CRASHED
    assert m.reason.startswith("cpu_only raised RuntimeError on cuda")


@pytest.mark.gpu
@needs_cuda
def test_on_cuda_a_numpy_function_runs_through_cupy() -> None:
    pytest.importorskip("cupy")
    result = gpuvs.compare(np.sin, np.random.default_rng(0).random(1 << 20), budget_s=0.2)
    cuda = [m for m in result.measurements if m.case.device == "cuda"]
    assert {m.case.backend for m in cuda} == {"cupy"}
    assert all(m.status is Status.OK for m in cuda)


def test_out_of_memory_is_recorded_and_stops_that_series() -> None:
    def hog(t: torch.Tensor) -> torch.Tensor:
        if len(t) > 50:  # what torch raises when the host allocator fails
            raise RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried to "
                               "allocate 64000000000 bytes")
        return t * 2

    result = gpuvs.compare(hog, batch=lambda n: torch.rand(n), sizes=[10, 100, 1000],
                           devices=("cpu",), budget_s=QUICK)
    assert [m.status for m in result.measurements] == [Status.OK, Status.OOM, Status.SKIPPED]
    assert result.measurements[2].reason == "not run: size 100 already ran out of memory"
    assert "cpu at 100: oom: out of memory: RuntimeError: DefaultCPUAllocator" in repr(result)


def test_each_case_is_announced_before_its_result_and_done_cases_are_not_run_again() -> None:
    """What run-file's worker relies on: the parent hears what a size's cases are called
    and which case is in flight, and a fresh worker given the cases an earlier one
    finished carries on from there."""
    from gpuvs.yours.compare import run
    events: list[tuple[str, int]] = []
    built: list[int] = []

    def batch(n: int) -> torch.Tensor:
        built.append(n)
        return torch.rand(n)

    def compare(done: tuple = ()) -> gpuvs.Comparison:
        return run(torch.tanh, (), {}, devices=("cpu",), batch=batch, sizes=[10, 100],
                   budget_s=QUICK, done=done,
                   on_plan=lambda cases: events.append(("plan", cases[0].size)),
                   on_start=lambda c: events.append(("start", c.size)),
                   on_result=lambda m: events.append(("result", m.case.size)))

    first = compare()
    assert events == [("plan", 10), ("start", 10), ("result", 10),
                      ("plan", 100), ("start", 100), ("result", 100)]
    events.clear()
    built.clear()
    again = compare(done=first.measurements[:1])
    assert events == [("plan", 100), ("start", 100), ("result", 100)]
    assert built == [100]  # size 10 was done: its inputs are not built again
    assert again.measurements[0] is first.measurements[0]
    assert [m.case.size for m in again.measurements] == [10, 100]


@pytest.mark.gpu
@needs_cuda
def test_a_gpu_run_after_an_earlier_worker_timed_the_cpu_is_still_checked_against_it() -> None:
    from gpuvs.yours.compare import run
    def biased(t: torch.Tensor) -> torch.Tensor:
        return t * 2 + (1.0 if t.is_cuda else 0.0)

    x = torch.rand(1000)
    cpu = run(biased, (x,), {}, devices=("cpu",), budget_s=0.1)
    result = run(biased, (x,), {}, devices=("cpu", "cuda"), budget_s=0.1,
                 done=cpu.measurements)
    m = next(m for m in result.measurements if m.case.device == "cuda")
    assert m.status is Status.WRONG_RESULT and "differs from cpu" in m.reason


def test_a_sweep_from_python_shows_its_progress_on_stderr_and_one_size_does_not(capsys
                                                                             ) -> None:
    import torch

    import gpuvs

    gpuvs.compare(lambda x: x * 5, batch=lambda n: torch.rand(n), sizes=[10, 100],
                  devices=["cpu"], budget_s=0.02)
    swept = capsys.readouterr()
    assert swept.out == ""
    assert "[1/2] yours:lambda/correct/torch/cpu/float32/10 ok" in swept.err
    assert "[2/2] yours:lambda/correct/torch/cpu/float32/100 ok" in swept.err
    gpuvs.compare(lambda x: x * 5, torch.rand(10), devices=["cpu"], budget_s=0.02)
    assert capsys.readouterr().err == ""


def _rows_softmax(x: torch.Tensor) -> torch.Tensor:  # a Python loop, a row at a time
    return torch.stack([torch.softmax(row, dim=0) for row in x])


def _softmax(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x, dim=1)


def test_several_implementations_are_timed_checked_against_the_first_and_ranked() -> None:
    """Issue 42: "which of my versions, on which device, from what size on", in one call."""
    result = gpuvs.compare({"loop": _rows_softmax, "vectorised": _softmax},
                           batch=lambda n: torch.rand(n, 32), sizes=[16, 256],
                           devices=["cpu"], budget_s=QUICK)
    assert result.implementations == ("loop", "vectorised") and result.name == "loop, vectorised"
    assert [(m.case.workload, m.case.size) for m in result.measurements] == [
        ("yours:loop", 16), ("yours:vectorised", 16), ("yours:loop", 256),
        ("yours:vectorised", 256)]
    assert all(m.status is Status.OK for m in result.measurements)
    assert all(m.counters["rel_error"] < 1e-5 for m in result.measurements[1::2])
    at_256 = result.winners[-1]
    loop, vectorised = result.measurements[2:]
    assert at_256.size == 256 and at_256.next is not None
    assert sorted(map(id, (at_256.fastest, at_256.next))) == sorted(map(id, (loop, vectorised)))
    assert at_256.fastest.summary.median <= at_256.next.summary.median
    # Which one wins is this machine's to say (on the shared 2-core box torch's two threads
    # made the one call 8× slower than 256 single-threaded ones): the table says it right.
    assert at_256.low <= at_256.ratio <= at_256.high and at_256.ratio >= 1
    text = repr(result)
    assert text.startswith("gpuvs.compare: loop, vectorised · float32 · sizes 16–256 (2)")
    assert "outputs agree with loop on cpu's" in text
    assert text.splitlines()[-1].startswith(
        f"at 256: {at_256.fastest.case.workload.removeprefix('yours:')} cpu fastest, ")
    assert repr(result["loop"]).startswith("gpuvs.compare: loop · float32 · sizes 16–256")
    (side,) = [t for t in result.table().tables if "side by side" in t.title]
    assert side.columns == ("size", "loop cpu", "vectorised cpu", "fastest",
                            "over the next (95 % CI)", "intervals")
    fastest = at_256.fastest.case.workload.removeprefix("yours:")
    assert side.rows[-1][:1] == ("256",) and side.rows[-1][3] == f"{fastest} cpu"
    doc = json.loads(result.to_json())
    assert [w["fastest"]["implementation"] for w in doc["winners"]][-1] == fastest
    assert doc["run"]["config"]["implementations"] == ["loop", "vectorised"]


def test_an_implementation_that_disagrees_is_a_wrong_result_and_one_that_raises_crashed(
        ) -> None:
    def off_by_one(x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=1) + 1

    def broken(x: torch.Tensor) -> torch.Tensor:
        raise ValueError("not written yet")

    result = gpuvs.compare({"vectorised": _softmax, "off": off_by_one, "broken": broken},
                           torch.rand(8, 4), devices=["cpu"], budget_s=QUICK)
    got = {m.case.workload: m for m in result.measurements}
    assert got["yours:vectorised"].status is Status.OK
    assert got["yours:off"].status is Status.WRONG_RESULT
    assert got["yours:off"].reason.startswith("output on cpu (off) differs from cpu "
                                              "(vectorised)")
    assert got["yours:broken"].status is Status.CRASHED
    assert got["yours:broken"].reason.startswith("broken raised ValueError on cpu at ")
    # the reference itself raising leaves nothing to compare: one line naming it
    with pytest.raises(UsageError, match=r"^broken raised ValueError on cpu at "):
        gpuvs.compare({"broken": broken, "vectorised": _softmax}, torch.rand(8, 4),
                      devices=["cpu"], budget_s=QUICK)


@pytest.mark.parametrize(("fn", "extra", "message"), [
    ({}, {}, "compare needs a function to call; got an empty mapping"),
    ({"a": _softmax, "b": 3}, {}, "compare needs a function to call; got int 3"),
    ({"": _softmax}, {}, "implementations are named by non-empty strings; got ''"),
    ({"a": _softmax}, {"name": "x"}, "name= names one function; several are named by "
                                     "their keys"),
])
def test_several_implementations_badly_named_are_one_usage_error(fn, extra, message: str
                                                                  ) -> None:
    with pytest.raises(UsageError) as found:
        gpuvs.compare(fn, torch.rand(4, 4), devices=["cpu"], budget_s=QUICK, **extra)
    assert str(found.value).startswith(message)


@pytest.mark.gpu
@needs_cuda
def test_on_cuda_several_implementations_are_ranked_by_their_resident_cases() -> None:
    result = gpuvs.compare({"loop": _rows_softmax, "vectorised": _softmax},
                           torch.rand(512, 64), budget_s=0.2)
    (w,) = result.winners
    assert w.fastest.case.param("data", "resident") == "resident"
    assert w.fastest.case.workload == "yours:vectorised"
    (side,) = [t for t in result.table().tables if "side by side" in t.title]
    assert "vectorised cuda end-to-end" in side.columns
