"""`gpuvs predict` against measurement on a GPU machine: docs/prediction.md's tables.

On the GPU machine, with nothing but an output directory:

    PYTHONPATH=src python3 benchmarks/predict.py --target h100 --out OUT

1. the target's profile: found by name (shipped, or in $GPUVS_PROFILES), else measured
   now (`gpuvs ceilings --save-profile NAME`, about 2 minutes) into OUT/profiles/;
2. `gpuvs run --all` and `gpuvs seeds --quick` at budget 0.1 s, one pass (about 4 and 2
   minutes on an H100), each exported as JSON into OUT;
3. every GPU case that finished (not the posts' `as_written` replays) predicted from
   its counted work and the profile alone, the CPU-side counts, as `gpuvs predict` does
   on a machine without a GPU — each with its own series left out of the calibration —
   and set against its measured time.

It writes OUT/profiles/NAME.json and NAME.residuals.json (the two files to ship in
src/gpuvs/predicting/profiles/), OUT/predictions.json (each case: measured, predicted,
interval, bound) and OUT/errors.md, and prints the error tables last.

Offline, from exports made before (nothing is measured):

    PYTHONPATH=src python3 benchmarks/predict.py --target h100 --out OUT \\
        --from-run OUT/run-all.json --from-run OUT/seeds.json

Held out (what a user gets): the judged runs predicted with the calibration of other
runs — measured on other machines before — each case still without its own series:

    PYTHONPATH=src python3 benchmarks/predict.py --target h100 --out OUT3 \
        --from-run NEW/run-all.json --from-run NEW/seeds.json \
        --calibration OLD/run-all.json --calibration OLD/seeds.json

Exports may be gzipped (`RUN.json.gz`, as docs/runs/ keeps them).

GPU → GPU (Habitat's setting): the target's runs predicted from the same cases measured
on another GPU, scaled term by term by the two profiles:

    PYTHONPATH=src python3 benchmarks/predict.py --target h200 --out OUT2 \\
        --from-run H200/run-all.json --from-run H200/seeds.json \\
        --source H100/profiles/h100.json --source-run H100/run-all.json \\
        --source-run H100/seeds.json
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from gpuvs.errors import UsageError
from gpuvs.model import Measurement
from gpuvs.predicting import profile, validation
from gpuvs.predicting.forecast import Target
from gpuvs.predicting.residuals import save
from gpuvs.report.markdown import to_markdown
from gpuvs.report.predicted import crossover_checks_table, error_table
from gpuvs.store.export import load_json, run_from_document
from gpuvs.table import Table

CEILINGS = ("ceilings", "--budget", "0.3")
LEFT_OUT = ("each case predicted as if its own series (its sizes) had not been measured: "
            "no case calibrates itself")
PLANS = {"run-all": ("run", "--all", "--budget", "0.1", "--passes", "1"),
         "seeds": ("seeds", "--quick", "--budget", "0.1")}


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    out = Path(args.out)
    (out / "profiles").mkdir(parents=True, exist_ok=True)
    if not os.environ.get(profile.ENV_VAR) and not args.from_run:
        os.environ[profile.ENV_VAR] = str(out / "profiles")  # where a measured one goes
    try:
        found = _profile(args.target, out)
        runs = [Path(p) for p in args.from_run] or _measure(out)
        tables = _tables(found, runs, out, args)
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    text = to_markdown(tables)
    (out / "errors.md").write_text(text, encoding="utf-8")
    print(text)
    return 0


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--target", required=True,
                   help="the GPU's profile: a name (shipped, or in $GPUVS_PROFILES) or a file")
    p.add_argument("--out", required=True, help="directory for every file written")
    p.add_argument("--from-run", action="append", default=[], metavar="RUN.json",
                   help="judge these exports instead of measuring (repeatable)")
    p.add_argument("--calibration", action="append", default=[], metavar="RUN.json",
                   help="calibrate with these runs instead of the judged ones, which are "
                        "then held out (repeatable)")
    p.add_argument("--source", help="GPU → GPU: the profile of the GPU the source runs "
                                    "were measured on (a name or a file)")
    p.add_argument("--source-run", action="append", default=[], metavar="RUN.json",
                   help="GPU → GPU: the same cases measured on the source GPU (repeatable)")
    return p


def _profile(spec: str, out: Path) -> profile.Found:
    """The target's profile; on a GPU machine without one, measured now."""
    try:
        return profile.load(spec)
    except UsageError:
        if spec.endswith(".json") or os.sep in spec:
            raise
    print(f"no profile {spec!r}: measuring this machine's ceilings as it", flush=True)
    _gpuvs([*CEILINGS, "--save-profile", spec], out, "ceilings")
    return profile.load(spec)


def _measure(out: Path) -> list[Path]:
    paths = []
    for name, command in PLANS.items():
        path = out / f"{name}.json"
        _gpuvs([*command, "--json", str(path)], out, name)
        paths.append(path)
    return paths


def _gpuvs(command: list[str] | tuple[str, ...], out: Path, name: str) -> None:
    """One gpuvs command in a process of its own, its output kept in OUT/NAME.log."""
    started = time.monotonic()
    with open(out / f"{name}.log", "w", encoding="utf-8") as log:
        done = subprocess.run([sys.executable, "-m", "gpuvs", *command,
                               "--db", str(out / "runs.sqlite")], stdout=log,
                              stderr=subprocess.STDOUT, check=False)
    print(f"gpuvs {' '.join(command)}: exit {done.returncode} in "
          f"{time.monotonic() - started:.0f} s (log: {out / f'{name}.log'})", flush=True)
    if done.returncode not in (0, 1):  # 1: a case crashed; the others still count
        raise UsageError(f"gpuvs {command[0]} failed (exit {done.returncode}); see its log")


def _runs(paths: list[Path]) -> list[tuple[Any, list[Measurement]]]:
    return [_load(p) for p in paths]


def _load(path: Path) -> tuple[Any, list[Measurement]]:
    """A run export, plain or gzipped."""
    if path.suffix != ".gz":
        return load_json(path)[:2]
    try:
        return run_from_document(json.loads(gzip.decompress(path.read_bytes())))
    except (OSError, ValueError) as err:
        raise UsageError(f"cannot read {path}: {err}") from None


def _tables(found: profile.Found, paths: list[Path], out: Path,
            args: argparse.Namespace) -> list[Table]:
    runs = _runs(paths)
    every = [m for _, ms in runs for m in ms]
    calibration = _runs([Path(p) for p in args.calibration]) or runs
    learnt = validation.residuals_of([m for _, ms in calibration for m in ms], found.profile,
                                     [r.run_id for r, _ in calibration],
                                     min(r.started_at for r, _ in calibration))
    name = found.profile.name
    shipped = out / "profiles" / f"{name}{profile.SUFFIX}"
    if Path(str(found.path)).resolve() != shipped.resolve():
        shutil.copyfile(str(found.path), shipped)
    save(learnt, out / "profiles" / f"{name}{profile.RESIDUALS_SUFFIX}")
    target = Target(found, learnt)
    checks = [validation.checks(ms, target) for _, ms in runs]
    crossed = [x for (_, ms), cs in zip(runs, checks, strict=True)
               for x in validation.crossover_checks(ms, cs)]
    judged = [c for cs in checks for c in cs]
    if not judged:
        raise UsageError(f"no GPU case finished in {', '.join(map(str, paths))}: nothing to "
                         "judge (the runs are kept; run this on the GPU machine)")
    _write_predictions(out / "predictions.json", judged)
    source = ", ".join(r.run_id for r, _ in runs)
    held_out = (f"calibrated by other runs: {', '.join(learnt.runs)}",) if args.calibration \
        else ()
    tables = [
        error_table(f"CPU → {name}: predicted time per call against measured, per workload",
                    validation.error_rows(judged, crossed), (
                        LEFT_OUT, *held_out,
                        f"measured: runs {source} on {found.profile.device}",
                        "inside interval: the measured time within the predicted 90 % "
                        "interval; crossover: the predicted size within one sweep step "
                        "of the measured one")),
        error_table(f"CPU → {name}, per dominant term",
                    validation.error_rows(judged, key=validation.by_regime), (LEFT_OUT,),
                    by="regime"),
        crossover_checks_table(f"CPU → {name}: crossovers, predicted and measured", crossed),
    ]
    if args.source:
        tables.append(_gpu_to_gpu(args, found, every))
    return tables


def _gpu_to_gpu(args: argparse.Namespace, found: profile.Found,
                measured: list[Measurement]) -> Table:
    source = profile.load(args.source)
    ms = [m for _, ms in _runs([Path(p) for p in args.source_run]) for m in ms]
    checks = validation.scaled_checks(ms, measured, source.profile, found.profile)
    return error_table(
        f"{source.profile.name} → {found.profile.name} (GPU → GPU): each case measured on "
        f"{source.profile.device}, scaled term by term", validation.error_rows(checks),
        ("each case predicted from its own measurement on the source GPU; no interval: "
         "the scaling is judged by its error alone",))


def _write_predictions(path: Path, checks: list[validation.Check]) -> None:
    path.write_text(json.dumps([{
        "case": c.case.key, "measured_s": c.measured_s, "predicted_s": c.prediction.seconds,
        "interval_s": c.prediction.interval, "bound": c.prediction.estimate.dominant.term,
        "regime": c.prediction.estimate.regime, "error": c.error, "inside": c.inside,
        "why": c.prediction.why()} for c in checks], indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
