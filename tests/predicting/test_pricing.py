"""The model's arithmetic on a synthetic profile: each expected time worked out by hand
from its round ceilings (50 TFLOP/s float32, 2 TB/s, 10 µs a launch, 10 GB/s in and
5 GB/s out, 20 µs a copy's sync)."""

from __future__ import annotations

import dataclasses
import math

import pytest
from tests.predicting.samples import op_costs, synthetic

from gpuvs.analysis.roofline import Bound
from gpuvs.errors import UsageError
from gpuvs.model import Case, Ceiling, OpCost
from gpuvs.predicting import pricing
from gpuvs.predicting.pricing import FRESH
from gpuvs.predicting.work import Tally, Work, of_case


def test_a_big_product_is_compute_bound_at_the_dtype_peak() -> None:
    e = pricing.estimate(Work(flops=1e12, bytes=1e9), synthetic())
    assert e.seconds == pytest.approx(1e12 / 50e12)
    assert e.dominant is Bound.COMPUTE and e.regime == "compute"
    assert e.why == "compute-bound: 1e+12 FLOP at 50 TFLOP/s (float32)"


def test_float32_on_tf32_units_uses_the_tf32_peak() -> None:
    e = pricing.estimate(Work(flops=1e12, bytes=1e9, tf32=True), synthetic())
    assert e.seconds == pytest.approx(1e12 / 400e12)
    assert "(float32 as TF32)" in e.why


def test_a_pass_over_memory_is_memory_bound_at_the_copy_bandwidth() -> None:
    e = pricing.estimate(Work(flops=1e8, bytes=8e8), synthetic())
    assert e.seconds == pytest.approx(8e8 / 2e12)  # 400 µs, over the 10 µs launch
    assert e.dominant is Bound.MEMORY
    assert e.why.startswith("memory-bound: 763 MiB at 2 TB/s")


def test_short_kernels_wait_on_the_host_launching_them() -> None:
    e = pricing.estimate(Work(flops=3e3, bytes=1.2e4, launches=3), synthetic())
    assert e.seconds == pytest.approx(3 * 10e-6)
    assert e.dominant is Bound.LAUNCH
    assert e.why.startswith("launch-bound: 3 launch(es) × 10 µs of host dispatch outweigh")


def test_each_backend_launches_at_its_own_dispatch_cost() -> None:
    e = pricing.estimate(Work(bytes=1e3, launches=2, backend="jax"), synthetic())
    assert e.seconds == pytest.approx(2 * 100e-6)


def test_an_op_family_launches_at_its_own_measured_cost() -> None:
    profile = dataclasses.replace(synthetic(), ceilings=(
        *synthetic().ceilings, Ceiling("per-op dispatch cost (create)", "cuda:0", "jax",
                                       300e-6, "s", "")))
    e = pricing.estimate(Work(bytes=1e3, backend="jax", op_family="create"), profile)
    assert e.seconds == pytest.approx(300e-6)
    assert "× 300 µs of host dispatch (an array creation's) outweigh" in e.why


def test_a_profile_without_the_family_prices_it_as_an_elementwise_op() -> None:
    e = pricing.estimate(Work(bytes=1e3, backend="jax", op_family="product"), synthetic())
    assert e.seconds == pytest.approx(100e-6)
    assert "× 100 µs of host dispatch outweigh" in e.why


def test_an_end_to_end_call_adds_its_copies_to_the_work() -> None:
    work = Work(flops=2e9, bytes=1.2e7, copied_in=(4e6, 4e6), copied_out=(4e6,))
    e = pricing.estimate(work, synthetic())
    copies = 8e6 / 10e9 + 4e6 / 5e9 + 3 * 20e-6   # 800 + 800 + 60 µs
    assert e.terms[Bound.TRANSFER] == pytest.approx(copies)
    assert e.seconds == pytest.approx(copies + max(2e9 / 50e12, 1.2e7 / 2e12, 10e-6))
    assert e.dominant is Bound.TRANSFER and e.regime == "transfer"
    assert "3 copies × 20 µs" in e.why


def test_copies_go_at_the_backends_own_rates_where_the_profile_measured_them() -> None:
    own = (Ceiling("h2d (from NumPy)", "cuda:0", "jax", 4e9, "B/s", ""),
           Ceiling("d2h (to NumPy)", "cuda:0", "jax", 2e9, "B/s", ""),
           Ceiling("d2h (to NumPy, fresh pages)", "cuda:0", "jax", 1e9, "B/s", ""))
    profile = dataclasses.replace(synthetic(), ceilings=(*synthetic().ceilings, *own))
    small = Work(bytes=1e3, copied_in=(4e6,), copied_out=(4e6,), backend="jax")
    e = pricing.estimate(small, profile)  # 1 ms in, 2 ms out, 2 × 100 µs of sync
    assert e.terms[Bound.TRANSFER] == pytest.approx(4e6 / 4e9 + 4e6 / 2e9 + 2 * 100e-6)
    big = dataclasses.replace(small, copied_out=(1e8,))  # past 32 MiB: into fresh pages
    assert pricing.estimate(big, profile).terms[Bound.TRANSFER] == pytest.approx(
        4e6 / 4e9 + 1e8 / 1e9 + 2 * 100e-6)
    torchs = pricing.estimate(dataclasses.replace(small, backend="cupy"), profile)
    assert torchs.terms[Bound.TRANSFER] == pytest.approx(4e6 / 10e9 + 4e6 / 5e9 + 2 * 20e-6)


def test_an_output_past_32_mib_lands_in_fresh_host_memory_a_regime_of_its_own() -> None:
    work = Work(bytes=2e8, copied_in=(1e8,), copied_out=(1e8,))
    e = pricing.estimate(work, synthetic())
    assert e.dominant is Bound.TRANSFER and e.regime == FRESH
    assert e.why.endswith("its output lands in freshly mapped host memory")
    small = pricing.estimate(dataclasses.replace(work, copied_out=(1e6,)), synthetic())
    assert small.regime == "transfer"


def test_a_workload_case_is_counted_by_its_workload() -> None:
    square = Case("matmul", "correct", "torch", "cuda:0", "float32", 1024,
                  (("data", "end_to_end"), ("shape", "square")))
    work = of_case(square)
    assert work.flops == 2 * 1024**3 and work.launches == 1 and work.op_family == "product"
    assert work.copied_in == (4 * 1024**2, 4 * 1024**2) and work.copied_out == (4 * 1024**2,)
    jax = of_case(dataclasses.replace(square, backend="jax", params=(("shape", "square"),)))
    assert jax.tf32 and not jax.end_to_end  # JAX multiplies float32 as TF32 by default


def test_the_chain_launches_three_kernels_and_its_fused_variant_one() -> None:
    chain = Case("elementwise", "correct", "cupy", "cuda:0", "float32", 10**6,
                 (("op", "chain"),))
    assert of_case(chain).launches == 3
    assert of_case(dataclasses.replace(chain, variant="tuned")).launches == 1


def test_gpu_to_gpu_scales_each_bound_by_its_own_ceiling() -> None:
    a, b = synthetic("a"), synthetic("b", {"memory": 1.5, "matmul": 1.0, "per-op": 0.5})
    memory = Work(bytes=8e8)
    compute = Work(flops=1e12, bytes=1e8)
    launch = Work(bytes=1e3, launches=2)
    assert pricing.scaled(1e-3, memory, a, b)[0] == pytest.approx(1e-3 / 1.5)
    assert pricing.scaled(30e-3, compute, a, b)[0] == pytest.approx(30e-3)
    assert pricing.scaled(25e-6, launch, a, b)[0] == pytest.approx(25e-6 * 0.5)


def test_a_profile_without_a_ceiling_the_call_needs_says_which() -> None:
    p = synthetic()
    bare = dataclasses.replace(p, ceilings=tuple(c for c in p.ceilings if c.backend != "jax"))
    with pytest.raises(UsageError, match="has no measured per-op dispatch cost of jax on a GPU"):
        pricing.estimate(Work(bytes=1e3, backend="jax"), bare)


def test_a_profile_of_a_machine_without_a_gpu_predicts_no_gpu_time() -> None:
    p = synthetic()
    cpu_only = dataclasses.replace(p, ceilings=tuple(c for c in p.ceilings if c.device == "cpu"))
    with pytest.raises(UsageError, match="measured on a machine without a GPU"):
        pricing.estimate(Work(bytes=1e3), cpu_only)


def test_an_end_to_end_pass_copies_its_array_both_ways_and_ones_copies_nothing() -> None:
    e2e = Case("elementwise", "correct", "torch", "cuda:0", "float64", 1000,
               (("data", "end_to_end"), ("op", "scale")))
    assert (of_case(e2e).copied_in, of_case(e2e).copied_out) == ((8000.0,), (8000.0,))
    ones = Case("elementwise", "correct", "torch", "cuda:0", "float32", 1000, (("op", "ones"),))
    assert not of_case(ones).end_to_end


# --- the user's code, op by op: each op priced by its class (samples.op_costs: 10 µs a
# launch, 20 µs a sort's and a unique's; passes over the bytes at 2 TB/s, 4 for a sort,
# 5 for a unique, 2 for a scan; FLOPs at 50 TFLOP/s)

def _classes(*tallies: Tally, **given: object) -> Work:
    return Work(flops=sum(t.flops for t in tallies), bytes=sum(t.bytes for t in tallies),
                launches=sum(t.ops for t in tallies), tallies=tallies, **given)  # type: ignore[arg-type]


def test_a_sort_is_several_passes_over_its_memory_and_a_launch_of_its_own() -> None:
    e = pricing.estimate(_classes(Tally("sort", 1, 4e8)), synthetic(classes=True))
    assert e.seconds == pytest.approx(4 * 4e8 / 2e12)  # 800 µs, not one 10 µs launch
    assert e.dominant is Bound.MEMORY and e.summed
    assert e.why == ("memory-bound: 800 µs of device work for 1 op(s), priced by class; "
                     "most of it 1 × sort: 4 pass(es) over 381 MiB")
    small = pricing.estimate(_classes(Tally("sort", 1, 4e3)), synthetic(classes=True))
    assert small.seconds == pytest.approx(20e-6)  # a sort's own launch


def test_a_small_call_pays_its_launches_by_class_and_its_hosts_own_cost() -> None:
    work = _classes(Tally("elementwise", 3, 3e3), Tally("matmul", 1, 1e4, 2e6), host_s=100e-6)
    e = pricing.estimate(work, synthetic(classes=True))
    assert pricing.HOST_SHARE == 0.5  # of the host work the CPU run timed: the rest is the
    # CPU's own (docs/prediction.md: the corpus's five sets)
    assert e.terms[Bound.LAUNCH] == pytest.approx(4 * 10e-6 + 50e-6)
    assert e.seconds == pytest.approx(90e-6) and e.dominant is Bound.LAUNCH
    assert e.why.startswith("launch-bound: 40 µs of launches for 4 op(s), priced by class, "
                            "and 50 µs of the call's own host work (Python, module hooks: "
                            "50% of the 100 µs this CPU measured) outweigh 70 ns of the "
                            "other device work")  # each op in proportion to the probe's
    # first busy size


def test_the_device_times_of_a_calls_ops_add_up() -> None:
    """A product then a pass over memory run one after the other on the device."""
    work = _classes(Tally("matmul", 1, 1e8, 1e11), Tally("elementwise", 1, 1e9))
    e = pricing.estimate(work, synthetic(classes=True))
    assert e.seconds == pytest.approx(1e11 / 50e12 + 1e9 / 2e12)  # 2 ms + 0.5 ms
    assert e.dominant is Bound.COMPUTE


def test_lower_precision_products_go_at_their_dtypes_peak() -> None:
    work = _classes(Tally("matmul", 1, 1e8, 1e12), dtype="bfloat16")
    e = pricing.estimate(work, synthetic(classes=True))
    assert e.seconds == pytest.approx(1e12 / 800e12)  # the probe's float32 rate × 16


def test_a_class_the_profile_did_not_measure_is_priced_as_the_nearest_and_named() -> None:
    profile = dataclasses.replace(synthetic(classes=True), op_classes=op_costs(("scan",)))
    e = pricing.estimate(_classes(Tally("scan", 2, 1e9)), profile)
    assert e.seconds == pytest.approx(1e9 / 2e12)  # a reduction's one pass, not two
    assert e.notes == ("2 op(s) of a scan priced as a reduction: not measured on syn",)


def test_an_op_that_waits_for_the_device_overlaps_nothing() -> None:
    work = _classes(Tally("unique", 1, 1e8, syncs=True), Tally("elementwise", 1, 1e9))
    e = pricing.estimate(work, synthetic(classes=True))
    assert e.waits == pytest.approx(5 * 1e8 / 2e12)  # 250 µs the host waits for
    assert e.seconds == pytest.approx(250e-6 + 1e9 / 2e12)


def test_a_syncing_op_of_a_class_whose_probe_does_not_wait_pays_the_round_trip() -> None:
    """A bincount is counted as a scatter, whose probe never waits for the device: it
    pays the target's launch-and-sync latency on top. A unique's probe waited already."""
    profile = synthetic(classes=True)
    latency = pricing._measured(profile, pricing.LATENCY, "torch")
    assert latency
    plain = pricing.estimate(_classes(Tally("scatter", 1, 1e3)), profile)
    waiting = pricing.estimate(_classes(Tally("scatter", 1, 1e3, syncs=True)), profile)
    assert waiting.seconds == pytest.approx(plain.seconds + latency)
    unique = pricing.estimate(_classes(Tally("unique", 1, 1e3, syncs=True)), profile)
    assert unique.seconds == pytest.approx(20e-6)  # its launch, waited for, and no more


def _between(a: float, low: tuple[float, float], high: tuple[float, float]) -> float:
    """Straight between two points on logarithmic axes."""
    (a1, t1), (a2, t2) = low, high
    return t1 * (t2 / t1) ** (math.log(a / a1) / math.log(a2 / a1))


def test_copies_go_at_the_rate_measured_for_their_size_and_say_so() -> None:
    """20 µs + bytes at 10 GB/s in, at 5 GB/s out, read off the points measured around
    each copy's size; past 32 MiB the output lands in freshly mapped pages."""
    work = _classes(Tally("elementwise", 1, 1e8), copied_in=(5e5,), copied_out=(5e7,))
    e = pricing.estimate(work, synthetic(classes=True))
    into = _between(5e5, (1e3, 20e-6 + 1e3 / 10e9), (1e6, 20e-6 + 1e6 / 10e9))
    out = _between(5e7, (1e6, 20e-6 + 1e6 / 5e9), (1e8, 20e-6 + 1e8 / 5e9))
    assert e.terms[Bound.TRANSFER] == pytest.approx(into + out)
    assert e.regime == FRESH
    assert e.notes == ("copies at the rates measured on syn for their sizes: 488 KiB in "
                       "with .to(device), 47.7 MiB out with .cpu() into freshly mapped "
                       "pages on every call, as gpuvs.compare's end-to-end call makes "
                       "them",)


def test_a_profile_without_op_classes_prices_the_users_code_by_its_totals_and_says_so(
        ) -> None:
    """A format 1 profile (the op classes came later) predicts as it did."""
    work = _classes(Tally("sort", 1, 4e8))
    e = pricing.estimate(work, synthetic())
    assert e.seconds == pytest.approx(pricing.estimate(
        dataclasses.replace(work, tallies=()), synthetic()).seconds)
    assert e.notes[0].startswith("profile 'syn' has no op classes (measured before they "
                                 "were): priced by the call's total FLOPs, bytes and "
                                 "launches")


def test_a_class_is_read_along_its_points_past_its_launch() -> None:
    """The smallest size's time is the host's launch (the device idles there): the
    device's time is read along the other points, in proportion below them — not along a
    line whose intercept prices a small op at a large one's fixed cost."""
    points = [OpCost("attention", "cuda:0", "torch", a, t, "") for a, t in
              ((3e7, 17e-6), (5e8, 30e-6), (9e9, 330e-6), (1.4e11, 4100e-6))]
    [cost] = pricing.class_costs(points, "torch").values()
    assert cost.launch == 17e-6
    assert cost.device(1, 7e7) == pytest.approx(30e-6 * 7e7 / 5e8)  # 4.2 µs, not 76
    assert cost.device(2, 2e9) == pytest.approx(2 * _between(1e9, (5e8, 30e-6),
                                                              (9e9, 330e-6)))
    assert cost.device(1, 9e9) == pytest.approx(330e-6)
    assert cost.device(1, 2.8e11) == pytest.approx(4100e-6 + (4100e-6 - 330e-6) / (
        1.4e11 - 9e9) * 1.4e11)  # beyond: along the last two points' line
    assert cost.at(10) == 17e-6  # a copy below its points: the smallest's time
    fell = pricing.class_costs([OpCost("sort", "cuda:0", "torch", a, t, "") for a, t in (
        (1e3, 15e-6), (1e8, 230e-6), (1e9, 220e-6))], "torch")["sort"]
    assert fell.device(1, 2e9) == pytest.approx(440e-6)  # the last point's rate, not less


