"""The dist tables and plots from measurements made up here: bandwidths, efficiency, notes."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from gpuvs.analysis.scaling import Efficiency, efficiency
from gpuvs.model import Case, Measurement, Status
from gpuvs.report.dist_plots import bandwidth_svg, scaling_svg
from gpuvs.report.dist_tables import dist_tables, is_dist, ranks_note

MIB = 1024**2


def _collective(name: str, size: int, seconds: float, n: int = 2,
                status: Status = Status.OK, reason: str = "") -> Measurement:
    case = Case("dist_collective", "correct", "nccl", "cuda", "float32", size,
                (("collective", name), ("nproc", str(n))))
    samples = (seconds,) * 5 if status is Status.OK else ()
    return Measurement(case, status, reason, samples=samples, loops=4,
                       counters={"bytes": float(size), "nproc": float(n)})


def _scaling(n: int, step_s: float, compute_s: float, mode: str = "weak",
             more: tuple[tuple[str, str], ...] = ()) -> Measurement:
    case = Case("dist_scaling", "correct", "gloo", "cpu", "float32", n,
                (("scaling", mode), ("batch", "32"), *more))
    per_rank = 32 if mode == "weak" else 32 // n
    return Measurement(case, Status.OK, samples=(step_s,) * 6, counters={
        "nproc": float(n), "per_rank_batch": float(per_rank), "global_batch": per_rank * n,
        "threads": 2.0 / n, "samples_per_s": per_rank * n / step_s, "compute_s": compute_s,
        "comm_s": step_s - compute_s})


def test_a_collective_row_has_algorithm_and_bus_bandwidth() -> None:
    ms = [_collective("all_reduce", MIB, 1e-3),
          _collective("all_reduce", 1024**3, 0.0, status=Status.SKIPPED,
                      reason="needs 1.25 GiB per rank")]
    (table,) = dist_tables(ms)
    assert table.title == "dist · all_reduce · nccl · 2 × cuda"
    row = dict(zip(table.columns, table.rows[0], strict=True))
    # 1 MiB in 1 ms: 1.05 GB/s; all-reduce on 2 ranks: × 2·1/2 = the same on the bus.
    assert row["size"].strip() == "1 MiB" and row["per call ±CI"] == "1 ms ±0.0%"
    assert row["algbw"].strip() == row["busbw"].strip() == "1.05 GB/s"
    assert row["loops"].strip() == "4"
    assert table.rows[1][-1] == "skipped: needs 1.25 GiB per rank"


def test_bus_bandwidth_of_an_all_gather_is_half_on_two_ranks_and_zero_on_one() -> None:
    one, two = dist_tables([_collective("all_gather", MIB, 1e-3),
                            _collective("all_gather", MIB, 1e-3, n=1)])  # 1 rank first
    assert dict(zip(two.columns, two.rows[0], strict=True))["busbw"].strip() == "524 MB/s"
    assert dict(zip(one.columns, one.rows[0], strict=True))["busbw"].strip() == "0 B/s"
    assert any("one rank: nothing crosses a link" in note for note in one.notes)


def test_graph_replays_stand_beside_the_per_call_time_and_bandwidth_stays_per_call() -> None:
    # A 4 KiB all-reduce: 35 µs a call from Python, 18 µs when replayed from a graph.
    eager = _collective("all_reduce", 4096, 35e-6)
    replayed = Measurement(eager.case, Status.OK, samples=eager.samples, loops=4,
                           counters=eager.counters, graph_samples=(18e-6,) * 5)
    (plain,) = dist_tables([eager])
    (table,) = dist_tables([replayed])
    row = dict(zip(table.columns, table.rows[0], strict=True))
    assert row["per call ±CI"] == "35 µs ±0.0%" and row["graph replay ±CI"] == "18 µs ±0.0%"
    assert row["algbw"].strip() == "117 MB/s"  # 4096 B in 35 µs: what nccl-tests counts
    assert any(n.startswith("graph replay: the same calls captured") for n in table.notes)
    assert not any(n.startswith("graph replay") for n in plain.notes)
    assert dict(zip(plain.columns, plain.rows[0], strict=True))["graph replay ±CI"] == ""


def test_collective_tables_follow_the_collectives_order() -> None:
    tables = dist_tables([_collective(c, MIB, 1e-3) for c in
                          ("broadcast", "reduce_scatter", "all_reduce", "all_gather")])
    assert [t.title.split(" · ")[1] for t in tables] == [
        "all_reduce", "all_gather", "reduce_scatter", "broadcast"]


def test_weak_scaling_efficiency_and_the_compute_comm_split() -> None:
    one, two = _scaling(1, 0.100, 0.095), _scaling(2, 0.125, 0.100)
    (table,) = dist_tables([two, one])  # rows by N, whatever the order stored
    assert table.title.endswith("batch 32 per rank (weak scaling)")
    rows = [dict(zip(table.columns, r, strict=True)) for r in table.rows]
    assert rows[0]["efficiency"] == "100% (base)"
    # t1 / t2 = 0.100 / 0.125, its interval never narrower than another launch may land
    assert rows[1]["efficiency"] == "80% [70, 90]"
    assert rows[1]["batch"].strip() == "32 × 2" and rows[1]["samples/s"].strip() == "512"
    assert rows[1]["compute"].strip() == "100 ms" and rows[1]["comm"] == "25 ms (20%)"
    assert efficiency([one, two], 2, spread=0) == Efficiency(pytest.approx(0.8), pytest.approx(0.8),
                                                   pytest.approx(0.8), rounds=0)


def test_a_run_from_before_rounds_widens_every_efficiency_to_both_baselines() -> None:
    """On two H100s N = 1 ran at 3.23 ms, N = 2 at 3.12 ms: a weak-scaling efficiency of
    103 % [101, 106]. Runs then launched each N on its own, and the host moved between
    them; N = 1 ran again last, and the interval covers both baselines."""
    before, two = _scaling(1, 0.00323, 0.003), _scaling(2, 0.00312, 0.003)
    after = _scaling(1, 0.00305, 0.003, more=(("round", "after"),))
    e = efficiency([before, two, after], 2, spread=0)
    assert e.estimate == pytest.approx(0.00323 / 0.00312) and e.rounds == 0
    assert e.low == pytest.approx(0.00305 / 0.00312)
    assert e.high == pytest.approx(0.00323 / 0.00312)
    (table,) = dist_tables([before, two, after])
    rows = [dict(zip(table.columns, r, strict=True)) for r in table.rows]
    assert [r["N"].strip() for r in rows] == ["1", "1 (after)", "2"]
    assert rows[1]["efficiency"] == "(base again)"
    assert rows[2]["efficiency"] == "104% [91, 116]"  # at least ±12 %: another launch
    notes = " ".join(table.notes)
    assert "N = 1 before the others: 3.23 ms a step, after them: 3.05 ms (-5.6 %)" in notes
    assert "an efficiency above 100 %: weak scaling cannot beat one rank here" in notes


def test_strong_scaling_efficiency_divides_by_the_ranks() -> None:
    one, two = _scaling(1, 0.100, 0.1, "strong"), _scaling(2, 0.0625, 0.05, "strong")
    assert efficiency([one, two], 2).estimate == pytest.approx(0.8)  # 0.100 / (2 · 0.0625)


def _rounds(steps: list[tuple[float, float]], mode: str = "weak") -> list[Measurement]:
    """N = 1 and N = 2 in rounds: (N = 1's step, N = 2's step) per round, in order."""
    return [_scaling(n, step, step * 0.9, mode, (("round", str(r)),))
            for r, pair in enumerate(steps, start=1) for n, step in zip((1, 2), pair,
                                                                       strict=True)]


def test_rounds_pair_each_n_with_the_one_rank_measured_just_before_it() -> None:
    """The host's pace moves by a third between rounds; within each, N = 2 takes 1/0.9
    of N = 1's step. Paired per round, the efficiency is 90 % exactly: the drift that
    an interval over far-apart cases had to cover is gone."""
    drifting = [(0.100, 0.100 / 0.9), (0.135, 0.135 / 0.9), (0.090, 0.090 / 0.9),
                (0.120, 0.120 / 0.9)]
    e = efficiency(_rounds(drifting), 2, spread=0)
    assert (e.estimate, e.low, e.high, e.rounds) == (pytest.approx(0.9), pytest.approx(0.9),
                                                     pytest.approx(0.9), 4)
    (table,) = dist_tables(_rounds(drifting))
    rows = [dict(zip(table.columns, r, strict=True)) for r in table.rows]
    assert [r["N"].strip() for r in rows] == ["1", "2"]  # a row per N, its rounds joined
    assert rows[1]["efficiency"] == "90% [79, 101]"  # the pairs agree; another launch may not
    notes = " ".join(table.notes)
    assert "their geometric mean over 4 rounds with its 95 % interval over them" in notes
    assert "N = 1 across the rounds: 90 ms to 135 ms a step" in notes


def test_the_interval_over_rounds_is_students_t_on_the_ratios_logarithms() -> None:
    from scipy.stats import t

    ratios = [0.88, 0.90, 0.93, 0.89, 0.91]
    e = efficiency(_rounds([(0.1, 0.1 / q) for q in ratios]), 2, spread=0)
    logs = [math.log(q) for q in ratios]
    mean = sum(logs) / len(logs)
    sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / (len(logs) - 1))
    half = t.ppf(0.975, len(logs) - 1) * sd / math.sqrt(len(logs))
    assert e.estimate == pytest.approx(math.exp(mean))
    assert (e.low, e.high) == (pytest.approx(math.exp(mean - half)),
                               pytest.approx(math.exp(mean + half)))
    (table,) = dist_tables(_rounds([(0.1, 0.1 / q) for q in ratios]))
    assert table.rows[1][table.columns.index("efficiency")] == "90% [79, 101]"


def test_a_round_that_failed_is_named_and_left_out_of_the_pairs() -> None:
    ms = _rounds([(0.1, 0.125), (0.1, 0.125), (0.1, 0.125)])
    lost = ms[3]  # N = 2 of round 2
    ms[3] = Measurement(lost.case, Status.CRASHED, "rank 1 of 2 died (exit code 1)")
    assert efficiency(ms, 2).rounds == 2
    (table,) = dist_tables(ms)
    two = dict(zip(table.columns, table.rows[1], strict=True))
    assert two["efficiency"] == "80% [70, 90]"  # another launch's spread: ±12 %
    assert two["note"] == "1 of 3 rounds crashed: rank 1 of 2 died (exit code 1)"


def test_ranks_on_several_nodes_are_said_as_nodes_times_ranks_per_node() -> None:
    case = _collective("all_reduce", MIB, 1e-3, n=4).case
    (coll,) = dist_tables([replace(_collective("all_reduce", MIB, 1e-3, n=4),
                                   case=replace(case, params=(*case.params, ("nodes", "2x2"))))])
    assert coll.title == "dist · all_reduce · nccl · 2 nodes × 2 × cuda"
    layout = (("round", "1"), ("nodes", "2x2"))
    (table,) = dist_tables([_scaling(n, 0.1 * (1 + n / 10), 0.09, more=layout)
                            for n in (1, 2, 3, 4)])
    assert " · cpu · 2 nodes × 2 · batch 32 per rank" in table.title
    assert [r[0].strip() for r in table.rows] == ["1", "2", "3 (2 nodes)", "4 (2 nodes)"]


def test_other_workloads_are_left_to_the_ordinary_tables() -> None:
    other = Measurement(Case("matmul", "correct", "numpy", "cpu", "float32", 64), Status.OK)
    assert not is_dist(other) and dist_tables([other]) == []


def test_the_ranks_note_lists_the_nccl_variables() -> None:
    same = {"torch": "2.6", "nccl": "2.21.5", "rank_env": [{"NCCL_NVLS_ENABLE": "0"}] * 2}
    assert ranks_note(same) == ("ranks: torch 2.6, nccl 2.21.5; NCCL variables on every "
                                "rank: NCCL_NVLS_ENABLE=0")
    differ = {"torch": "2.6", "rank_env": [{"NCCL_NVLS_ENABLE": "0"}, {}]}
    assert ranks_note(differ).endswith("rank 0: NCCL_NVLS_ENABLE=0; rank 1: none set")


def test_plots_are_svg_the_same_every_time_and_empty_without_data() -> None:
    pytest.importorskip("matplotlib")
    scaling = [_scaling(1, 0.1, 0.09), _scaling(2, 0.125, 0.1)]
    collectives = [_collective(c, s, s / 1e9) for c in ("all_reduce", "broadcast")
                   for s in (MIB, 4 * MIB)]
    svg = scaling_svg(scaling)
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg and svg == scaling_svg(scaling)
    assert "<svg" in bandwidth_svg(collectives)
    assert scaling_svg(collectives) == "" and bandwidth_svg(scaling) == ""


def test_the_report_page_of_a_dist_run_draws_bandwidth_and_scaling_without_a_verdict() -> None:
    from gpuvs.model import Environment, Run
    from gpuvs.report.html import render_html
    run = Run("20261126-000000-d1st", "2026-11-26T00:00:00+0000", {"kind": "dist"},
              Environment("fp", {}), status="finished")
    ms = [_collective("all_reduce", MIB, 1e-3), _collective("all_reduce", 64 * MIB, 0.02),
          _scaling(1, 0.100, 0.095), _scaling(2, 0.125, 0.100)]
    page = render_html(run, ms)
    assert 'data-plot="dist-bandwidth"' in page and 'data-plot="dist-scaling"' in page
    assert "dist · all_reduce · nccl · 2 × cuda" in page and "80% [70, 90]" in page
    assert 'id="verdict"' not in page and 'id="roofline"' not in page
    assert "No speedup plot" not in page


def test_a_launch_that_ended_badly_after_every_case_was_saved_says_so() -> None:
    note = ranks_note({"torch": "2.11", "after_saved": "the ranks ended badly after every "
                       "case was saved (in a/b): rank 1 of 2 died (exit code 1)"})
    first, second = note.splitlines()
    assert first.startswith("ranks: torch 2.11")
    assert second.startswith("the ranks ended badly after every case was saved")


def test_the_ranks_note_says_where_they_ran_and_what_ended_them_early() -> None:
    note = ranks_note({"torch": "2.13", "layout": "2 nodes × 2 ranks on one machine (h)",
                       "busy": ["h: this machine is busy: load 6.0 on 2 cores"],
                       "lost": "rank 0 of 4 failed: RuntimeError: Connection closed by peer"})
    first, busy, lost = note.splitlines()
    assert first.endswith("; 2 nodes × 2 ranks on one machine (h)")
    assert busy == "busy: h: this machine is busy: load 6.0 on 2 cores"
    assert lost == ("the ranks could not go on: rank 0 of 4 failed: RuntimeError: Connection "
                    "closed by peer; the cases left are recorded skipped")


def test_energy_per_image_is_every_gpus_energy_over_the_images_a_step_trains() -> None:
    from gpuvs.machine import energy

    def with_energy(n: int, joules: float, idle_w: float) -> Measurement:
        m = _scaling(n, 3e-3, 2.5e-3)
        # 1500 steps over 4.5 s; all GPUs' boards together, as rank 0 merges them
        return Measurement(m.case, m.status, samples=m.samples, counters={
            **m.counters, energy.GPU_J: joules, energy.GPU_IDLE_W: idle_w,
            energy.WINDOW_S: 4.5, energy.CALLS: 1500.0})

    (table,) = dist_tables([with_energy(1, 1500 * 1.28, 130.0),
                            with_energy(2, 1500 * 2.56, 260.0)])
    cells = [dict(zip(table.columns, row, strict=True))["energy/image"] for row in table.rows]
    # 1.28 J a step for 32 images: 40 mJ; less 130 W × 4.5 s over 1500 steps (0.39 J): 27.8 mJ
    assert cells == ["40 mJ (27.8 mJ above idle)", "40 mJ (27.8 mJ above idle)"]
    assert any("130 W at N = 1, 260 W at N = 2" in note for note in table.notes)


def test_without_energy_asked_the_scaling_table_has_no_energy_column() -> None:
    (table,) = dist_tables([_scaling(1, 3e-3, 2.5e-3), _scaling(2, 3e-3, 2.5e-3)])
    assert "energy/image" not in table.columns


def test_a_launchs_interval_reaches_what_another_launch_gives() -> None:
    """Rounds pair out the drift within a launch, not the pace each launch's processes run
    at: three launches on two H100s gave 76.0 % [69.2, 83.4] and 95.8 % [91.5, 100.3],
    apart. Every efficiency's interval reaches LAUNCH_SPREAD either side."""
    from gpuvs.analysis.scaling import LAUNCH_SPREAD

    steady = efficiency(_rounds([(0.1, 0.1 / 0.9)] * 5), 2)
    assert steady is not None and steady.estimate == pytest.approx(0.9)
    assert (steady.low, steady.high) == (pytest.approx(0.9 * (1 - LAUNCH_SPREAD)),
                                         pytest.approx(0.9 * (1 + LAUNCH_SPREAD)))
    low, high = 0.760, 0.958
    assert low * (1 + LAUNCH_SPREAD) >= high * (1 - LAUNCH_SPREAD)  # the two overlap
