"""A run as one JSON document, written atomically (temp file, fsync, `os.replace`), and
read back: the document holds everything needed to redraw the run's report elsewhere —
config, environment, raw samples and the machine's measured ceilings."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any

from gpuvs.errors import UsageError
from gpuvs.model import Ceiling, Environment, Measurement, Run

FORMAT_VERSION = 1
SHARED_MODE = 0o644


def run_document(run: Run, measurements: Iterable[Measurement],
                 ceilings: Iterable[Ceiling] = ()) -> dict[str, Any]:
    """Everything needed to redraw a run elsewhere: config, environment, raw samples, and
    the ceilings its report places the cases against."""
    return {
        "format_version": FORMAT_VERSION,
        "run": {"run_id": run.run_id, "started_at": run.started_at,
                "finished_at": run.finished_at, "status": run.status,
                "reason": run.reason, "config": dict(run.config)},
        "environment": {"fingerprint": run.environment.fingerprint,
                        "facts": dict(run.environment.facts)},
        "measurements": [m.to_dict() for m in measurements],
        "ceilings": [asdict(c) for c in ceilings],
    }


def run_from_document(doc: Any) -> tuple[Run, list[Measurement]]:
    """The run and its measurements back from `run_document`'s output (parsed JSON).

    A document that is not one raises UsageError naming what is missing or wrong.
    """
    try:
        _check_version(doc)
        r, e = doc["run"], doc["environment"]
        run = Run(str(r["run_id"]), str(r["started_at"]), dict(r["config"]),
                  Environment(str(e["fingerprint"]), dict(e["facts"])), str(r["status"]),
                  None if r.get("finished_at") is None else str(r["finished_at"]),
                  str(r.get("reason", "")))
        return run, [Measurement.from_dict(m) for m in doc["measurements"]]
    except KeyError as err:
        raise UsageError(f"not a gpuvs run export: it has no {err.args[0]!r}") from None
    except (TypeError, ValueError, AttributeError) as err:
        raise UsageError(f"not a gpuvs run export: {err}") from None


def ceilings_from_document(doc: Mapping[str, Any]) -> list[Ceiling]:
    """The ceilings stored with the run; none in documents written before they were."""
    names = {f.name for f in fields(Ceiling)}
    try:
        return [Ceiling(**{k: v for k, v in c.items() if k in names})
                for c in doc.get("ceilings", ())]
    except (TypeError, AttributeError) as err:
        raise UsageError(f"not a gpuvs run export: bad 'ceilings': {err}") from None


def _check_version(doc: Any) -> None:
    if not isinstance(doc, Mapping):
        raise UsageError("not a gpuvs run export: expected a JSON object")
    version = doc.get("format_version")
    if version != FORMAT_VERSION:
        raise UsageError(f"unsupported format_version {version!r}; this gpuvs reads "
                         f"{FORMAT_VERSION}")


def load_json(path: Path) -> tuple[Run, list[Measurement], list[Ceiling]]:
    """A run exported with `gpuvs export -f json` (or `--json`), from a file."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except OSError as err:
        raise UsageError(f"cannot read {path}: {err.strerror or err}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise UsageError(f"{path} is not JSON: {err}") from None
    try:
        run, measurements = run_from_document(doc)
        return run, measurements, ceilings_from_document(doc)
    except UsageError as err:
        raise UsageError(f"{path}: {err}") from None


def write_atomic(path: Path, content: str | bytes) -> None:
    """Readers see the old file or the new one, never half of one.

    The temporary file is private (0600); the result gets the mode of the file it replaces,
    else the usual 0644, since a report or an export is written to be shared.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o777 if path.exists() else SHARED_MODE
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as f:
            f.write(content.encode() if isinstance(content, str) else content)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json(path: Path, run: Run, measurements: Iterable[Measurement],
               ceilings: Iterable[Ceiling] = ()) -> None:
    write_atomic(path, json_text(run, measurements, ceilings))


# When the run started, beside its id: rows of many runs line up in time in pandas.
CSV_COLUMNS = ("run_id", "started_at", "workload", "variant", "backend", "device", "dtype",
               "size", "params", "status", "reason", "median_s", "ci_low_s", "ci_high_s",
               "p25_s", "p75_s", "mean_s", "std_s", "min_s", "n", "loops", "wall_median_s",
               "first_call_s", "timer", "flops", "bytes_moved", "threads", "caveats",
               # The environment, so rows from many runs and machines group in pandas:
               "machine", "gpu", "driver", "cpu", "numpy", "torch", "cupy", "jax",
               "git_commit", "git_dirty", "fingerprint")


def environment_columns(run: Run) -> dict[str, Any]:
    """What a run ran on and what it ran, as CSV columns (empty where unknown: runs made
    before gpuvs recorded a provenance have no machine label or commit)."""
    f = run.environment.facts
    prov = f.get("provenance") or {}
    libs = f.get("libraries") or {}
    cupy = next((v for k, v in libs.items() if k.startswith("cupy")), None)
    return {"machine": prov.get("machine"),
            "gpu": ", ".join(dict.fromkeys(str(g.get("name")) for g in f.get("gpus") or [])),
            "driver": f.get("driver"), "cpu": f.get("cpu_model"),
            "numpy": libs.get("numpy"), "torch": libs.get("torch"), "cupy": cupy,
            "jax": libs.get("jax"), "git_commit": prov.get("git_commit"),
            "git_dirty": prov.get("git_dirty"), "fingerprint": run.environment.fingerprint}


def csv_rows(run: Run, measurements: Iterable[Measurement]) -> list[dict[str, Any]]:
    """One tidy row per case (statistics derived from the samples), for pandas, with the
    run's environment on every row."""
    environment = environment_columns(run)
    return [{"run_id": run.run_id, "started_at": run.started_at, **case_row(m), **environment}
            for m in measurements]


def case_row(m: Measurement) -> dict[str, Any]:
    """One case as a flat row: its axes, status, statistics, counters and caveats (the
    columns of the CSV export and of `Comparison.to_pandas()`)."""
    c, s = m.case, m.summary
    return {
        "workload": c.workload, "variant": c.variant,
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
    }


def csv_text(run: Run, measurements: Iterable[Measurement]) -> str:
    import csv
    import io

    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=CSV_COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(csv_rows(run, measurements))
    return buf.getvalue()


def json_text(run: Run, measurements: Iterable[Measurement],
              ceilings: Iterable[Ceiling] = ()) -> str:
    return json.dumps(run_document(run, measurements, ceilings), indent=1, default=str)


def write_csv(path: Path, run: Run, measurements: Iterable[Measurement]) -> None:
    write_atomic(path, csv_text(run, measurements))
