"""The wire: every request and event a child process sends or receives is one of a closed
set of types, written as one line and read back as the same value."""

from __future__ import annotations

import json

import pytest

from gpuvs.execute import wire
from gpuvs.machine.energy import EnergyOptions
from gpuvs.measuring.protocol import Budget
from gpuvs.model import Case, Caveat, Ceiling, Measurement, Status

CASE = Case("matmul", "correct", "torch", "cuda:0", "float32", 1024, (("shape", "square"),))
MEASURED = Measurement(CASE, Status.OK, samples=(1e-3, 1.1e-3), wall_samples=(1.2e-3,),
                       loops=3, first_call_s=0.2, timer="cuda_events",
                       counters={"flops": 2e9}, caveats=(Caveat.TF32_ON,), passes=(1, 1))
SAMPLING = wire.Sampling(0.5, "median-ci:rel=0.02", 4.0,
                         EnergyOptions(asked=True, idle_w=61.5, declared_w=None), loops=7)

EVERY_MESSAGE: list[wire.Message] = [
    wire.Preload((CASE,)),
    wire.Take(CASE, SAMPLING, samples_only=True, peaks=((512, 3e6), (1024, 1.2e7))),
    wire.Observe(CASE, "profile", SAMPLING),
    wire.RunFile(("mlp.py::step", "mlp.py::fused"), "inputs", (10, 100), ("cpu", "cuda"),
                 SAMPLING, 1e-3, explain=False),
    wire.Go((MEASURED,)),
    wire.Ready({"torch": "2.13.0", "rank_env": [{"NCCL_NVLS_ENABLE": "0"}]}),
    wire.Planned((CASE,)),
    wire.Started(CASE, replay=True),
    wire.Again("contended: measuring it again"),
    wire.Measured(MEASURED, fatal=True, resaved=True),
    wire.Observed({"kernels": 3.0, "busy_s": 1e-5}),
    wire.Explained((Ceiling("dispatch", "cuda:0", "torch", 5e-6, "s", "dispatch/…"),),
                   {"matmul/correct/torch/cuda:0/float32/64": {"kernels": 3.0}}),
    wire.Refused("mlp.py has no function 'step'"),
]


def test_every_message_type_is_covered_here() -> None:
    assert {type(m) for m in EVERY_MESSAGE} == {
        cls for cls in vars(wire).values()
        if isinstance(cls, type) and issubclass(cls, wire.Message) and cls is not wire.Message}


@pytest.mark.parametrize("message", EVERY_MESSAGE, ids=lambda m: m.kind)
def test_every_message_round_trips_as_one_line_of_json(message: wire.Message) -> None:
    line = wire.encode(message)
    assert "\n" not in line
    assert json.loads(line)["kind"] == message.kind
    assert wire.decode(line) == message


def test_a_line_that_is_no_message_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="not a gpuvs message"):
        wire.decode('{"measurement": {}}')
    with pytest.raises(ValueError, match="a take message without what it needs"):
        wire.decode('{"kind": "take"}')
    with pytest.raises(ValueError):
        wire.decode("print from a framework")


def test_a_runs_budget_is_shared_over_its_passes_in_one_place() -> None:
    from gpuvs.config import RunConfig

    sampling = wire.Sampling.of(RunConfig(budget_s=1.0, energy=True, cpu_watts=150.0), 2)
    assert sampling.budget_s == 0.5
    assert sampling.power == EnergyOptions(asked=True, declared_w=150.0)
    assert sampling.budget() == Budget(seconds=0.5)


def test_fixed_loops_make_every_sample_hold_exactly_that_many_calls() -> None:
    budget = wire.Sampling(0.2, loops=10).budget()
    assert budget.max_loops == 10 and budget.target_sample_s >= 1e6


def test_a_budget_shared_by_three_processes_or_more_is_not_stretched_in_one() -> None:
    alone, two, five = (wire.Sampling(budget_s=1.0).shared(n) for n in (1, 2, 5))
    assert alone.budget().remeasure and two.budget().remeasure
    assert not five.budget().remeasure and five.budget().seconds == pytest.approx(0.2)
    assert wire.decode(wire.encode(wire.Take(CASE, five))) == wire.Take(CASE, five)
