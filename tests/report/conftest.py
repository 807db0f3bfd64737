"""A real run for the report tests: NumPy and torch on the CPU, matmul and elementwise at
three small sizes, a tiny budget, one pass — made once per session through the command
line, with `--report` and `--json`, into a temporary database."""

from __future__ import annotations

import pytest
from tests.helpers import invoke
from tests.helpers import run_id as run_id_of
from tests.report.samples import RealRun

# One pass: the report draws what a run stored and says nothing of how many passes
# sampled a case; a second pass would only start NumPy's and torch's workers again to add
# samples (the merging of passes is tested in test_runner.py).
RUN_ARGS = ("run", "-w", "matmul,elementwise", "-s", "64,256,1024", "-b", "numpy,torch",
            "-d", "cpu", "--budget", "0.05", "--passes", "1")


@pytest.fixture(scope="session")
def real_run(tmp_path_factory: pytest.TempPathFactory) -> RealRun:
    pytest.importorskip("torch")
    root = tmp_path_factory.mktemp("real_run")
    db, report, doc = str(root / "results.sqlite"), root / "run.html", root / "run.json"
    result = invoke(*RUN_ARGS, "--db", db, "--report", str(report), "--json", str(doc))
    assert result.exit_code == 0, result.output
    run_id = run_id_of(result.output)
    return RealRun(db, run_id, report, doc)
