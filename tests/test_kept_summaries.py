"""A stored run is read without a bootstrap: each case's summaries are kept with its
record, under a key of the samples, passes and method they came from, and taken back only
where that key still holds."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.report import samples as synthetic

from gpuvs import stats
from gpuvs.model import Case, Measurement, Status
from gpuvs.store.export import run_document, run_from_document
from gpuvs.store.sqlite import SqliteStore


def timed(n: int = 40) -> Measurement:
    xs = tuple(1e-3 * (1 + 0.01 * ((7 * k) % 13)) for k in range(n))
    return Measurement(Case("matmul", "correct", "torch", "cuda:0", "float32", 1024), Status.OK,
                       samples=xs, wall_samples=tuple(1.1 * x for x in xs),
                       graph_samples=xs[:10], timer="cuda_events", passes=(n // 2, n - n // 2))


def refuse_to_summarize(monkeypatch: pytest.MonkeyPatch) -> None:
    """From here on, computing a summary fails the test."""
    def refused(*args: Any, **kwargs: Any) -> stats.Summary:
        raise AssertionError("a summary was computed again")
    monkeypatch.setattr(stats, "summarize", refused)


def test_a_record_read_back_takes_its_kept_summaries(monkeypatch: pytest.MonkeyPatch) -> None:
    m = timed()
    record = json.loads(json.dumps(m.to_record()))  # through JSON, as a store keeps it
    refuse_to_summarize(monkeypatch)
    back = Measurement.from_dict(record)
    assert back == m
    assert (back.summary, back.wall_summary, back.graph_summary) == (
        m.summary, m.wall_summary, m.graph_summary)


def test_a_summary_whose_samples_changed_is_computed_again() -> None:
    record = timed().to_record()
    record["samples"] = [2 * x for x in record["samples"]]
    back = Measurement.from_dict(record)
    fresh = stats.summarize(back.samples, back.passes, 0.005)
    assert back.summary == fresh
    assert back.summary.median == pytest.approx(2 * timed().summary.median)


@pytest.mark.parametrize("change", [
    {"passes": [10, 30]},       # another split into processes widens the CI differently
    {"timer": "host"},          # another timer, another floor
])
def test_a_summary_of_other_passes_or_another_floor_is_computed_again(
        change: dict[str, Any]) -> None:
    record = timed().to_record() | change
    back = Measurement.from_dict(record)
    derived = back._derivation("samples")
    assert back.summary == stats.summarize(*derived)


@pytest.mark.parametrize("forged", [
    {"n": 39}, {"median": "fast"}, {"median": float("nan")}, {"ci_low": 1.0},
    {"of": "0" * 24},
])
def test_a_kept_summary_that_is_not_one_of_these_samples_is_ignored(
        forged: dict[str, Any]) -> None:
    m = timed()
    record = m.to_record()
    record["summaries"]["samples"] |= forged
    assert Measurement.from_dict(record).summary == m.summary


def test_a_record_without_samples_keeps_no_summary() -> None:
    failed = Measurement(Case("matmul", "correct", "torch", "cuda:0", "float32", 8), Status.OOM,
                         reason="out of memory")
    assert "summaries" not in failed.to_record()
    assert Measurement.from_dict(failed.to_record()).summary is None


def test_the_key_names_the_method(monkeypatch: pytest.MonkeyPatch) -> None:
    xs = (1.0, 2.0, 3.0)
    before = stats.summary_key(xs)
    monkeypatch.setattr(stats, "SUMMARY_METHOD", stats.SUMMARY_METHOD + "+changed")
    assert stats.summary_key(xs) != before


def test_a_store_reads_a_run_back_without_a_bootstrap(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    ms = synthetic.gpu_sweep()
    with SqliteStore(tmp_path / "r.sqlite") as store:
        store.create_run(synthetic.run())
        for m in ms:
            store.save(synthetic.run().run_id, m)
        refuse_to_summarize(monkeypatch)
        back = store.measurements(synthetic.run().run_id)
    assert [b.summary for b in back] == [m.summary for m in ms]


def test_an_export_read_back_takes_its_kept_summaries(monkeypatch: pytest.MonkeyPatch) -> None:
    ms = synthetic.gpu_sweep()
    doc = json.loads(json.dumps(run_document(synthetic.run(), ms)))
    refuse_to_summarize(monkeypatch)
    _, back = run_from_document(doc)
    assert [b.summary for b in back] == [m.summary for m in ms]
