"""The `gpuvs dist` command in-process (typer's CliRunner); its ranks are real torchrun
subprocesses with Gloo on the CPU."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.helpers import invoke

from gpuvs.distributed.rank import Ranks

Invoke = Callable[..., Any]


@pytest.fixture
def dist(db: str) -> Invoke:
    """`dist("collectives", "--nproc", "2")` → the CliRunner result, on a temporary store."""
    pytest.importorskip("torch")

    def dist_invoke(*args: str) -> Any:
        return invoke("dist", *args, "--db", db)

    return dist_invoke


@pytest.fixture
def one_rank(tmp_path: Path) -> Iterator[Ranks]:
    """A process group of this process alone: the per-rank code without a launch."""
    pytest.importorskip("torch")
    import torch.distributed as dist

    dist.init_process_group("gloo", store=dist.FileStore(str(tmp_path / "pg"), 1), rank=0,
                            world_size=1)
    try:
        yield Ranks(0, 1, 0, "cpu", dist.group.WORLD, dist.group.WORLD, 0)
    finally:
        dist.destroy_process_group()
