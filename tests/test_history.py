"""Answers across runs, on real stored runs: `gpuvs runs`, `compare` and `check`, with
real workers measuring real (test) workloads and a real SQLite store."""

from __future__ import annotations

import json
import re
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from tests.helpers import run_id as run_id_of
from tests.helpers import use_test_plugins
from typer.testing import CliRunner

from gpuvs.cli import app

SUITE = ["run", "-w", "test_planted", "-b", "numpy", "-d", "cpu", "-s", "2000,5000",
         "--budget", "0.4"]


def gpuvs(db: str, *args: str) -> Any:
    return CliRunner().invoke(app, [*args, "--db", db], env={"COLUMNS": "200"})


def run_id(result: Any) -> str:
    return run_id_of(result.output)


@pytest.fixture(scope="module")
def suite_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    """Two real runs of SUITE, one after the other into one store. Made once for the
    module (each costs real workers and samples); each test reads them from a copy of
    its own (`two_runs`)."""
    store = tmp_path_factory.mktemp("history") / "results.sqlite"
    with pytest.MonkeyPatch.context() as mp:
        use_test_plugins(mp)
        first = gpuvs(str(store), *SUITE)
        second = gpuvs(str(store), *SUITE)
    assert first.exit_code == 0 and second.exit_code == 0, first.output + second.output
    return store, run_id(first), run_id(second)


@pytest.fixture
def two_runs(db: str, suite_store: tuple[Path, str, str]) -> tuple[str, str]:
    """The module's two runs, in a store of this test's own at `db`: what a test adds
    there (a third, slower run) is never seen by another."""
    store, a, b = suite_store
    with closing(sqlite3.connect(store)) as source, closing(sqlite3.connect(db)) as copy:
        source.backup(copy)
    return a, b


@pytest.mark.usefixtures("worker_env")
def test_two_runs_of_one_suite_are_never_called_slower(db: str, two_runs: tuple[str, str]
                                                       ) -> None:
    a, b = two_runs
    compared = gpuvs(db, "compare", a, b)
    assert compared.exit_code == 0, compared.output
    # The last column, whole: a verdict may carry a word of its own ("ambiguous
    # (contended)" on a busy machine), one space apart where columns are two.
    verdicts = [re.split(r" {2,}", line.strip())[-1] for line in compared.output.splitlines()
                if line.startswith("test_planted/")]
    assert len(verdicts) == 2
    assert all(v.startswith(("same", "ambiguous")) for v in verdicts), compared.output
    checked = gpuvs(db, "check", "--baseline", a, "--run", b)
    assert checked.exit_code == 0, checked.output


@pytest.mark.usefixtures("worker_env")
def test_planted_slower_code_fails_the_gate_and_is_named(db: str, two_runs: tuple[str, str],
                                                         monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    a, _ = two_runs
    monkeypatch.setenv("GPUVS_PLANTED_SLOWDOWN", "1.5")
    slower = gpuvs(db, *SUITE)
    checked = gpuvs(db, "check", "--baseline", a, "--fail-above", "10%")
    assert checked.exit_code == 1, checked.output
    assert "FAILED: 2 case(s) slower by more than 10 %" in checked.output
    named = re.search(r"test_planted/correct/numpy/cpu/float32/2000 \(([\d.]+)×\)",
                      checked.output)
    assert named is not None, checked.output
    assert float(named[1]) == pytest.approx(1.5, rel=0.05)  # the planted 1.5×, as measured
    listed = gpuvs(db, "runs", "-w", "test_planted")
    assert run_id(slower) in listed.output


@pytest.mark.usefixtures("worker_env")
def test_a_baseline_from_another_machine_is_refused_unless_forced(
        db: str, two_runs: tuple[str, str], tmp_path: Path) -> None:
    a, b = two_runs
    exported = tmp_path / "elsewhere.json"
    assert gpuvs(db, "export", a, "-f", "json", "-o", str(exported)).exit_code == 0
    doc = json.loads(exported.read_text())
    doc["environment"]["fingerprint"] = "0123456789abcdef"
    exported.write_text(json.dumps(doc))
    refused = gpuvs(db, "check", "--baseline", str(exported), "--run", b)
    assert refused.exit_code == 2
    assert "ran on another set-up (fingerprint 0123456789abcdef" in refused.output
    assert gpuvs(db, "check", "--baseline", str(exported), "--run", b,
                 "--force").exit_code == 0
    across = gpuvs(db, "compare", str(exported), b)
    assert "ran on different set-ups" in across.output
    assert "this compares the machines and their software, by design" in across.output


@pytest.mark.usefixtures("worker_env")
def test_markdown_for_a_pull_request_and_pages_that_need_no_network(
        db: str, two_runs: tuple[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
        ) -> None:
    a, b = two_runs
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    shown = gpuvs(db, "show", b, "--format", "md")
    assert "| size | backend |" in shown.output and "**test_planted" in shown.output
    checked = gpuvs(db, "check", "--baseline", a, "--run", b, "--format", "md")
    assert "| case | A | B | B ÷ A (95 % CI) | rank test p | verdict |" in checked.output
    assert summary.read_text().count("| case | A | B |") == 1
    page = tmp_path / "compare.html"
    assert gpuvs(db, "compare", a, b, "--report", str(page)).exit_code == 0
    history = tmp_path / "history.html"
    assert gpuvs(db, "report", "--history", "-o", str(history)).exit_code == 0
    for html in (page.read_text(), history.read_text()):
        assert "<svg" in html and "<script" not in html and "@import" not in html
        assert 'src="http' not in html and 'href="http' not in html and "url(http" not in html


@pytest.mark.usefixtures("worker_env")
def test_runs_are_listed_newest_first_and_filtered(db: str, two_runs: tuple[str, str]
                                                   ) -> None:
    a, b = two_runs
    listed = gpuvs(db, "runs").output
    assert listed.index(b) < listed.index(a)
    assert a not in gpuvs(db, "runs", "--gpu", "H100").output
    assert a in gpuvs(db, "runs", "--since", "1d", "--machine",
                      __import__("platform").node()).output
    bad = gpuvs(db, "runs", "--since", "yesterday")
    assert bad.exit_code == 2 and "--since 'yesterday' is not a date" in bad.output


@pytest.mark.usefixtures("worker_env")
def test_the_csv_groups_runs_by_machine_and_goes_to_standard_output(
        db: str, two_runs: tuple[str, str]) -> None:
    import csv
    import io
    import platform

    a, _ = two_runs
    result = CliRunner().invoke(app, ["export", a, "-f", "csv", "-o", "-", "--db", db])
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert len(rows) == 2 and rows[0]["run_id"] == a
    assert rows[0]["machine"] == platform.node() and rows[0]["numpy"]
    assert rows[0]["fingerprint"] and "wrote" not in result.stdout
