"""benchmarks/corpus.py: on a machine without a GPU its measuring mode still predicts and
records each function (compare's GPU cases unavailable); its tables, from records whose
GPU times are set here, calibrate the user's code with the fit functions and judge the
held-out ones against the issue's bar."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")

from tests.helpers import benchmark  # noqa: E402
from tests.predicting.samples import synthetic  # noqa: E402

from gpuvs.predicting import profile  # noqa: E402


def _bench() -> Any:
    return benchmark("corpus")


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The measuring mode here, on two functions with a synthetic profile: real
    predictions (the CPU measured, the work counted), no GPU to compare with."""
    where = tmp_path_factory.mktemp("corpus")
    target = profile.save(synthetic("syn", classes=True), where)
    bench = _bench()
    assert bench.main(["measure", "--out", str(where / "out"), "--profile", str(target),
                       "--only", "frozen_batch_norm", "--only", "rms_norm",
                       "--budget", "0.02"]) == 0
    return where / "out" / "corpus.json", target


def test_measuring_records_each_function_at_both_sizes(measured: tuple[Path, Path]) -> None:
    doc = json.loads(measured[0].read_text())
    records = doc["records"]
    assert [(r["name"], r["split"], r["size"]) for r in records] == [
        ("rms_norm", "fit", 16), ("rms_norm", "fit", 16_384),
        ("frozen_batch_norm", "held_out", 1), ("frozen_batch_norm", "held_out", 16)]
    for r in records:
        assert r["cpu_s"] > 0 and r["predicted"]["resident"]["seconds"] > 0
        assert {t["op_class"] for t in r["work"]["tallies"]} in (
            {"norm"}, {"elementwise"})  # rms_norm: one kernel on CUDA
        assert {r["measured"][d]["status"] for d in ("resident", "end_to_end")} == {
            "unavailable"}  # no GPU here


def _with_gpu_times(doc: dict[str, Any], target: Path) -> dict[str, Any]:
    """The records as if measured on the GPU: each placement at 2× the model on the fit
    functions and 2.2× on the held-out ones (made up here, to check the arithmetic)."""
    bench = _bench()
    found = profile.load_file(target).profile
    out = copy.deepcopy(doc)
    for r in out["records"]:
        work = bench._work(r["work"])
        for data in ("resident", "end_to_end"):
            placed = work if data == "end_to_end" else bench.replace(work, copied_in=(),
                                                                     copied_out=())
            model = bench.pricing.estimate(placed, found).seconds
            factor = 2.0 if r["split"] == "fit" else 2.2
            r["measured"][data] = {"seconds": factor * model, "status": "ok"}
    return out


def test_the_tables_calibrate_with_the_fit_functions_and_judge_the_held_out(
        measured: tuple[Path, Path], tmp_path: Path) -> None:
    corpus, target = measured
    source = tmp_path / "corpus.json"
    source.write_text(json.dumps(_with_gpu_times(json.loads(corpus.read_text()), target)))
    written = tmp_path / "syn.residuals.json"
    bench = _bench()
    assert bench.main(["tables", "--from", str(source), "--profile", str(target),
                       "--write-residuals", str(written),
                       "--markdown", str(tmp_path / "t.md")]) == 0
    text = (tmp_path / "t.md").read_text()
    rows = [line for line in text.splitlines() if line.startswith("| frozen_batch_norm |")]
    assert len(rows) == 4  # two sizes, resident and end-to-end
    for row in rows:  # calibrated at 2× (the fit functions'), measured at 2.2×
        assert "| 9% |" in row
    held = next(line for line in text.splitlines()
                if line.startswith("| held_out | resident |"))
    assert "| 2 | 9.1% | 54.5% |" in held  # calibrated, and the model alone
    saved = json.loads(written.read_text())
    assert {p["series"] for p in saved["points"]} == {
        "corpus/rms_norm/resident", "corpus/rms_norm/end_to_end"}
    assert all(p["workload"] == "" and p["ratio"] == pytest.approx(2.0)
               for p in saved["points"])


def test_the_tables_without_a_gpu_measurement_say_there_is_nothing_to_judge(
        measured: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    corpus, target = measured
    assert _bench().main(["tables", "--from", str(corpus), "--profile", str(target)]) == 2
    assert "has a GPU measured: nothing to judge" in capsys.readouterr().err


def test_a_held_out_run_is_judged_as_shipped_with_the_residuals_files_fit_functions(
        measured: tuple[Path, Path], tmp_path: Path) -> None:
    """A run of held-out functions alone has no `fit` function of its own: judged as
    `gpuvs predict` predicts (`--as-shipped`), the shipped file's fit points calibrate it;
    without the flag they are dropped, and its calls read as the model alone."""
    corpus, target = measured
    bench = _bench()
    timed = _with_gpu_times(json.loads(corpus.read_text()), target)
    everything, written = tmp_path / "all.json", tmp_path / "syn.residuals.json"
    everything.write_text(json.dumps(timed))
    assert bench.main(["tables", "--from", str(everything), "--profile", str(target),
                       "--write-residuals", str(written)]) == 0
    held = tmp_path / "held.json"
    held.write_text(json.dumps({**timed, "records": [
        r for r in timed["records"] if r["split"] == "held_out"]}))

    def resident_row(*extra: str) -> str:
        out = tmp_path / "t.md"
        assert bench.main(["tables", "--from", str(held), "--profile", str(target),
                           "--residuals", str(written), *extra,
                           "--markdown", str(out)]) == 0
        return next(line for line in out.read_text().splitlines()
                    if line.startswith("| held_out | resident |"))

    assert "| 2 | 9.1% | 54.5% |" in resident_row("--as-shipped")  # calibrated at 2×
    assert "| 2 | 54.5% | 54.5% |" in resident_row()  # the fit points dropped
    assert bench.main(["tables", "--from", str(held), "--profile", str(target),
                       "--as-shipped"]) == 2  # nothing shipped to judge it with
