"""`gpuvs predict`, `gpuvs profiles` and `gpuvs ceilings --save-profile` end to end: the
real store, real CPU workers, a synthetic profile on disk."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from tests.helpers import invoke
from tests.predicting.samples import measured, synthetic

from gpuvs.model import Case, Caveat, Environment, Measurement, Run, RunKind, Status
from gpuvs.predicting import profile
from gpuvs.predicting.residuals import Residual, of_points, save
from gpuvs.store import open_store
from gpuvs.store.export import write_json
from gpuvs.store.runs import start_run

SQUARE = (("shape", "square"),)
SIZES = (64, 256, 1024, 2048)


@pytest.fixture(autouse=True, scope="module")
def _libraries_loaded() -> None:
    """These commands run in this one process, where torch (the work is counted with it)
    and SciPy load their own thread pools: a run recorded before they loaded and one after
    would name different BLAS threads in their set-ups, and a CPU case measured before
    would not be this set-up's. Loaded first, every run here names the same (each
    command is a process of its own outside the tests)."""
    import scipy.stats  # noqa: F401
    import torch  # noqa: F401


@pytest.fixture
def syn(profiles: Path) -> Path:
    return profile.save(synthetic())


@pytest.fixture
def cpu_export(tmp_path: Path) -> Path:
    """A CPU run of square products: 2n³ FLOP at 100 GFLOP/s."""
    run = Run("20261126-000000-aaaa", "2026-11-26T00:00:00+0000", {},
              Environment("f", {}), "finished")
    ms = [measured(Case("matmul", "correct", "numpy", "cpu", "float32", n, SQUARE),
                   2 * n**3 / 100e9) for n in SIZES]
    path = tmp_path / "cpu.json"
    write_json(path, run, ms)
    return path


@pytest.mark.parametrize(("args", "message"), [
    ([], "name the GPU once: --target NAME (`gpuvs profiles` lists them) or --profile FILE"),
    (["--target", "h300"], "no device profile 'h300'; available: h100"),
    (["--target", "a", "--profile", "b.json"], "name the GPU once"),
    (["--profile", "nowhere.json"], "no profile file 'nowhere.json'"),
])
def test_bad_input_is_one_line_and_exit_2(args: list[str], message: str, profiles: Path,
                                         db: str) -> None:
    result = invoke("predict", "-w", "matmul", "--db", db, *args)
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_from_a_stored_cpu_run_every_gpu_number_is_labelled_predicted(
        syn: Path, cpu_export: Path, tmp_path: Path) -> None:
    report, doc = tmp_path / "p.html", tmp_path / "p.json"
    result = invoke("predict", "--from-run", str(cpu_export), "--target", "syn", "-b",
                    "numpy,torch", "--report", str(report), "--json", str(doc))
    assert result.exit_code == 0, result.output
    out = result.output
    assert "Square matrix product, float32 · GPU predicted for syn" in out
    assert "CPU measured (fastest)" in out and "GPU predicted [90 % interval]" in out
    # n = 2048, data resident: 1.72e10 FLOP at 50 TFLOP/s, against 172 ms on the CPU
    assert "2048  torch cuda:0  resident    172 ms (numpy)          344 µs (no interval)" in out
    assert "interval: not yet validated for syn" in out
    assert "predicted crossovers · syn" in out
    assert "cupy" not in out  # -b numpy,torch: torch's GPU cases alone
    page = report.read_text()
    assert "torch cuda:0 · resident · predicted" in page and "measured here" in page
    found = json.loads(doc.read_text())
    point = found["series"][0]["points"][0]
    assert set(point) == {"size", "case", "measured", "predicted"}
    assert point["predicted"]["interval_s"] is None


def test_a_validated_target_gives_intervals_and_marks_a_missed_workload(
        syn: Path, cpu_export: Path) -> None:
    missed = [Residual("matmul", regime, f"s{i}", x) for i, x in enumerate([0.3, 3, 1, 9, 0.2])
              for regime in ("compute", "launch", "transfer")]
    save(of_points("syn", ["r1"], "2026-11-26", missed), syn.with_name("syn.residuals.json"))
    result = invoke("predict", "--from-run", str(cpu_export), "--target", "syn", "-b", "torch")
    assert result.exit_code == 0, result.output
    assert "intervals: where 90 % of 15 cases validated for syn fell (run r1)" in result.output
    assert "344 µs [" in result.output
    assert "low confidence: syn's validation missed matmul cases by" in result.output
    rows = [x for x in result.output.splitlines()
            if x.startswith("Square matrix product, float32  torch")]
    assert len(rows) == 2 and all(x.rstrip().endswith("low") for x in rows)


def test_measuring_the_cpu_here_then_predicting(syn: Path, db: str) -> None:
    result = invoke("predict", "-w", "elementwise", "-a", "op=scale", "-s", "1000,100000",
                    "-b", "numpy,torch", "--target", "syn", "--db", db)
    assert result.exit_code == 0, result.output
    assert "4 CPU cases measured here; the GPU cases are predicted" in result.output
    assert "Elementwise x·5 in place, float32 · GPU predicted for syn" in result.output
    # 1e5 elements, copies paid: 400 kB in at 10 GB/s, out at 5 GB/s, 2 × 20 µs, a launch
    assert "1e5  torch cuda:0  end_to_end" in result.output
    assert "170 µs (no interval)" in result.output
    assert "Elementwise x·5 in place, float32  torch cuda:0  end_to_end  never in range" \
        in result.output
    stored = open_store(db, reading=True)
    [run] = stored.runs()
    assert {m.case.device for m in stored.measurements(run.run_id)} == {"cpu"}
    again = invoke("predict", "-w", "elementwise", "-a", "op=scale", "-s", "1000,100000",
                   "-b", "numpy,torch", "--target", "syn", "--db", db)
    assert again.exit_code == 0, again.output
    # a case measured under contention (a busy CI runner) is measured again, not reused
    quiet = [m for m in stored.measurements(run.run_id) if Caveat.CONTENDED not in m.caveats]
    assert not quiet or again.output.startswith(
        f"{len(quiet)} CPU cases measured before on this machine (run {run.run_id}; --fresh "
        "measures them again)")
    assert len(stored.runs()) == (1 if len(quiet) == 4 else 2)


def test_a_busy_machine_is_named_before_the_cpu_cases_are_measured(
        syn: Path, db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    import psutil

    monkeypatch.setattr(os, "getloadavg", lambda: (4.0 * psutil.cpu_count(), 0.0, 0.0))
    result = invoke("predict", "-w", "elementwise", "-a", "op=scale", "-s", "1000",
                    "-b", "numpy", "--target", "syn", "--db", db)
    assert result.exit_code == 0, result.output
    busy, measuring = result.output.splitlines()[:2]
    assert busy.startswith("this machine is busy: load ")
    assert measuring.endswith("1 CPU cases measured here; the GPU cases are predicted")


def test_a_cpu_case_measured_on_a_busy_machine_is_not_reused(db: str) -> None:
    from gpuvs.jobs.predict import _measured_before
    from gpuvs.model import Caveat
    from gpuvs.workloads import get

    case = Case("elementwise", "correct", "numpy", "cpu", "float32", 1000, (("op", "scale"),))
    version = get("elementwise").version
    store = open_store(db)

    def stored(*caveats: Caveat) -> str:
        run = start_run(store, RunKind.SWEEP, {"budget_s": 0.1}, Environment("fp", {}))
        run.record(Measurement(case, Status.OK, samples=(1e-6,) * 9, caveats=caveats,
                               workload_version=version))
        run.finish()
        return run.run_id

    stored(Caveat.CONTENDED)
    assert _measured_before(store, [case], "fp") == {}  # measured again, on a quiet machine
    quiet = stored()
    assert _measured_before(store, [case], "fp")[case.key][0] == quiet


def test_profiles_lists_yours_and_whether_each_was_validated(syn: Path) -> None:
    result = invoke("profiles")
    assert result.exit_code == 0, result.output
    assert "syn   Synthetic GPU, measured 2026-11-26" in result.output
    assert re.search(r"yours +not yet", result.output)
    assert re.search(r"h100 +NVIDIA H100.*shipped with gpuvs +\d+ cases", result.output)


@pytest.mark.parametrize(("args", "message"), [
    (["--save-profile", "mine"], "--save-profile mine: this machine has no GPU, and a "
                                 "profile of it would predict no GPU"),
    (["--save-profile", ""], "profile name '' is not accepted"),
    (["--save-profile", "h100"], "profile name 'h100' is the profile shipped with gpuvs "
                                 "(NVIDIA H100 80GB HBM3), which `--target h100` means; save "
                                 "yours under another name, e.g. h100-mine"),
    (["--save-profile", "a/b"], "profile name 'a/b' is not accepted"),
])
def test_ceilings_refuses_a_profile_predict_could_not_use_before_measuring(
        args: list[str], message: str, profiles: Path, db: str) -> None:
    """On this GPU-less box, with an empty name, or a shipped profile's: refused at
    saving, before minutes of measuring, not later by `gpuvs predict`."""
    result = invoke("ceilings", "-b", "numpy", "--db", db, *args)
    assert result.exit_code == 2, result.output
    assert result.output.strip().splitlines() == [f"error: {message}"] or (
        message in result.output and len(result.output.strip().splitlines()) == 1)
    assert open_store(db).runs() == [] and not profiles.exists()


def test_a_saved_profile_is_found_by_its_name_and_by_its_path(profiles: Path,
                                                             cpu_export: Path) -> None:
    """What `gpuvs ceilings --save-profile mygpu` writes (`profile.save`, into the user's
    profile directory), `predict --target mygpu` finds, as the README says; `--profile`
    reads the file it names, wherever it is."""
    path = profile.save(synthetic("mygpu"))
    assert path == profiles / "mygpu.json"
    for chosen in (["--target", "mygpu"], ["--profile", str(path)]):
        result = invoke("predict", "--from-run", str(cpu_export), *chosen, "-b", "torch")
        assert result.exit_code == 0, result.output
        assert "GPU predicted for mygpu" in result.output
    assert "mygpu" in invoke("profiles").output


def test_profile_always_means_a_file_and_target_always_a_name(profiles: Path,
                                                              cpu_export: Path,
                                                              tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch
                                                              ) -> None:
    """`--profile mygpu` once read the stored profile mygpu instead of the file ./mygpu."""
    profile.save(synthetic("mygpu"))
    monkeypatch.chdir(tmp_path)
    result = invoke("predict", "--from-run", str(cpu_export), "--profile", "mygpu")
    assert result.exit_code == 2 and "no profile file 'mygpu'" in result.output
    result = invoke("predict", "--from-run", str(cpu_export), "--target", "mygpu.json")
    assert result.exit_code == 2
    assert "--target 'mygpu.json' names a profile, not a file" in result.output


def test_a_profile_measured_without_a_gpu_predicts_nothing_and_says_so(cpu_export: Path
                                                                     ) -> None:
    """tests/data/predict/cpu-box.json: `gpuvs ceilings --save-profile cpu-box` on the
    2-core CI box, which has no GPU."""
    cpu_box = Path(__file__).parents[1] / "data" / "predict" / "cpu-box.json"
    result = invoke("predict", "--from-run", str(cpu_export), "--profile", str(cpu_box))
    assert result.exit_code == 2
    assert result.output.startswith("error: profile 'cpu-box' was measured on a machine "
                                    "without a GPU (no GPU (Intel(R) Xeon(R) Processor")


def _stored_cpu_run(store: object, *caveats: object) -> str:
    """A finished sweep of square products on the CPU: 2n³ FLOP at 100 GFLOP/s."""
    run = start_run(store, RunKind.SWEEP, {"budget_s": 0.1}, Environment("fp", {}))
    for n in SIZES:
        m = measured(Case("matmul", "correct", "numpy", "cpu", "float32", n, SQUARE),
                     2 * n**3 / 100e9)
        run.record(Measurement(m.case, m.status, samples=m.samples, caveats=caveats))
    run.finish()
    return run.run_id


def test_from_run_latest_takes_the_newest_run_it_can_use_and_names_those_skipped(
        syn: Path, db: str) -> None:
    """A dist run as the latest once gave "unknown workload 'dist_collective'"."""
    store = open_store(db)
    sweep = _stored_cpu_run(store)
    dist = start_run(store, RunKind.DIST, {"nproc": 2}, Environment("fp", {}))
    dist.record(Measurement(Case("dist_collective", "correct", "torch", "cpu", "float32",
                                 4096, (("collective", "all_reduce"),)), Status.OK,
                            samples=(1e-4,) * 5))
    dist.finish()
    result = invoke("predict", "--from-run", "latest", "--target", "syn", "-b", "torch",
                    "--db", db)
    assert result.exit_code == 0, result.output
    assert (f"--from-run latest: run {sweep}, the newest with CPU cases of gpuvs's "
            f"workloads; skipped run {dist.run_id} is a dist run") in result.output
    assert "GPU predicted for syn" in result.output
    named = invoke("predict", "--from-run", dist.run_id, "--target", "syn", "--db", db)
    assert named.exit_code == 2 and len(named.output.strip().splitlines()) == 1
    assert f"run {dist.run_id} is a dist run: it has no CPU case of a workload" in named.output


def test_from_run_marks_cpu_times_measured_under_contention(syn: Path, db: str) -> None:
    """A 745× answer was once built on a contended CPU time (about 0.55× quiet) with no
    word of it."""
    from gpuvs.model import Caveat
    _stored_cpu_run(open_store(db), Caveat.CONTENDED)
    result = invoke("predict", "--from-run", "latest", "--target", "syn", "-b", "torch",
                    "--db", db)
    assert result.exit_code == 0, result.output
    assert ("4 of the 4 CPU cases were measured while other processes took the CPU "
            "(contended, marked in the tables)") in result.output
    assert "172 ms (numpy, contended)" in result.output
    assert "contended: a CPU time measured while other processes took the CPU" in result.output


def test_the_tables_say_which_backends_are_priced_as_tf32(syn: Path, cpu_export: Path,
                                                         monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    """JAX was predicted 767× where torch got 113×, with no word of TF32."""
    monkeypatch.delenv("JAX_DEFAULT_MATMUL_PRECISION", raising=False)
    result = invoke("predict", "--from-run", str(cpu_export), "--target", "syn", "-b",
                    "torch,jax")
    assert result.exit_code == 0, result.output
    assert ("TF32: jax's float32 products predicted as TF32, a 10-bit mantissa (JAX's "
            "default matmul precision 'default')") in result.output
    assert ("TF32: torch's float32 products predicted at full float32 (TF32 off: torch's "
            "float32 matmul precision 'highest')") in result.output
    monkeypatch.setenv("JAX_DEFAULT_MATMUL_PRECISION", "highest")
    off = invoke("predict", "--from-run", str(cpu_export), "--target", "syn", "-b", "jax")
    assert "jax's float32 products predicted at full float32 (TF32 off: JAX's default " \
           "matmul precision 'highest')" in off.output
