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


CSV_COLUMNS = ("run_id", "workload", "variant", "backend", "device", "dtype", "size", "params",
               "status", "reason", "median_s", "ci_low_s", "ci_high_s", "p25_s", "p75_s",
               "mean_s", "std_s", "min_s", "n", "loops", "wall_median_s", "first_call_s",
               "timer", "flops", "bytes_moved", "threads", "caveats")


def csv_rows(run: Run, measurements: Iterable[Measurement]) -> list[dict[str, Any]]:
    """One tidy row per case (statistics derived from the samples), for pandas."""
    rows = []
    for m in measurements:
        c, s = m.case, m.summary
        rows.append({
            "run_id": run.run_id, "workload": c.workload, "variant": c.variant,
            "backend": c.backend, "device": c.device, "dtype": c.dtype, "size": c.size,
            "params": ";".join(f"{k}={v}" for k, v in c.params), "status": m.status.value,
            "reason": m.reason,
            **({f"{k}_s": getattr(s, k) for k in ("median", "p25", "p75", "mean", "std", "min")}
               | {"ci_low_s": s.ci_low, "ci_high_s": s.ci_high, "n": s.n} if s else {}),
            "loops": m.loops,
            "wall_median_s": m.wall_summary.median if m.wall_summary else None,
            "first_call_s": m.first_call_s, "timer": m.timer,
            "flops": m.counters.get("flops"), "bytes_moved": m.counters.get("bytes_moved"),
            "threads": m.counters.get("threads"),
            "caveats": ";".join(cv.value for cv in m.caveats),
        })
    return rows


def write_csv(path: Path, run: Run, measurements: Iterable[Measurement]) -> None:
    import csv
    import io

    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=CSV_COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(csv_rows(run, measurements))
    write_atomic(path, buf.getvalue())
