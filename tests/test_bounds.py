"""Bounds everywhere (issue 43): timeouts, budgets, counts and sizes are checked at the
door with the accepted range in the message, and reading a run is bounded in memory —
a case of two million samples once asked 29.8 GiB of `report --from`, `compare`,
`check` and `predict --from-run`."""

from __future__ import annotations

import gzip
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from tests.helpers import REPO, invoke, pythonpath

from gpuvs import stats
from gpuvs.errors import UsageError
from gpuvs.model import Case, Caveat, Environment, Measurement, Run, Status
from gpuvs.store import open_store
from gpuvs.store.export import (
    MAX_FILE_BYTES,
    MAX_SAMPLES,
    SAMPLES_STORED,
    load_json,
    run_document,
    thinned,
)

WEEK = "must be a positive number of seconds up to 604,800 (a week); got 10000000000.0"
CASE = Case("matmul", "correct", "numpy", "cpu", "float32", 1024, (("shape", "square"),))
# A fresh interpreter that runs `gpuvs ARGS` and, at its exit, prints its peak memory.
PEAK = ("import atexit, resource, sys\n"
        "atexit.register(lambda: print('peak_kib', resource.getrusage(resource.RUSAGE_SELF)"
        ".ru_maxrss, file=sys.stderr))\n"
        "from gpuvs.cli import main\n"
        "sys.argv = ['gpuvs', *sys.argv[1:]]\n"
        "main()\n")
MOST_KIB = 1024 * 1024  # 1 GiB: the read measured 250 MB on the 2-core box


@pytest.mark.parametrize("command", [
    ["run", "-w", "matmul", "-b", "numpy", "-d", "cpu", "-s", "64"],
    ["run-file", "{script}::work", "-d", "cpu"],
    ["seeds", "--seed", "0", "-d", "cpu"],
], ids=["run", "run-file", "seeds"])
def test_a_timeout_past_a_week_is_one_line_and_no_run_is_left_running(
        command: list[str], tmp_path: Path) -> None:
    """`--timeout 1e10` gave `OverflowError: timestamp out of range` and left the run
    `running`."""
    (tmp_path / "mine.py").write_text("def work():\n    return 1\n")
    db = tmp_path / "r.sqlite"
    args = [a.format(script=tmp_path / "mine.py") for a in command]
    result = invoke(*args, "--timeout", "1e10", "--db", str(db))
    assert result.exit_code == 2, result.output
    assert result.output.strip().splitlines() == [f"error: --timeout {WEEK}"]
    assert not db.exists() or open_store(str(db)).runs() == []


def test_the_library_says_its_keyword_and_the_range() -> None:
    import gpuvs
    with pytest.raises(UsageError, match=r"budget_s must be a positive number of seconds up "
                                         r"to 604,800 \(a week\); got 1e\+20"):
        gpuvs.measure(lambda: None, budget_s=1e20)


@pytest.fixture(scope="module")
def two_million(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run export whose one case holds 2,000,000 samples in two passes (25 MB)."""
    rng = random.Random(0)
    samples = tuple(round(1e-3 * (1 + 0.01 * rng.random()), 9) for _ in range(2_000_000))
    m = Measurement(CASE, Status.OK, samples=samples, passes=(1_000_000, 1_000_000))
    run = Run("20261127-000000-big0", "2026-11-27T00:00:00+0000", {"budget_s": 1.0},
              Environment("fp", {"cpu_model": "test"}), "finished",
              "2026-11-27T00:01:00+0000")
    path = tmp_path_factory.mktemp("big") / "big.json"
    path.write_text(json.dumps(run_document(run, [m])))
    return path


@pytest.mark.parametrize("command", [
    ["report", "--from", "{big}", "-o", "{dir}/r.html"],
    ["compare", "{big}", "{big}"],
    ["check", "--baseline", "{big}", "--run", "{big}", "--db", "{dir}/empty.sqlite"],
    ["predict", "--from-run", "{big}", "--target", "h100", "-b", "torch"],
], ids=["report --from", "compare", "check", "predict --from-run"])
def test_a_case_of_two_million_samples_is_read_in_bounded_memory_and_said(
        command: list[str], two_million: Path, tmp_path: Path) -> None:
    open_store(str(tmp_path / "empty.sqlite")).close()
    args = [a.format(big=two_million, dir=tmp_path) for a in command]
    done = subprocess.run([sys.executable, "-c", PEAK, *args], capture_output=True,
                          text=True, timeout=600, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": pythonpath(), "COLUMNS": "200"})
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    peak = int(done.stderr.split("peak_kib")[-1])
    assert peak < MOST_KIB, f"{peak / 1024:.0f} MiB"
    assert (f"held up to 2,000,000 samples; an evenly spaced {MAX_SAMPLES:,} of each were "
            "read (caveat thinned") in done.stderr


def test_thinning_keeps_time_order_each_pass_its_share_and_says_so() -> None:
    n = 3 * MAX_SAMPLES
    m = Measurement(CASE, Status.OK, samples=tuple(float(i + 1) for i in range(n)),
                    wall_samples=tuple(2.0 for _ in range(n)), passes=(n // 3, 2 * n // 3))
    kept = thinned(m)
    assert len(kept.samples) == len(kept.wall_samples) == MAX_SAMPLES
    assert list(kept.samples) == sorted(kept.samples) and kept.samples[1] == 4.0  # every 3rd
    first = -(-MAX_SAMPLES // 3)  # the samples 0, 3, 6 … of the first third
    assert kept.passes == (first, MAX_SAMPLES - first)
    assert Caveat.THINNED in kept.caveats and kept.counters[SAMPLES_STORED] == n
    # The summary is the median of the passes' medians (stats.summarize): the first third
    # (1 … 20,000) has its middle near 10,000, the rest (20,001 … 60,000) near 40,000.
    assert kept.summary is not None and kept.summary.median == pytest.approx(25_000, rel=1e-3)
    small = Measurement(CASE, Status.OK, samples=(1.0, 2.0))
    assert thinned(small) is small


def test_a_run_file_past_the_limit_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    path = tmp_path / "huge.json"
    with path.open("wb") as f:  # sparse: no disk is spent on it
        f.truncate(MAX_FILE_BYTES + 1)
    with pytest.raises(UsageError, match=r"is 256 MiB; gpuvs reads a run file of at most "
                                         r"256 MiB"):
        load_json(path)


def test_the_bootstraps_draw_the_same_resamples_in_bounded_chunks() -> None:
    """Chunked, the draws are those of one (resamples, n) matrix: the same CI as before."""
    a = np.random.default_rng(1).lognormal(size=5000)
    b = np.random.default_rng(2).lognormal(size=3000)
    rng = np.random.default_rng(stats.BOOTSTRAP_SEED)
    whole = np.median(a[rng.integers(0, a.size, size=(2000, a.size))], axis=1)
    assert stats.bootstrap_median_ci(a) == tuple(np.quantile(whole, [0.025, 0.975]))
    rng = np.random.default_rng(stats.BOOTSTRAP_SEED)
    ma = np.median(a[rng.integers(0, a.size, size=(2000, a.size))], axis=1)
    mb = np.median(b[rng.integers(0, b.size, size=(2000, b.size))], axis=1)
    assert stats.ratio_ci(a, b)[1:] == tuple(np.quantile(ma / mb, [0.025, 0.975]))


def test_a_gzipped_run_file_is_read_and_one_that_inflates_past_the_limit_is_refused(
        tmp_path: Path) -> None:
    kept = REPO / "docs" / "runs" / "regression" / "h200-vm1-launch-a.json.gz"
    run, measurements, _ = load_json(kept)  # as docs/runs keeps exports
    assert run.run_id and measurements
    bomb = tmp_path / "bomb.json.gz"
    with gzip.open(bomb, "wb") as f:  # a few hundred KiB that inflate to 256 MiB and more
        for _ in range(MAX_FILE_BYTES // 2**20 + 1):
            f.write(b" " * 2**20)
    with pytest.raises(UsageError, match=r"bomb.json.gz inflates past 256 MiB; gpuvs reads "
                                         r"a run file of at most 256 MiB"):
        load_json(bomb)
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(kept.read_bytes()[:200])
    with pytest.raises(UsageError, match=r"cannot read .*cut.json.gz"):
        load_json(cut)
