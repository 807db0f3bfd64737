"""A case and a run the store tests save and read back, on either database."""

from __future__ import annotations

from gpuvs.model import Case, Environment, Run


def case(size: int = 1024, **params: str) -> Case:
    return Case("matmul", "correct", "torch", "cuda:0", "float32", size,
                tuple(params.items()))


def a_run(run_id: str = "r1", started_at: str = "2026-01-01T00:00:00+0000") -> Run:
    return Run(run_id, started_at, {"budget_s": 1.0, "sizes": [64, 128]},
               Environment("fp-abc", {"gpu": "H100", "cuda": "12.4"}))
