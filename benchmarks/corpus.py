"""`gpuvs predict` on functions it has never seen: the corpus, predicted and measured.

The corpus (`benchmarks/corpus/functions.py`) holds ordinary PyTorch functions at a small
and a large size, split by function: `fit` ones calibrate the model for the user's code,
`held_out` ones are judged and published.

**On the GPU machine**, one command (about 3 minutes of `gpuvs ceilings` with the op-class
probes, then 3–4 minutes of corpus on an H100; it stops starting functions at
--deadline, 500 s after it started by default, and keeps what it measured):

    PYTHONPATH=src python3 benchmarks/corpus.py measure --out $OUT --name h100

1. `gpuvs ceilings --refresh --budget 0.3 --save-profile NAME-next` (the shipped name is
   refused when saving), each probe in two processes as the shipped profile was
   measured, copied to OUT/NAME.json under NAME — the profile to ship, measured;
2. per function and size: `gpuvs.predict(fn, *args, target=OUT/NAME.json)` (the CPU
   measured, the work counted by class, the GPU predicted by the model alone, budget
   0.1 s) and `gpuvs.compare(fn, *args, devices=("cuda",))` (the GPU resident and
   end-to-end, budget 0.1 s; the CPU was just measured), each record written to
   OUT/corpus.json as it finishes. The winner measured is that CPU time against the
   GPU's measured one, the winner predicted the same CPU time against the prediction.

`--profile FILE` skips step 1 (a profile measured before). Without a GPU, compare's GPU
cases are unavailable and the records say so.

**Here, from those files** (nothing measured):

    PYTHONPATH=src python3 benchmarks/corpus.py tables --from OUT/corpus.json \\
        --profile OUT/h100.json [--residuals SUITE/h100.residuals.json] \\
        [--write-residuals src/gpuvs/predicting/profiles/h100.residuals.json] \\
        [--markdown TABLES.md] [--recount]

It re-prices every record's counted work with the profile, calibrates the user's code
with the fit functions (measured ÷ modelled: residuals of workload "", one series per
function and data placement; beside the suite's residuals when given) and prints, per
held-out function: predicted, measured, interval, error, and the winner (CPU or GPU)
predicted against measured, then the held-out medians against the issue's bar (data
resident: median error ≤ 30 %, ≥ 80 % inside the 90 % interval, winner right ≥ 90 %;
end-to-end: ≤ 35 %, ≥ 80 %). The fit functions are judged too, each predicted without
its own series. `--write-residuals` writes the suite's residuals with the fit
functions' beside them: what ships for NAME. `--recount` counts each function's work
again with this checkout (records measured before the counting changed), keeping the
host cost the target's CPU measured.

**On another GPU of the same chip** (the H200 is the H100's processor with faster
memory), the held-out functions measured there are judged with the fit functions
measured on the first: a ratio of measured to modelled time is what the model misses
about the code, and the two profiles carry what differs between the machines.

    PYTHONPATH=src python3 benchmarks/corpus.py tables --from H200/corpus.json \\
        --profile H200/h200.json --residuals H200/h200.residuals.json \\
        --fit-from docs/runs/corpus/h100-corpus.json.gz \\
        --fit-profile docs/runs/corpus/h100-profile-20261127.json

**A held-out set, as `gpuvs predict` predicts it.** A run of held-out functions has no
`fit` function of its own, and without one the tables would calibrate its calls by the
suite's workloads of their regime. `--as-shipped` calibrates them with the shipped
residuals file as it is, its fit functions' points included:

    PYTHONPATH=src python3 benchmarks/corpus.py tables --from OUT/corpus.json \\
        --profile src/gpuvs/predicting/profiles/h200.json \\
        --residuals src/gpuvs/predicting/profiles/h200.residuals.json --as-shipped
"""

from __future__ import annotations

import argparse
import gzip
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import numpy as np

from gpuvs.errors import UsageError
from gpuvs.predicting import pricing, profile
from gpuvs.predicting.residuals import USERS, Residual, Residuals, beside, of_points, save
from gpuvs.predicting.work import Tally, Work

HERE = Path(__file__).resolve().parent
BUDGET_S = 0.1
DEADLINE_S = 500.0
CEILINGS = ("ceilings", "--refresh", "--budget", "0.3")
CEILINGS_PASSES = 2
BAR = {"resident": (0.30, 0.80, 0.90), "end_to_end": (0.35, 0.80, None)}
DATA = ("resident", "end_to_end")


def functions() -> Any:
    """The corpus module (a folder beside this script, not a package)."""
    spec = importlib.util.spec_from_file_location("gpuvs_corpus", HERE / "corpus" /
                                                  "functions.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return measure(args) if args.mode == "measure" else tables(args)
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    modes = p.add_subparsers(dest="mode", required=True)
    m = modes.add_parser("measure", help="on the GPU machine: predict and compare each "
                                         "function")
    m.add_argument("--out", required=True, help="directory for every file written")
    m.add_argument("--name", default="h100", help="the profile's name (default h100)")
    m.add_argument("--profile", help="a profile file to predict with, instead of "
                                     "measuring one now")
    m.add_argument("--only", action="append", default=[], metavar="FUNCTION",
                   help="only these functions (repeatable)")
    m.add_argument("--split", choices=("fit", "held_out"),
                   help="only the functions of this split")
    m.add_argument("--budget", type=float, default=BUDGET_S,
                   help=f"sampling seconds per case (default {BUDGET_S})")
    m.add_argument("--deadline", type=float, default=DEADLINE_S,
                   help="start no function after this many seconds")
    t = modes.add_parser("tables", help="here: the error tables from measure's files")
    t.add_argument("--from", dest="source", required=True, metavar="CORPUS.json")
    t.add_argument("--profile", required=True, metavar="PROFILE.json")
    t.add_argument("--residuals", metavar="RESIDUALS.json",
                   help="the suite's residuals for the same profile (benchmarks/predict.py)")
    t.add_argument("--write-residuals", metavar="FILE",
                   help="write the suite's residuals with the fit functions' beside them")
    t.add_argument("--markdown", metavar="FILE", help="also write the tables here")
    t.add_argument("--recount", action="store_true",
                   help="count each function's work again here (after the counting "
                        "changed), keeping the host cost measured on the target's CPU")
    t.add_argument("--fit-from", metavar="CORPUS.json",
                   help="calibrate with the fit functions of this corpus run instead, "
                        "measured on another GPU of the same chip (each function's "
                        "measured ÷ modelled time, priced with --fit-profile)")
    t.add_argument("--fit-profile", metavar="PROFILE.json",
                   help="the profile --fit-from's run was priced with (its GPU's)")
    t.add_argument("--as-shipped", action="store_true",
                   help="calibrate with --residuals as it is, its fit functions' points "
                        "included, as `gpuvs predict` does: how a held-out set is judged")
    return p


# --- on the GPU machine ------------------------------------------------------------

def measure(args: argparse.Namespace) -> int:
    started = time.monotonic()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    target = Path(args.profile) if args.profile else _measured_profile(args.name, out)
    import gpuvs

    path = out / "corpus.json"
    records: list[dict[str, Any]] = []
    for f in functions().FUNCTIONS:
        if args.only and f.name not in args.only or args.split and f.split != args.split:
            continue
        if time.monotonic() - started > args.deadline:
            print(f"deadline: {f.name} and after not measured", flush=True)
            break
        for size in f.sizes:
            records.append(_record(gpuvs, f, size, target, args.budget))
            _write(path, {"profile": str(target), "device": _device(),
                          "elapsed_s": time.monotonic() - started, "records": records})
            print(f"{f.name}[{size}]: {_line(records[-1])}", flush=True)
    print(f"wrote {path}: {len(records)} records in {time.monotonic() - started:.0f} s")
    return 0


def _measured_profile(name: str, out: Path) -> Path:
    """`gpuvs ceilings --save-profile NAME-next` now, copied as NAME (a shipped name
    cannot be saved): the profile this run predicts with, and the one to ship."""
    saved = Path(tempfile.mkdtemp(prefix="gpuvs-profiles-"))
    # Each probe in CEILINGS_PASSES processes, as the shipped profile was measured (a
    # GPU machine's default is now five, minutes more than this run can spend).
    (saved / "pyproject.toml").write_text(f"[tool.gpuvs]\npasses = {CEILINGS_PASSES}\n",
                                          encoding="utf-8")
    import gpuvs  # this gpuvs, wherever the command runs from (cwd is `saved`)

    here = str(Path(gpuvs.__file__).resolve().parents[1])
    env = {**os.environ, profile.ENV_VAR: str(saved),
           "PYTHONPATH": os.pathsep.join([here, os.environ.get("PYTHONPATH", "")])}
    with open(out / "ceilings.log", "w", encoding="utf-8") as log:
        done = subprocess.run([sys.executable, "-m", "gpuvs", *CEILINGS, "--save-profile",
                               f"{name}-next", "--db", str(saved / "ceilings.sqlite")],
                              stdout=log, stderr=subprocess.STDOUT, env=env, check=False,
                              cwd=saved)
    if done.returncode not in (0, 1):
        raise UsageError(f"gpuvs ceilings failed (exit {done.returncode}); see "
                         f"{out / 'ceilings.log'}")
    measured = profile.load_file(saved / f"{name}-next.json").profile
    target = out / f"{name}.json"
    target.write_text(json.dumps(replace(measured, name=name).to_dict(), indent=1) + "\n",
                      encoding="utf-8")
    return target


def _record(gpuvs: Any, f: Any, size: int, target: Path, budget: float) -> dict[str, Any]:
    record: dict[str, Any] = {"name": f.name, "split": f.split, "size": size,
                              "what": f.what}
    try:
        fn, args = f.build(size)
        forecast = gpuvs.predict(fn, *args, target=str(target), budget_s=budget,
                                 name=f.name)
        record["work"] = asdict(forecast.work)
        record["cpu_s"] = _median(forecast.cpu)  # measured by gpuvs.predict, here
        record["predicted"] = {
            data: {"seconds": p.seconds, "why": p.why(), "notes": list(p.estimate.notes)}
            for data, p in (("resident", forecast.resident),
                            ("end_to_end", forecast.end_to_end))}
        fn, args = f.build(size)  # the GPU alone: the CPU was measured just now
        compared = gpuvs.compare(fn, *args, devices=("cuda",), budget_s=budget,
                                 name=f.name)
        record["measured"] = {_placement(m.case): {
            "seconds": _median(m), "status": str(m.status), "reason": m.reason,
            "caveats": [str(c) for c in m.caveats]} for m in compared.measurements}
    except Exception as e:  # a function that fails is recorded, and the corpus goes on
        record["error"] = f"{type(e).__name__}: {e}"
    return record


def _placement(case: Any) -> str:
    return str(case.param("data", "resident"))


def _median(m: Any) -> float | None:
    return m.summary.median if m.summary is not None else None


def _device() -> str:
    import torch
    return str(torch.cuda.get_device_name(0)) if torch.cuda.is_available() else "no GPU"


def _line(r: dict[str, Any]) -> str:
    if "error" in r:
        return str(r["error"])
    gpu = r["measured"].get("resident", {}).get("seconds")
    return (f"GPU predicted {r['predicted']['resident']['seconds']:.3g} s (model alone), "
            f"measured {gpu if gpu is None else f'{gpu:.3g} s'}")


def _write(path: Path, doc: dict[str, Any]) -> None:
    path.with_suffix(".tmp").write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    path.with_suffix(".tmp").replace(path)


# --- here: the tables --------------------------------------------------------------

def tables(args: argparse.Namespace) -> int:
    if bool(args.fit_from) != bool(args.fit_profile):
        raise UsageError("--fit-from and --fit-profile go together: the fit functions' run "
                         "and the profile of the GPU it ran on")
    if args.as_shipped and (args.fit_from or not args.residuals):
        raise UsageError("--as-shipped judges with --residuals as it is: give --residuals, "
                         "and no --fit-from")
    doc = _records(Path(args.source), args.recount)
    found = profile.load_file(Path(args.profile))
    judged = _judged(doc["records"], found.profile)
    if not judged:
        raise UsageError(f"no record of {args.source} has a GPU measured: nothing to judge")
    suite = (Residuals.from_dict(json.loads(Path(args.residuals).read_text()),
                                 args.residuals) if args.residuals else beside(found))
    # as `gpuvs predict` calibrates the user's code, or with the fit functions as counted
    # and priced now
    residuals = (suite if args.as_shipped and suite is not None
                 else _fitted(args, doc, judged, found, suite))
    rows = [_row(r, data, e, measured, residuals) for r, data, e, measured in judged]
    text = _markdown(rows, doc, found.profile.name)
    print(text)
    if args.markdown:
        Path(args.markdown).write_text(text, encoding="utf-8")
    if args.write_residuals:
        save(residuals, Path(args.write_residuals))
    return 0


def _fitted(args: argparse.Namespace, doc: dict[str, Any],
            judged: list[tuple[dict[str, Any], str, pricing.Estimate, float]],
            found: profile.Found, suite: Residuals | None) -> Residuals:
    """The suite's residuals with the fit functions' beside them: the judged run's, and
    `--fit-from`'s, measured on another GPU of the same chip (ratios travel between such
    GPUs: the profiles hold the rest)."""
    on = found.profile.name  # each function's ratio is its own GPU's (`measured_on`)
    fitted = [(*j, on) for j in judged]
    fit_runs = ["corpus"]
    if args.fit_from:
        fit_doc = _records(Path(args.fit_from), args.recount)
        elsewhere = profile.load_file(Path(args.fit_profile)).profile
        fitted = [*((*j, elsewhere.name) for j in _judged(fit_doc["records"], elsewhere)),
                  *fitted]
        fit_runs = [f"corpus on {fit_doc.get('device', 'another GPU')}",
                    *(["corpus"] if any(j[0]["split"] == "fit" for j in judged) else [])]
    fit = [Residual(USERS, e.regime, _series(r, data), measured / e.seconds, gpu)
           for r, data, e, measured, gpu in fitted if r["split"] == "fit"]
    return of_points(found.profile.name,
                     dict.fromkeys((*(suite.runs if suite else ()), *fit_runs)),
                     suite.measured_at if suite else doc.get("device", ""),
                     (*(p for p in (suite.points if suite else ()) if p.workload != USERS),
                      *fit))


def _records(source: Path, recount: bool) -> dict[str, Any]:
    """A corpus run's document (as measured, or gzipped as docs/ keeps it), each record's
    split the corpus's now: a function that shaped the model since it was measured is
    `fit`, whatever the record says it was then."""
    doc = json.loads(gzip.decompress(source.read_bytes()) if source.suffix == ".gz"
                     else source.read_text(encoding="utf-8"))
    splits = {f.name: f.split for f in functions().FUNCTIONS}
    doc["records"] = [{**r, "split": splits.get(r["name"], r["split"])}
                      for r in doc["records"]]
    if recount:
        doc["records"] = [_recounted(r) for r in doc["records"]]
    return doc


def _recounted(r: dict[str, Any]) -> dict[str, Any]:
    """`r` with its work counted again by this checkout (the counting runs on the CPU and
    reads no clock but the host cost's, which is kept as the target's CPU measured it)."""
    if "work" not in r:
        return r
    from gpuvs.predicting.counting import count

    f = next(f for f in functions().FUNCTIONS if f.name == r["name"])
    fn, args = f.build(r["size"])
    work, _ = count(fn, args, {})
    return {**r, "work": {**asdict(work), "host_s": r["work"]["host_s"]}}


def _judged(records: list[dict[str, Any]], found: profile.Profile
            ) -> list[tuple[dict[str, Any], str, pricing.Estimate, float]]:
    """Each record's placements with a finished GPU measurement: (record, placement,
    the model's estimate, the measured seconds)."""
    out = []
    for r in records:
        if "work" not in r:
            continue
        work = _work(r["work"])
        for data in DATA:
            measured = r.get("measured", {}).get(data, {}).get("seconds")
            if measured:
                placed = work if data == "end_to_end" else replace(work, copied_in=(),
                                                                   copied_out=())
                out.append((r, data, pricing.estimate(placed, found), measured))
    return out


def _work(d: dict[str, Any]) -> Work:
    return Work(**{**d, "copied_in": tuple(d["copied_in"]),
                   "copied_out": tuple(d["copied_out"]), "named": tuple(d["named"]),
                   "tallies": tuple(Tally(**t) for t in d["tallies"])})


def _series(r: dict[str, Any], data: str) -> str:
    return f"corpus/{r['name']}/{data}"


def _row(r: dict[str, Any], data: str, e: pricing.Estimate, measured: float,
         residuals: Residuals) -> dict[str, Any]:
    p = residuals.predict(e, USERS, leave_out=_series(r, data))
    cpu = r["cpu_s"]
    low, high = p.interval if p.interval else (None, None)
    return {"name": r["name"], "split": r["split"], "size": r["size"], "data": data,
            "predicted": p.seconds, "model": e.seconds, "low": low, "high": high,
            "measured": measured, "error": abs(p.seconds - measured) / measured,
            "inside": None if low is None or high is None else low <= measured <= high,
            "winner_predicted": _winner(cpu, p.seconds),
            "winner_measured": _winner(cpu, measured), "cpu": cpu,
            "bound": e.regime, "classes": ", ".join(
                f"{t['ops']} {t['op_class']}" for t in r["work"]["tallies"])}


def _winner(cpu: float | None, gpu: float) -> str:
    return "—" if cpu is None else "GPU" if cpu > gpu else "CPU"


def _markdown(rows: list[dict[str, Any]], doc: dict[str, Any], target: str) -> str:
    from gpuvs import units

    lines = [f"Corpus on {doc.get('device', '?')}, predicted for {target} "
             f"({len(rows)} GPU measurements)", ""]
    for split in ("held_out", "fit"):
        lines += ["", f"**{split}** — per function", "",
                  "| function | size | data | CPU measured | GPU predicted | interval | "
                  "GPU measured | error | inside | winner predicted / measured | bound | "
                  "ops |", "|---|---:|---|---:|---:|---|---:|---:|---|---|---|---|"]
        for x in (x for x in rows if x["split"] == split):
            span = ("—" if x["low"] is None else
                    f"[{units.seconds(x['low'])}, {units.seconds(x['high'])}]")
            lines.append(
                f"| {x['name']} | {x['size']} | {x['data']} | "
                f"{units.seconds(x['cpu']) if x['cpu'] else '—'} | "
                f"{units.seconds(x['predicted'])} | {span} | {units.seconds(x['measured'])} | "
                f"{x['error']:.0%} | {'yes' if x['inside'] else 'no'} | "
                f"{x['winner_predicted']} / {x['winner_measured']} | {x['bound']} | "
                f"{x['classes']} |")
    lines += ["", "| split | data | cases | median error | model alone | inside | "
                  "winner right | bar |", "|---|---|---:|---:|---:|---:|---:|---|"]
    for split in ("held_out", "fit"):
        for data in DATA:
            lines.append(_summary([x for x in rows if x["split"] == split
                                   and x["data"] == data], split, data))
    return "\n".join(lines) + "\n"


def _summary(rows: list[dict[str, Any]], split: str, data: str) -> str:
    if not rows:
        return f"| {split} | {data} | 0 | — | — | — | — | — |"
    error = float(np.median([x["error"] for x in rows]))
    model = float(np.median([abs(x["model"] - x["measured"]) / x["measured"]
                             for x in rows]))
    inside = [x["inside"] for x in rows if x["inside"] is not None]
    share = float(np.mean(inside)) if inside else None
    winners = [x["winner_predicted"] == x["winner_measured"] for x in rows
               if "—" not in (x["winner_predicted"], x["winner_measured"])]
    right = float(np.mean(winners)) if winners else None
    most, least_inside, least_right = BAR[data]
    met = (error <= most and share is not None and share >= (least_inside or 0.0)
           and (least_right is None or (right is not None and right >= least_right)))
    bar = (f"≤ {most:.0%}, ≥ {least_inside:.0%} inside"
           + (f", ≥ {least_right:.0%} winners" if least_right else "")
           + (": met" if met else ": not met")) if split == "held_out" else "—"
    return (f"| {split} | {data} | {len(rows)} | {error:.1%} | {model:.1%} | "
            f"{'—' if share is None else f'{share:.0%}'} | "
            f"{'—' if right is None else f'{right:.0%}'} | {bar} |")


if __name__ == "__main__":
    sys.exit(main())
