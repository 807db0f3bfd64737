"""A seeds run answers first, one line per post: the post's claim quoted from its seed,
its own method replayed here, the correct figure here with its CI, and the reason in a
phrase — every figure and the reason read off the measured cases, so other numbers
give another line."""

from __future__ import annotations

from tests.report.samples import run

from gpuvs.model import Case, Measurement, Status
from gpuvs.report.html import render_html
from gpuvs.report.seed_tables import seed_answers
from gpuvs.seeds import seed000
from gpuvs.seeds.base import Pick


def _m(pick: Pick, seconds: float) -> Measurement:
    """One case of seed 000 at `seconds` a call: a replay is one timing, as the post's
    %timeit printed one number; a correct case has samples around its median."""
    samples = ((seconds,) if pick.variant == "as_written"
               else tuple(seconds * (1 + 0.002 * k) for k in range(-10, 11)))
    return Measurement(Case(pick.workload, pick.variant, pick.backend, pick.device,
                            pick.dtype, pick.size or 25600, pick.params), Status.OK,
                       samples=samples, loops=1)


def _seed000(launch: float, work: float, numpy64: float, numpy32: float) -> list[Measurement]:
    return [_m(seed000.NUMPY_WRITTEN, numpy64), _m(seed000.TORCH_CPU_WRITTEN, 1e-3),
            _m(seed000.TORCH_GPU_WRITTEN, launch), _m(seed000.NUMPY64, numpy64),
            _m(seed000.NUMPY32, numpy32), _m(seed000.TORCH_CPU, 1e-3),
            _m(seed000.TORCH_CPU_1T, 2e-3), _m(seed000.TORCH_GPU, work),
            _m(seed000.TORCH_GPU_E2E, 2 * work)]


def test_a_post_is_one_line_whose_figures_and_reason_come_from_the_measured_cases() -> None:
    table = seed_answers(_seed000(launch=2e-5, work=1e-4, numpy64=1e-3, numpy32=5e-4))
    ((post, claim, method, correct, why),) = table.rows
    assert (post, claim) == ("000: GPU vs NumPy", "46×")  # quoted from the seed's row
    assert method == "50×"  # the post's own %timeit: float64 NumPy over the launch
    assert correct.startswith("5× [") and correct.endswith("]")  # float32 over the work
    assert why == ("%timeit timed the launch (20 µs), not the product (100 µs); float64 "
                   "NumPy took 2× float32's time")


def test_where_the_posts_method_costs_nothing_here_the_reason_says_so() -> None:
    table = seed_answers(_seed000(launch=1e-4, work=1e-4, numpy64=5e-4, numpy32=5e-4))
    ((_, _, method, correct, why),) = table.rows
    assert method == "5×" and correct.startswith("5× [")
    assert why.startswith("the post's timing gives about the same here") and "46×" in why


def test_without_a_gpu_the_line_says_why_there_is_no_figure() -> None:
    cpu_only = [m for m in _seed000(2e-5, 1e-4, 1e-3, 5e-4) if m.case.device == "cpu"]
    ((_, _, method, correct, why),) = seed_answers(cpu_only).rows
    assert method == "not run" and correct == "not run"
    assert why == "needs a CUDA device: the post's point is about GPU timing"


def test_a_seeds_page_opens_with_the_posts_and_folds_the_sweeps_under_them() -> None:
    page = render_html(run("seeds"), _seed000(2e-5, 1e-4, 1e-3, 5e-4))
    first = page[page.index('<section id="verdict"'):page.index('<section id="seeds">')]
    assert first.index("<h2>The posts, answered here</h2>") < first.index("000: GPU vs NumPy")
    folded = first[first.index('<details class="more">'):]
    assert "<summary>Per sweep: " in folded and "<th>answer</th>" in folded
    assert '<a href="#verdict">the answer</a>' in page


def test_every_post_answers_from_a_run_with_a_gpu() -> None:
    """Every case of every seed finished, on the CPU and on a GPU (as synthetic timings:
    a GPU case twice as fast as its CPU twin): each post gets its line, its figures and a
    reason read off them — no post says it needs a GPU."""
    from gpuvs import seeds
    from gpuvs.seeds.base import SeedOptions

    ms = []
    for seed in seeds.REGISTRY.all():
        for c in seed.cases(SeedOptions(quick=True)):
            t = 1e-3 * (0.5 if c.device != "cpu" else 1.0) * (1 + c.size % 7 / 10)
            samples = (t,) if c.variant == "as_written" else tuple(
                t * (1 + 0.002 * k) for k in range(-10, 11))
            ms.append(Measurement(c, Status.OK, samples=samples, loops=1, first_call_s=3 * t,
                                  counters={"kernels": 900.0, "ops": 300.0, "flops": 1e9}))
    rows = seed_answers(ms).rows
    assert [r[0][:3] for r in rows] == ["000", "001", "002", "003", "004"]
    for post, _, method, correct, why in rows:
        assert "needs a CUDA device" not in why and why, post
        assert correct[0].isdigit() and method[0].isdigit(), (post, method, correct)
