"""A run as one JSON document, written atomically (temp file, fsync, `os.replace`), and
read back: the document holds everything needed to redraw the run's report elsewhere —
config, environment, raw samples and the machine's measured ceilings."""

from __future__ import annotations

import gzip
import io
import json
import math
from bisect import bisect_left
from collections.abc import Iterable, Mapping
from dataclasses import asdict, fields, replace
from itertools import accumulate
from pathlib import Path
from typing import Any

from gpuvs.errors import UsageError
from gpuvs.machine import energy
from gpuvs.machine.memory import PEAK_DEVICE, PEAK_HOST
from gpuvs.model import Caveat, Ceiling, Environment, Measurement, Run
from gpuvs.store.output import write_atomic

FORMAT_VERSION = 1
# The largest size a case may have: the stores' 64-bit signed integer.
MAX_SIZE = 2**63 - 1
# How much of a value read from a file an error message quotes.
SHOWN_IN_ERRORS = 80
# The most samples a series of one case is read with, and the largest run file read.
# A case gpuvs measures holds about 500 samples (2 ms each over a 1 s budget, in two
# passes; 20,000 take a 40 s budget); a file anyone wrote may hold millions, and one of
# two million samples (17 MB) once asked 29.8 GiB of the statistics. A summary's
# bootstraps cost about 0.2 s per 1,000 samples on the 2-core box, so the bound is also
# the read's time. Past MAX_SAMPLES an evenly spaced subset is kept
# (`thinned`) rather than the file refused: its median and spread are the same, its
# stretches keep their time order, and only its interval widens, which errs on the side
# of doubt; the caveat THINNED and the counter SAMPLES_STORED say so. A file past
# MAX_FILE_BYTES is refused before it is parsed: parsing holds every number at once.
MAX_SAMPLES = 20_000
MAX_FILE_BYTES = 256 * 1024 * 1024
SAMPLES_STORED = "samples_stored"


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
        "measurements": [m.to_record() for m in measurements],
        "ceilings": [asdict(c) for c in ceilings],
    }


def schema() -> str:
    """The JSON Schema (draft 2020-12) of `run_document`'s output at FORMAT_VERSION, as
    shipped in the package (`gpuvs schema run` prints it): the contract a program reading
    an export can check it against."""
    from importlib.resources import files

    return files("gpuvs.store").joinpath("run.schema.json").read_text(encoding="utf-8")


def run_from_document(doc: Any) -> tuple[Run, list[Measurement]]:
    """The run and its measurements back from `run_document`'s output (parsed JSON).

    A document that is not one raises UsageError naming what is missing or wrong: the
    file is untrusted, and its numbers are checked as `measurement_from` checks them.
    """
    try:
        _check_version(doc)
        r, e = doc["run"], doc["environment"]
        run = Run(str(r["run_id"]), str(r["started_at"]), dict(r["config"]),
                  Environment(str(e["fingerprint"]), dict(e["facts"])), str(r["status"]),
                  None if r.get("finished_at") is None else str(r["finished_at"]),
                  str(r.get("reason", "")))
        return run, [measurement_from(m) for m in doc["measurements"]]
    except KeyError as err:
        raise UsageError(f"not a gpuvs run export: it has no {err.args[0]!r}") from None
    except (TypeError, ValueError, AttributeError, ArithmeticError) as err:
        raise UsageError(f"not a gpuvs run export: {err}") from None


def measurement_from(d: Any) -> Measurement:
    """A measurement read back from a file or a server, which anyone may have written:
    ValueError (or TypeError, KeyError) where it is not one gpuvs could have measured —
    a size past the store's 64-bit integer, a time that is zero, negative or not finite
    (the statistics divide by them), a count below its floor."""
    m = Measurement.from_dict(d)
    where = f"case {shorten(m.case.key)!r}"
    if not 0 <= m.case.size <= MAX_SIZE:
        raise ValueError(f"{where}: size {shorten(str(m.case.size))} is out of range "
                         f"(0 to {MAX_SIZE})")
    for name in ("samples", "wall_samples", "graph_samples"):
        bad = next((x for x in getattr(m, name) if not (math.isfinite(x) and x > 0)), None)
        if bad is not None:
            raise ValueError(f"{where}: {name} holds {bad!r}; a time is a positive, finite "
                             "number of seconds")
    first = m.first_call_s
    if first is not None and not (_is_number(first) and math.isfinite(first) and first >= 0):
        raise ValueError(f"{where}: first_call_s is {shorten(repr(first))}; a time is a "
                         "finite number of seconds from 0")
    bad_counter = next((k for k, v in m.counters.items() if not math.isfinite(v)), None)
    if bad_counter is not None:
        raise ValueError(f"{where}: counter {shorten(bad_counter)!r} is not finite")
    if m.loops < 1 or m.warmups < 0:
        raise ValueError(f"{where}: loops {m.loops}, warmups {m.warmups}; loops count from "
                         "1, warm-up calls from 0")
    return thinned(m)


def thinned(m: Measurement) -> Measurement:
    """`m` with at most MAX_SAMPLES samples in each series: an evenly spaced subset in
    time order, each pass keeping its share (see MAX_SAMPLES for why), marked THINNED."""
    longest = max(len(m.samples), len(m.wall_samples), len(m.graph_samples))
    if longest <= MAX_SAMPLES:
        return m
    samples, passes = _even(m.samples, m.passes)
    return replace(m, samples=samples, passes=passes,
                   wall_samples=_even(m.wall_samples, ())[0],
                   graph_samples=_even(m.graph_samples, ())[0],
                   caveats=tuple(dict.fromkeys((*m.caveats, Caveat.THINNED))),
                   counters={**m.counters, SAMPLES_STORED: float(longest)})


def _even(series: tuple[float, ...], groups: tuple[int, ...]
          ) -> tuple[tuple[float, ...], tuple[int, ...]]:
    """MAX_SAMPLES evenly spaced values of `series`, and how many fell in each group."""
    n = len(series)
    if n <= MAX_SAMPLES:
        return series, groups
    kept = [i * n // MAX_SAMPLES for i in range(MAX_SAMPLES)]
    ends = list(accumulate(groups)) if groups and sum(groups) == n else []
    starts = [0, *ends[:-1]] if ends else []
    counts = [bisect_left(kept, end) - bisect_left(kept, start)
              for start, end in zip(starts, ends, strict=True)]
    return tuple(series[i] for i in kept), tuple(c for c in counts if c)


def ceilings_from_document(doc: Mapping[str, Any]) -> list[Ceiling]:
    """The ceilings stored with the run; none in documents written before they were. A
    ceiling's value is a positive, finite rate or cost."""
    names = {f.name for f in fields(Ceiling)}
    try:
        found = [Ceiling(**{k: v for k, v in c.items() if k in names})
                 for c in doc.get("ceilings", ())]
    except (TypeError, AttributeError) as err:
        raise UsageError(f"not a gpuvs run export: bad 'ceilings': {err}") from None
    for c in found:
        texts = {f.name for f in fields(Ceiling) if f.type in ("str", str)}
        if not (_is_number(c.value) and math.isfinite(c.value) and c.value > 0) or not all(
                isinstance(getattr(c, f), str) for f in texts) or not isinstance(
                c.contended, bool):
            raise UsageError(f"not a gpuvs run export: bad 'ceilings': "
                             f"{shorten(repr(c))}; a ceiling's value is a positive number")
    return found


def shorten(text: str, most: int = SHOWN_IN_ERRORS) -> str:
    """A value from a file as a message shows it: at most `most` characters."""
    return text if len(text) <= most else f"{text[:most]}… ({len(text):,} characters)"


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _check_version(doc: Any) -> None:
    if not isinstance(doc, Mapping):
        raise UsageError("not a gpuvs run export: expected a JSON object")
    version = doc.get("format_version")
    if version != FORMAT_VERSION:
        raise UsageError(f"unsupported format_version {version!r}; this gpuvs reads "
                         f"{FORMAT_VERSION}")


def load_json(path: Path) -> tuple[Run, list[Measurement], list[Ceiling]]:
    """A run exported with `gpuvs export -f json` (or `--json`), from a file, gzipped or
    not (docs/runs keeps them gzipped): at most MAX_FILE_BYTES, inflated too, and each
    case's series at most MAX_SAMPLES (`thinned`)."""
    too_big = (f"gpuvs reads a run file of at most {MAX_FILE_BYTES // 2**20} MiB (export "
               "fewer cases, or a run at a time)")
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise UsageError(f"{path} is {size / 2**20:,.0f} MiB; {too_big}")
        raw = path.read_bytes()
        if raw[:2] == b"\x1f\x8b":  # gzip's magic: read no more than the limit inflated
            with gzip.GzipFile(fileobj=io.BytesIO(raw)) as inflated:
                raw = inflated.read(MAX_FILE_BYTES + 1)
            if len(raw) > MAX_FILE_BYTES:
                raise UsageError(f"{path} inflates past {MAX_FILE_BYTES // 2**20} MiB; "
                                 f"{too_big}")
        doc = json.loads(raw.decode("utf-8"))
    except (OSError, EOFError) as err:  # a gzip stream that is broken or cut short too
        raise UsageError(f"cannot read {path}: "
                         f"{getattr(err, 'strerror', None) or err or 'cut short'}") from None
    except RecursionError:
        raise UsageError(f"{path} is not a gpuvs run export: it nests arrays or objects "
                         "too deeply") from None
    except ValueError as err:  # not UTF-8, not JSON, an integer of 4,300 digits or more
        raise UsageError(f"{path} is not JSON: {shorten(str(err))}") from None
    try:
        run, measurements = run_from_document(doc)
        return run, measurements, ceilings_from_document(doc)
    except UsageError as err:
        raise UsageError(f"{path}: {err}") from None


def write_json(path: Path, run: Run, measurements: Iterable[Measurement],
               ceilings: Iterable[Ceiling] = ()) -> None:
    write_atomic(path, json_text(run, measurements, ceilings))


# When the run started, beside its id: rows of many runs line up in time in pandas.
CSV_COLUMNS = ("run_id", "started_at", "workload", "variant", "backend", "device", "dtype",
               "size", "params", "status", "reason", "median_s", "ci_low_s", "ci_high_s",
               "p25_s", "p75_s", "mean_s", "std_s", "min_s", "n", "loops", "wall_median_s",
               "first_call_s", "timer", "flops", "bytes_moved", "threads",
               # Energy per call (joules; `energy_measured` false: a declared CPU power
               # times the median), above idle, average watts; peak memory in bytes:
               "energy_j", "energy_above_idle_j", "energy_w", "energy_measured",
               "peak_host_bytes", "peak_device_bytes", "caveats",
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
        **_energy_columns(m),
        "peak_host_bytes": m.counters.get(PEAK_HOST),
        "peak_device_bytes": m.counters.get(PEAK_DEVICE),
        "caveats": ";".join(cv.value for cv in m.caveats),
    }


def _energy_columns(m: Measurement) -> dict[str, Any]:
    found = energy.of(m)
    if found is None:
        return dict.fromkeys(("energy_j", "energy_above_idle_j", "energy_w",
                              "energy_measured"))
    return {"energy_j": found.per_call_j, "energy_above_idle_j": found.above_idle_j,
            "energy_w": found.watts, "energy_measured": found.measured}


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

