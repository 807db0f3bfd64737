"""Each case against its bound's calibration probe: which probe a case follows, and the
verdict once the two runs' probes are set side by side. The runs are constructed, so that
every ratio is known; tests/test_history.py holds the same to real runs."""

from __future__ import annotations

import re
from collections.abc import Mapping

import numpy as np
import pytest

from gpuvs.analysis import calibration
from gpuvs.analysis.regression import FAIL, PASS, compare, gate, machine, unjudged
from gpuvs.model import Case, Caveat, Measurement, Status
from gpuvs.workloads.calibration import probe

RNG = np.random.default_rng(40)
CPU_FLOPS = 2.0 * 256**3  # the cpu probe's product
HOST_BYTES = 2.0 * 4 * (1 << 24)  # the host copy's bytes read and written
GPU_FLOPS = 2.0 * 2048**3
GPU_BYTES = 2.0 * 4 * (1 << 25)


def _m(case: Case, median: float, counters: Mapping[str, float] | None = None,
       caveats: tuple[Caveat, ...] = (), apart: float = 0.0) -> Measurement:
    """Samples from two processes whose medians lie `apart` either side of `median`."""
    halves = [median * (1 + side * apart) * (1 + RNG.normal(0, 0.004, 40)) for side in (-1, 1)]
    samples = tuple(float(x) for half in halves for x in half)
    return Measurement(case, Status.OK, samples=samples, workload_version="v1",
                       counters=dict(counters or {}), caveats=caveats, passes=(40, 40))


def _probes(launch: float = 1.0, cpu: float = 1.0, memory: float = 1.0, gpu: float = 1.0,
            contended: str = "", apart: float = 0.0) -> list[Measurement]:
    """A machine's calibration, each probe's time scaled by its factor: 1 µs to launch
    NumPy's op, 5 µs torch's, 15 µs torch's on the GPU; 100 GFLOP/s on all threads, 60 on
    one; 13 GB/s of host memory; 50 TFLOP/s and 3 TB/s on the device; 10 GB/s each way."""
    def one(case: Case, t: float, factor: float, **counters: float) -> Measurement:
        busy = (Caveat.CONTENDED,) if case.param("bound") == contended else ()
        return _m(case, t * factor, counters, busy, apart)

    return [
        one(probe("launch", "numpy", "cpu"), 1e-6, launch, launches=1),
        one(probe("launch", "torch", "cpu"), 5e-6, launch, launches=1),
        one(probe("launch", "torch", "cuda:0"), 15e-6, launch, launches=1),
        one(probe("cpu", "numpy", "cpu", "1"), CPU_FLOPS / 60e9, cpu, flops=CPU_FLOPS),
        one(probe("cpu", "numpy", "cpu", "all"), CPU_FLOPS / 100e9, cpu, flops=CPU_FLOPS),
        one(probe("host_memory", "numpy", "cpu"), HOST_BYTES / 13e9, memory,
            bytes_moved=HOST_BYTES),
        one(probe("device_compute", "torch", "cuda:0"), GPU_FLOPS / 50e12, gpu,
            flops=GPU_FLOPS, busy_graph_s=GPU_FLOPS / 50e12),
        one(probe("device_memory", "torch", "cuda:0"), GPU_BYTES / 3e12, gpu,
            bytes_moved=GPU_BYTES, busy_graph_s=GPU_BYTES / 3e12),
        one(probe("transfer", "torch", "cuda:0"), 2 * 16e6 / 10e9, 1.0,
            bytes_moved=2 * 16 * 2**20),
    ]


def _case(backend: str, device: str, size: int, *params: tuple[str, str]) -> Case:
    return Case("w", "correct", backend, device, "float32", size, tuple(params))


# A one-element op's loop, a product, a stream over memory, on the CPU; on the GPU a
# launch-bound call (busy 2 of its 20 µs), a big product, and the same product paying
# its copies (end-to-end, nine tenths of its time copying).
TINY = _case("numpy", "cpu", 1)
PRODUCT = _case("numpy", "cpu", 1024)
STREAM = _case("numpy", "cpu", 10**7)
LAUNCHED = _case("torch", "cuda:0", 1000, ("data", "resident"))
GPU_PRODUCT = _case("torch", "cuda:0", 8192, ("data", "resident"))
COPIED = _case("torch", "cuda:0", 8192, ("data", "end_to_end"))


def _cases(factor: float = 1.0, threads: float = 2.0, **only: float) -> list[Measurement]:
    """The cases above, each time scaled by `factor` or by its own in `only`."""
    def f(name: str) -> float:
        return only.get(name, factor)

    return [
        _m(TINY, 1.4e-6 * f("tiny"), {"launches": 1, "threads": threads}),
        _m(PRODUCT, 25e-3 * f("product"), {"flops": 2.0 * 1024**3,
                                           "bytes_moved": 3 * 4.0 * 1024**2,
                                           "threads": threads}),
        _m(STREAM, 7e-3 * f("stream"), {"flops": 1e7, "bytes_moved": 8e7,
                                        "threads": threads}),
        _m(LAUNCHED, 20e-6 * f("launched"), {"busy_graph_s": 2e-6}),
        _m(GPU_PRODUCT, 22e-3 * f("gpu_product"), {"flops": 2.0 * 8192**3,
                                                   "bytes_moved": 3 * 4.0 * 8192**2,
                                                   "busy_graph_s": 21e-3}),
        _m(COPIED, 220e-3 * f("copied"), {"flops": 2.0 * 8192**3,
                                          "bytes_moved": 3 * 4.0 * 8192**2}),
    ]


def _bound_of(ms: list[Measurement], probes: list[Measurement]) -> dict[str, str]:
    return {key: calibration.label(p.case)
            for key, p in calibration.bounds(ms, probes).items()}


def test_each_case_follows_the_probe_of_what_limits_it() -> None:
    found = _bound_of(_cases(), _probes())
    assert found == {
        TINY.key: "launch (numpy cpu)",  # 1.4 µs: within twice one op's 1 µs
        PRODUCT.key: "CPU arithmetic, all threads (numpy cpu)",  # 171 FLOP per byte
        STREAM.key: "host memory (numpy cpu)",  # 0.125 FLOP per byte
        LAUNCHED.key: "launch (torch cuda:0)",  # the GPU busy a tenth of the call
        GPU_PRODUCT.key: "device arithmetic (torch cuda:0)",
        COPIED.key: "host↔device round trip (torch cuda:0)",  # 90 % of it copying
    }


def test_an_end_to_end_call_whose_copies_are_latency_sized_follows_the_launch_probe() -> None:
    # 8 KB in and out: the copies take 30 of its 50 µs, but no bandwidth sets them
    small = _case("torch", "cuda:0", 1000, ("data", "end_to_end"))
    ms = [*_cases(), _m(small, 50e-6, {"copied_bytes": 8000.0})]
    assert _bound_of(ms, _probes())[small.key] == "launch (torch cuda:0)"


def test_an_end_to_end_call_whose_copies_are_big_follows_the_round_trip_probe() -> None:
    big = _m(COPIED, 220e-3, {"copied_bytes": 3 * 4.0 * 8192**2})
    ms = [*_cases(), big]
    found = _bound_of([m for m in ms if m.case != COPIED or m is big], _probes())
    assert found[COPIED.key] == "host↔device round trip (torch cuda:0)"


def test_an_end_to_end_call_mostly_working_follows_its_resident_twins_probe() -> None:
    # a launch-bound call whose small copies take a third of it: the launches set its pace
    copied = _case("torch", "cuda:0", 1000, ("data", "end_to_end"))
    ms = [*_cases(), _m(copied, 30e-6, {"copied_bytes": 8000.0})]
    assert _bound_of(ms, _probes())[copied.key] == "launch (torch cuda:0)"


def test_a_case_on_one_thread_follows_the_one_thread_probe() -> None:
    found = _bound_of(_cases(threads=1.0), _probes())
    assert found[PRODUCT.key] == "CPU arithmetic, 1 thread (numpy cpu)"


def test_a_case_that_counts_no_work_and_is_no_launch_has_no_bound() -> None:
    slow = _m(_case("numpy", "cpu", 7), 3e-3)  # 3 ms, no FLOPs or bytes counted
    assert calibration.bounds([slow], _probes()) == {}


def test_a_contended_probe_explains_no_case() -> None:
    found = _bound_of(_cases(), _probes(contended="launch"))
    assert TINY.key not in found and LAUNCHED.key not in found


def _run(factor: float = 1.0, probes: list[Measurement] | None = None, **only: float
         ) -> list[Measurement]:
    return [*(probes if probes is not None else _probes()), *_cases(factor, **only)]


def _verdicts(a: list[Measurement], b: list[Measurement]) -> dict[str, str]:
    return {c.key: c.verdict for c in compare(a, b)[0]}


def test_a_case_as_much_slower_as_its_probe_is_the_machines() -> None:
    """The issue's example: a launch-bound case 35 % slower on a machine whose launch
    probe is 35 % slower is `machine`, not `slower`, and the gate passes."""
    a = _run()
    b = _run(probes=_probes(launch=1.35), tiny=1.35, launched=1.35)
    changes = {c.key: c for c in compare(a, b)[0]}
    tiny = changes[TINY.key]
    assert (tiny.case_verdict, tiny.verdict) == ("slower", "machine")
    assert tiny.machine is not None and tiny.machine.probe == "launch (numpy cpu)"
    assert tiny.machine.ratio == pytest.approx(1.35, rel=0.01)
    assert tiny.machine.residual == pytest.approx(1.0, abs=0.02)
    assert changes[LAUNCHED.key].verdict == "machine"
    assert changes[PRODUCT.key].verdict == "same"  # its probe did not move, nor did it
    judged = gate(a, b)
    assert judged.verdict == PASS
    assert judged.exit_reason == ("no case slower by more than 5 % beyond what the machine "
                                  "explains (2 case(s) machine)")


def test_a_planted_slowdown_on_the_same_machine_still_fails_the_gate() -> None:
    a, b = _run(), _run(probes=_probes(), tiny=1.2)
    tiny = next(c for c in compare(a, b)[0] if c.key == TINY.key)
    assert tiny.verdict == "slower" and tiny.machine is not None
    assert tiny.machine.ratio == pytest.approx(1.0, abs=0.01)
    judged = gate(a, b)
    assert judged.verdict == FAIL
    said = re.fullmatch(r"1 case\(s\) slower by more than 5 % with the whole CI above it: "
                        rf"{TINY.key} \(([\d.]+)×\) against the machine's launch "
                        r"\(numpy cpu\) ([\d.]+)×", judged.exit_reason)
    assert said is not None, judged.exit_reason
    assert float(said[1]) == pytest.approx(1.2, rel=0.02)  # the slowdown planted
    assert float(said[2]) == pytest.approx(1.0, abs=0.01)  # the machine unchanged


def test_a_slowdown_beyond_the_machines_is_slower() -> None:
    a, b = _run(), _run(probes=_probes(cpu=1.3), product=1.7)
    product = next(c for c in compare(a, b)[0] if c.key == PRODUCT.key)
    assert product.verdict == "slower" and product.machine is not None
    assert product.machine.residual == pytest.approx(1.7 / 1.3, rel=0.02)
    assert gate(a, b).verdict == FAIL


def test_a_faster_machine_explains_a_faster_case() -> None:
    verdicts = _verdicts(_run(), _run(probes=_probes(memory=0.7), stream=0.7))
    assert verdicts[STREAM.key] == "machine"


def test_the_machine_explains_a_change_and_never_makes_one() -> None:
    """A case the same in both stays `same` on a machine whose probe moved: its bound may
    be another than the one read (a cache, not memory), and a gate never fails on a
    change that was not measured."""
    verdicts = _verdicts(_run(), _run(probes=_probes(memory=0.7)))
    assert verdicts[STREAM.key] == "same"


def test_a_case_whose_probe_was_contended_is_judged_on_its_own() -> None:
    a = _run()
    b = _run(probes=_probes(launch=1.35, contended="launch"), tiny=1.35)
    tiny = next(c for c in compare(a, b)[0] if c.key == TINY.key)
    assert tiny.verdict == "slower" and tiny.machine is None
    launch = probe("launch", "numpy", "cpu").key
    assert next(p for p in machine(a, b) if p.key == launch).contended


def test_a_run_without_a_calibration_is_judged_as_before() -> None:
    a, b = _cases(), _cases(tiny=1.35)
    assert machine(a, b) == []
    tiny = next(c for c in compare(a, b)[0] if c.key == TINY.key)
    assert (tiny.verdict, tiny.machine) == ("slower", None)
    assert _verdicts(_run(), _cases(tiny=1.35))[TINY.key] == "slower"  # one side has none


def test_a_residual_the_runs_cannot_place_fails_the_gate_as_unjudged() -> None:
    """Slower than its probe by 12 %, with probes whose processes lay 5 % apart: the
    probe's 30 % is clear, the case's 12 % beyond it is not. Not passed as the machine's,
    nor called slower."""
    a = _run(probes=_probes(apart=0.05))
    b = _run(probes=_probes(launch=1.3, apart=0.05), tiny=1.3 * 1.12)
    tiny = next(c for c in compare(a, b)[0] if c.key == TINY.key)
    assert tiny.verdict == "ambiguous" and tiny.machine is not None
    assert tiny.machine.residual > 1.05 and tiny.machine.residual_low < 1.05
    assert "slower than the machine's launch (numpy cpu)" in unjudged(tiny, 0.05)
    assert gate(a, b).verdict == FAIL


def test_a_case_slower_on_its_own_that_its_probe_explains_only_in_part_fails_the_gate(
        ) -> None:
    """Seen on the 2-core box with other tests busy: a case planted 4× slower against a
    one-thread CPU probe 2.9× slower. The probe's processes lay 25 % apart, so the residual
    (1.4×) reached below 1 and the gate passed it as unresolved; the case is slower beyond
    doubt on its own, and the machine accounts for only part of it."""
    a = _run(probes=_probes(apart=0.25))
    b = _run(probes=_probes(launch=2.9, apart=0.25), tiny=4.0)
    tiny = next(c for c in compare(a, b)[0] if c.key == TINY.key)
    assert tiny.verdict == "ambiguous" and tiny.machine is not None
    assert tiny.low > 1.05 and tiny.machine.residual > 1.05 > 1 > tiny.machine.residual_low
    assert "explains only part of it" in unjudged(tiny, 0.05)
    judged = gate(a, b)
    assert judged.verdict == FAIL and "explains only part of it" in judged.exit_reason
    # the machine's change alone, with the case's within the threshold of it, still passes
    assert gate(a, _run(probes=_probes(launch=2.9, apart=0.25), tiny=2.9)).verdict == PASS


def test_a_probe_whose_own_change_is_ambiguous_explains_nothing() -> None:
    """Processes 20 % either side: the launch probe's 35 % cannot be told from its noise,
    so a case 35 % slower is judged on its own, and fails."""
    a = _run(probes=_probes(apart=0.2))
    b = _run(probes=_probes(launch=1.35, apart=0.2), tiny=1.35)
    launch = next(p for p in machine(a, b) if p.key == probe("launch", "numpy", "cpu").key)
    assert launch.verdict == "ambiguous"
    tiny = next(c for c in compare(a, b)[0] if c.key == TINY.key)
    assert (tiny.verdict, tiny.machine) == ("slower", None)


def test_the_calibrations_side_by_side_name_each_probe() -> None:
    probes = machine(_run(), _run(probes=_probes(gpu=0.7)))
    by = {p.series: p for p in probes}
    assert len(probes) == 9
    assert by["device memory (torch cuda:0)"].ratio == pytest.approx(0.7, rel=0.01)
    assert by["device memory (torch cuda:0)"].verdict == "faster"
    assert by["launch (numpy cpu)"].verdict == "same"


def test_a_probe_is_no_case_of_the_gate() -> None:
    """A probe that failed in B leaves its bound's cases to be judged on their own; it
    fails nothing itself."""
    b = _run()
    b[0] = Measurement(b[0].case, Status.CRASHED, reason="killed")
    judged = gate(_run(), b)
    assert judged.verdict == PASS and judged.not_measured == ()
    assert all(c.key != b[0].case.key for c in judged.changes)
