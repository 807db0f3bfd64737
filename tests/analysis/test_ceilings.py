"""Ceilings: the probes planned, read back as rates, matched to the cases they bound."""

from __future__ import annotations

import sqlite3

import pytest
from typer.testing import CliRunner

from gpuvs.analysis.ceilings import dispatch_name, peak_for, probe_cases, read
from gpuvs.cli import app
from gpuvs.model import OP_FAMILIES, Case, Ceiling, Measurement, Status


def test_cpu_probes_cover_gemm_at_all_cores_and_one_thread_and_the_triad() -> None:
    keys = {c.key for c in probe_cases(["numpy"])}
    assert "peak_matmul/correct/numpy/cpu/float64/2048,threads=1,tf32=off" in keys
    assert "peak_matmul/correct/numpy/cpu/float32/2048,threads=all,tf32=off" in keys
    assert "triad/correct/numpy/cpu/float64/33554432,threads=1" in keys
    assert "dispatch/correct/numpy/cpu/float32/1,mode=latency" in keys


def test_gpu_probes_cover_each_dtype_tf32_both_ways_copies_and_transfers() -> None:
    keys = {c.key for c in probe_cases(["torch"])}
    for dtype in ("float64", "bfloat16", "float16"):
        assert f"peak_matmul/correct/torch/cuda:0/{dtype}/8192,threads=all,tf32=off" in keys
    assert "peak_matmul/correct/torch/cuda:0/float32/8192,threads=all,tf32=on" in keys
    assert "transfer/correct/torch/cuda:0/float32/67108864,direction=d2h,memory=pinned" in keys
    assert "triad/correct/torch/cpu/float64/33554432,threads=all" in keys  # every core
    assert "triad/correct/torch/cpu/float64/33554432,threads=1" in keys  # and one
    assert "peak_matmul/correct/torch/cpu/float32/2048,threads=all,tf32=off" in keys


def _m(case: Case, seconds: float, **counters: float) -> Measurement:
    return Measurement(case, Status.OK, samples=(seconds,) * 5, counters=counters)


def test_probe_measurements_read_as_rates_and_costs() -> None:
    gemm = Case("peak_matmul", "correct", "torch", "cuda:0", "float32", 8192,
                (("threads", "all"), ("tf32", "on")))
    copy = Case("copy", "correct", "torch", "cuda:0", "float32", 1 << 28)
    op = Case("dispatch", "correct", "torch", "cuda:0", "float32", 1, (("mode", "loop"),))
    found = {c.name: c for c in read([_m(gemm, 2e-3, flops=1e12),
                                     _m(copy, 1e-3, bytes_moved=3e9), _m(op, 5e-6)])}
    assert found["matmul float32 tf32=on"].value == pytest.approx(5e14)
    assert found["memory bandwidth (copy)"].value == pytest.approx(3e12)
    assert found["per-op dispatch cost"].value == pytest.approx(5e-6)


def test_each_gpu_backend_gets_a_dispatch_probe_per_op_family_and_the_cpu_none() -> None:
    family = {(c.backend, c.device, c.param("op")) for c in probe_cases(["torch", "cupy"])
              if c.workload == "dispatch" and c.param("op")}
    assert family == {(b, "cuda:0", f) for b in ("torch", "cupy") for f in OP_FAMILIES}


def test_a_family_probe_reads_as_that_familys_dispatch_cost() -> None:
    op = Case("dispatch", "correct", "jax", "cuda:0", "float32", 1,
              (("mode", "loop"), ("op", "create")))
    [ceiling] = read([_m(op, 40e-6)])
    assert ceiling.name == "per-op dispatch cost (create)" == dispatch_name("create")
    assert ceiling.value == pytest.approx(40e-6) and ceiling.backend == "jax"


def test_each_gpu_backends_own_copy_path_is_probed_both_ways_and_into_fresh_pages() -> None:
    paths = {(c.backend, c.param("direction"), c.size) for c in probe_cases(["numpy", "jax"])
             if c.workload == "transfer" and c.param("path") == "backend"}
    assert paths == {("jax", "h2d", 7 << 20), ("jax", "d2h", 7 << 20), ("jax", "d2h", 1 << 26)}
    out = [Case("transfer", "correct", "jax", "cuda:0", "float32", n,
                (("direction", "d2h"), ("path", "backend"))) for n in (7 << 20, 1 << 26)]
    found = read([_m(out[0], 2e-3, bytes_moved=4 * (7 << 20)),
                  _m(out[1], 0.1, bytes_moved=4 * (1 << 26))])
    assert [c.name for c in found] == ["d2h (to NumPy)", "d2h (to NumPy, fresh pages)"]
    assert found[1].value == pytest.approx(4 * (1 << 26) / 0.1)


def test_a_case_is_bounded_by_its_own_device_dtype_and_tf32_mode() -> None:
    ceilings = [Ceiling("matmul float32 tf32=off", "cuda:0", "torch", 5e13, "FLOP/s", ""),
                Ceiling("matmul float32 tf32=on", "cuda:0", "torch", 4e14, "FLOP/s", ""),
                Ceiling("memory bandwidth (copy)", "cuda:0", "torch", 3e12, "B/s", ""),
                Ceiling("matmul float32 threads=all", "cpu", "numpy", 3e11, "FLOP/s", "")]
    gpu = Case("matmul", "correct", "cupy", "cuda:0", "float32", 4096)
    assert peak_for(gpu, ceilings, tf32=False) == {"flops": 5e13, "bytes": 3e12}
    assert peak_for(gpu, ceilings, tf32=True)["flops"] == 4e14
    cpu = Case("matmul", "correct", "numpy", "cpu", "float32", 4096)
    assert peak_for(cpu, ceilings, tf32=False) == {"flops": 3e11}


def test_gpuvs_ceilings_measures_once_per_machine_and_runs_show_the_share(db) -> None:
    runner = CliRunner()
    first = runner.invoke(app, ["ceilings", "-b", "numpy", "--budget", "0.1", "--db", db],
                          env={"COLUMNS": "200"})
    assert first.exit_code == 0, first.output
    assert "matmul float32 threads=all" in first.output and "GFLOP/s" in first.output
    again = runner.invoke(app, ["ceilings", "-b", "numpy", "--db", db], env={"COLUMNS": "200"})
    assert again.exit_code == 0
    with sqlite3.connect(db) as c:
        assert c.execute("select count(*) from runs").fetchone()[0] == 1  # reused, not re-run
    run = runner.invoke(app, ["run", "-w", "matmul", "-b", "numpy", "-d", "cpu", "-s", "512",
                              "--budget", "0.1", "--db", db], env={"COLUMNS": "200"})
    assert run.exit_code == 0, run.output
    assert "% FLOP" in run.output
    with sqlite3.connect(db) as c:
        ceilings_run = c.execute("select run_id from runs order by rowid limit 1").fetchone()[0]
    resumed = runner.invoke(app, ["run", "--resume", ceilings_run, "--db", db])
    assert resumed.exit_code == 2
    assert "is a ceilings run, not a sweep; `gpuvs ceilings --refresh`" in resumed.output


def test_each_cache_from_l2_up_gets_a_triad_that_fills_half_of_it() -> None:
    from gpuvs.analysis.ceilings import cache_probes
    caches = [{"level": 1, "size": 49152, "shared_by": 1},
              {"level": 2, "size": 1048576, "shared_by": 1},
              {"level": 3, "size": 33554432, "shared_by": 2}]
    keys = [c.key for c in cache_probes(caches)]
    assert keys == ["triad/correct/numpy/cpu/float64/21845,cache=L2,cache_bytes=1048576,"
                    "threads=1",
                    "triad/correct/numpy/cpu/float64/699050,cache=L3,cache_bytes=33554432,"
                    "threads=1"]


def test_a_cpu_case_is_held_against_the_smallest_cache_that_holds_its_data() -> None:
    ceilings = [Ceiling("memory bandwidth (triad) threads=all", "cpu", "torch", 2e10, "B/s",
                        ""),
                Ceiling("L2 cache bandwidth (1048576 B)", "cpu", "numpy", 9e10, "B/s", ""),
                Ceiling("L3 cache bandwidth (33554432 B)", "cpu", "numpy", 4e10, "B/s", "")]
    cpu = Case("elementwise", "correct", "torch", "cpu", "float32", 10_000)
    assert peak_for(cpu, ceilings, tf32=False, working_set=40e3) == {
        "bytes": 9e10, "cache_level": 2.0, "caches_known": 1.0}
    assert peak_for(cpu, ceilings, tf32=False, working_set=4e6)["cache_level"] == 3.0
    assert peak_for(cpu, ceilings, tf32=False, working_set=4e8) == {"bytes": 2e10,
                                                                   "caches_known": 1.0}


def _ceilings_run(store, environment, contended: bool) -> str:
    """A finished ceilings run of one float32 GEMM probe, measured quietly or not."""
    from gpuvs.model import Caveat, RunKind
    from gpuvs.store.runs import start_run
    gemm = Case("peak_matmul", "correct", "numpy", "cpu", "float32", 2048,
                (("threads", "all"), ("tf32", "off")))
    run = start_run(store, RunKind.CEILINGS, {"budget_s": 0.1}, environment)
    run.record(Measurement(gemm, Status.OK, samples=(0.2 if contended else 0.1,) * 5,
                           counters={"flops": 1.7e10},
                           caveats=(Caveat.CONTENDED,) if contended else ()))
    run.finish()
    return run.run_id


def test_ceilings_measured_on_a_busy_machine_give_way_to_clean_ones(db) -> None:
    """A contended ceilings run reads low (a float32 peak below its own one-thread figure,
    shares up to 229 % "of peak"): it serves only while no clean one exists, and the
    table that uses it says so."""
    from gpuvs.machine import env
    from gpuvs.model import Environment
    from gpuvs.report.layout import result_tables
    from gpuvs.store import open_store
    from gpuvs.store.runs import find_ceilings_run
    here = env.collect()
    # stored by an older gpuvs under another fingerprint string: the facts decide
    older = Environment("0123456789abcdef", here.facts)
    store = open_store(db)
    busy = _ceilings_run(store, older, contended=True)
    assert find_ceilings_run(store, here).run_id == busy
    (ceiling,) = read(store.measurements(busy))
    assert ceiling.contended
    case = Measurement(Case("matmul", "correct", "numpy", "cpu", "float32", 512), Status.OK,
                       samples=(2e-3,) * 5, counters={"flops": 2 * 512**3})
    (table,) = result_tables([case], [ceiling])
    assert any("measured while other processes held the machine (contended: matmul float32 "
               "threads=all (cpu))" in note for note in table.notes), table.notes
    clean = _ceilings_run(store, here, contended=False)
    _ceilings_run(store, here, contended=True)  # a newer busy one does not displace it
    assert find_ceilings_run(store, here).run_id == clean
    (quiet,) = result_tables([case], read(store.measurements(clean)))
    assert not any("contended" in note for note in quiet.notes)


def test_each_op_class_is_probed_with_torch_on_the_gpu_at_each_of_its_sizes() -> None:
    from gpuvs.analysis.ceilings import OP_CLASS_ELEMENTS, OP_CLASS_SIZES
    from gpuvs.model import OP_CLASSES
    planned = {(c.param("op"), c.size) for c in probe_cases(["torch", "cupy", "jax"])
               if c.workload == "op_class"}
    assert planned == {(op, n) for op in OP_CLASSES
                       for n in OP_CLASS_SIZES.get(op, OP_CLASS_ELEMENTS)}
    assert {(c.backend, c.device) for c in probe_cases(["torch"])
            if c.workload == "op_class"} == {("torch", "cuda:0")}
    assert not [c for c in probe_cases(["numpy", "cupy"]) if c.workload == "op_class"]


def test_an_op_class_probe_reads_as_one_ops_cost_at_its_bytes_or_flops() -> None:
    from gpuvs.analysis.ceilings import op_costs
    sort = Case("op_class", "correct", "torch", "cuda:0", "float32", 1 << 22,
                (("op", "sort"),))
    mm = Case("op_class", "correct", "torch", "cuda:0", "float32", 1024, (("op", "matmul"),))
    found = op_costs([_m(sort, 3e-4, bytes_moved=16.0 * (1 << 22)),
                      _m(mm, 1e-4, flops=2.0 * 1024**3, bytes_moved=3.0 * 4 * 1024**2),
                      _m(Case("copy", "correct", "torch", "cuda:0", "float32", 1), 1e-3)])
    assert [(c.op_class, c.amount, c.seconds) for c in found] == [
        ("sort", 16.0 * (1 << 22), pytest.approx(3e-4)),
        ("matmul", 2.0 * 1024**3, pytest.approx(1e-4))]
    assert read([_m(sort, 3e-4, bytes_moved=1.0)]) == []  # no ceiling: a cost by size
