"""A run's calibration is shown first wherever the run is — its command's tables and
`show`, the page, the JSON document — and nowhere else: no sweep, answer, crossover or
post holds a probe. Two runs' calibrations come side by side before their cases."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from tests.report.samples import GPU, calibration, golden, gpu_sweep, run

from gpuvs.analysis.regression import compare, machine
from gpuvs.model import RunKind
from gpuvs.report import views
from gpuvs.report.calibration import TITLE, side_by_side
from gpuvs.report.documents import cases_document, change_record
from gpuvs.report.history import change_table
from gpuvs.report.html import render_html

PROBES = ["launch (numpy cpu)", f"launch (torch {GPU})",
          "CPU arithmetic, 1 thread (numpy cpu)", "CPU arithmetic, all threads (numpy cpu)",
          "host memory (numpy cpu)", f"device arithmetic (torch {GPU})",
          f"device memory (torch {GPU})", f"host↔device round trip (torch {GPU})"]


def test_a_runs_tables_open_with_its_calibration_and_the_rest_are_its_cases_alone() -> None:
    record = run()
    calibrated = views.of(record.kind).tables(record, [*calibration(), *gpu_sweep()], ())
    plain = views.of(record.kind).tables(record, gpu_sweep(), ())
    first, *rest = calibrated
    assert first.title == TITLE
    assert [row[0] for row in first.rows] == PROBES
    assert first.rows[3][1:4] == ("a 256² float32 product", "300 µs ±0.3%", "112 GFLOP/s")
    assert rest == plain  # every sweep and answer as without a calibration


def test_a_seeds_run_shows_its_calibration_first_and_its_posts_unchanged() -> None:
    record, posts = run(RunKind.SEEDS.value), golden("cpu-seeds-quick.json")
    shown = views.of(record.kind)
    with_probes = [*calibration(), *posts]
    assert shown.tables(record, with_probes, ())[0].title == TITLE
    assert shown.tables(record, with_probes, ())[1:] == shown.tables(record, posts, ())
    assert shown.more is not None
    assert shown.more(record, with_probes, ()) == shown.more(record, posts, ())


def test_a_run_without_a_calibration_shows_none() -> None:
    record = run()
    assert all(t.title != TITLE for t in views.of(record.kind).tables(record, gpu_sweep(), ()))


def test_the_document_carries_the_calibration_first_and_no_probe_among_its_cases() -> None:
    doc = cases_document("show", [*calibration(), *gpu_sweep()], (), run())
    plain = cases_document("show", gpu_sweep(), (), run())
    assert list(doc)[:4] == ["schema", "command", "run", "calibration"]
    assert [p["probe"] for p in doc["calibration"]] == PROBES
    memory = doc["calibration"][4]
    assert (memory["bound"], memory["rate_unit"], memory["threads"]) == ("host_memory", "B/s",
                                                                         None)
    assert memory["rate"] == 2 * 4 * (1 << 24) / memory["median_s"]
    assert {k: v for k, v in doc.items() if k != "calibration"} == {
        k: v for k, v in plain.items() if k != "calibration"}
    assert plain["calibration"] == []


def test_the_page_opens_with_the_calibration_before_the_answer() -> None:
    page = render_html(run(), [*calibration(), *gpu_sweep()])
    assert page.index('<section id="calibration">') < page.index('<section id="verdict"')
    assert '<a href="#calibration">calibration</a>' in page
    assert "calibration/correct" not in page.split('<section id="verdict"')[1]
    assert '<section id="calibration">' not in render_html(run(), gpu_sweep())


def test_two_runs_calibrations_side_by_side_and_a_case_the_machine_explains() -> None:
    """B's machine 40 % slower at everything, and B's cases 40 % slower: each case is
    the machine's, said in its verdict and in its record."""
    a = [*calibration(), *gpu_sweep()]
    slow = [replace(m, samples=tuple(1.4 * x for x in m.samples)) for m in gpu_sweep()]
    b = [*calibration(1.4), *slow]
    probes = machine(a, b)
    table = side_by_side(probes, ("A", "B"))
    assert [row[0] for row in table.rows] == PROBES
    assert all(row[3].startswith("1.400") and row[4] == "slower" for row in table.rows)
    changes, _ = compare(a, b, probes=probes)
    explained = [c for c in changes if c.verdict == "machine"]
    assert explained and all(c.case_verdict == "slower" for c in explained)
    cell = change_table(explained, 0.05, ("A", "B")).rows[0][-1]
    assert cell.startswith("machine (") and cell.endswith(" 1.400×)")
    record, probe = change_record(explained[0]), explained[0].machine
    assert (record["verdict"], record["case_verdict"]) == ("machine", "slower")
    assert probe is not None and record["machine_probe"] == probe.probe
    assert abs(record["residual"] - 1.0) < 0.01


def test_a_probe_whose_processes_fell_in_two_groups_says_so_under_the_machines() -> None:
    """The round trip on the H200s: some processes 4× faster than the others, so its
    ratio spans so much that it explains nothing; the reader is told why."""
    rng = np.random.default_rng(3)
    a, b = calibration(), calibration()
    trip = next(i for i, m in enumerate(b) if m.case.param("bound") == "transfer")
    medians = [3.4e-3] * 3 + [14.2e-3] * 17
    samples = tuple(float(x) for m in medians for x in m * (1 + 0.01 * rng.standard_normal(5)))
    b[trip] = replace(b[trip], samples=samples, passes=(5,) * 20)
    table = side_by_side(machine(a, b), ("A", "B"), a, b)
    assert table.notes[0] == (f"host↔device round trip (torch {GPU}): B bimodal across "
                              "processes: 3.39 ms in 3 of 20, 14.2 ms in 17")
    assert len(side_by_side(machine(a, a), ("A", "B"), a, a).notes) == 1  # none: one line
