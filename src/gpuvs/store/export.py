"""A run as one JSON document, written atomically (temp file, fsync, `os.replace`)."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from gpuvs.model import Measurement, Run

FORMAT_VERSION = 1


def run_document(run: Run, measurements: Iterable[Measurement]) -> dict[str, Any]:
    """Everything needed to redraw a run elsewhere: config, environment, raw samples."""
    return {
        "format_version": FORMAT_VERSION,
        "run": {"run_id": run.run_id, "started_at": run.started_at,
                "finished_at": run.finished_at, "status": run.status,
                "config": dict(run.config)},
        "environment": {"fingerprint": run.environment.fingerprint,
                        "facts": dict(run.environment.facts)},
        "measurements": [m.to_dict() for m in measurements],
    }


def write_atomic(path: Path, text: str) -> None:
    """Readers see the old file or the new one, never half of one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json(path: Path, run: Run, measurements: Iterable[Measurement]) -> None:
    write_atomic(path, json.dumps(run_document(run, measurements), indent=1, default=str))
