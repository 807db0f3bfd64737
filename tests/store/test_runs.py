"""A run stopped early: marked `interrupted`, and the line that says so counts the cases
that need nothing more, not every row a first pass stored."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuvs.errors import Interrupted
from gpuvs.model import Case, Measurement, RunKind, Status
from gpuvs.store import open_store
from gpuvs.store.runs import guarded, start_run


def test_an_interrupted_run_says_how_many_cases_are_finished(tmp_path: Path) -> None:
    with open_store(str(tmp_path / "r.sqlite")) as store:
        run = start_run(store, RunKind.SWEEP, {})
        for size in (64, 128, 256):
            run.record(Measurement(Case("matmul", "correct", "numpy", "cpu", "float32", size),
                                   Status.OK, samples=(1e-3,) * 5))
        with pytest.raises(Interrupted, match="its 1 finished cases are kept"), \
                guarded(run, "finish it.", finished=lambda: 1):
            raise KeyboardInterrupt
        with pytest.raises(Interrupted, match="its 3 finished cases are kept"), \
                guarded(run, "finish it."):  # by default, every recorded case
            raise KeyboardInterrupt
        assert store.get_run(run.run_id).status == "interrupted"
