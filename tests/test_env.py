"""The environment fingerprint: stable, framework-free, and honest about missing GPUs."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from gpuvs import backends
from gpuvs.backends.numpy_ import NumpyBackend
from gpuvs.machine import env


def test_the_fingerprint_is_stable_and_short() -> None:
    first, second = env.collect(), env.collect()
    assert re.fullmatch(r"[0-9a-f]{16}", first.fingerprint)
    assert first.fingerprint == second.fingerprint


def test_facts_describe_the_cpu_memory_blas_and_libraries() -> None:
    f = env.collect().facts
    assert isinstance(f["cpu_model"], str) and f["cpu_model"]
    assert f["cores_logical"] >= 1 and f["memory_total_gib"] >= 1
    assert 0 < f["memory_available"] <= f["memory_total"]
    blas = [p for p in f["blas"] if p["user_api"] == "blas"]
    assert blas and all(p["threads"] >= 1 and p["library"] for p in blas)
    assert f["libraries"]["numpy"] == np.__version__
    assert isinstance(f["gpus"], list)
    assert f["gpus"] or isinstance(f["nvml"], str)


def test_the_fingerprint_ignores_the_moment_but_not_the_machine() -> None:
    facts = dict(env.collect().facts)
    fp = env.fingerprint(facts)
    assert env.fingerprint(facts | {"memory_available": 1, "cores_usable": 1}) == fp
    torch_pool = {"api": "mkl", "user_api": "blas", "library": "libmkl_rt.so", "threads": 7}
    # torch's pools load only in a process that imported it: not NumPy's BLAS
    assert env.fingerprint(facts | {"blas": [*facts["blas"], torch_pool]}) == fp
    assert env.fingerprint(facts | {"libraries": {**facts["libraries"], "numpy": "0.0"}}) != fp
    gpu = {"index": 0, "name": "a GPU no machine has", "memory_total": 12345}
    assert env.fingerprint(facts | {"gpus": [gpu]}) != fp
    assert env.fingerprint(facts | {"gpus": [gpu], "driver": "580.159.04"}) != \
        env.fingerprint(facts | {"gpus": [gpu], "driver": "580.159.03"})


def _facts(**changes: Any) -> dict[str, Any]:
    """This machine's facts with numpy's BLAS at 2 threads and torch 2.13.0, then changed."""
    facts = dict(env.collect().facts)
    blas = {"api": "openblas", "user_api": "blas", "library": "libopenblas.so", "threads": 2}
    facts |= {"blas_build": "scipy-openblas 0.3.27", "blas": [blas], "variables": {},
              "libraries": {"numpy": "2.1.0", "torch": "2.13.0"}}
    return facts | changes


def test_an_unrelated_package_leaves_the_fingerprint_alone() -> None:
    """Installing keras (the test extra does) must not make the baseline that `make run`
    stored another set-up's: no case measures keras's version."""
    before = _facts()
    after = _facts(libraries={**before["libraries"], "keras": "3.15.1"})
    assert env.fingerprint(after) == env.fingerprint(before)
    assert env.setup_changes(before, after) == []


def test_a_change_that_moves_timings_is_named_part_by_part() -> None:
    before = _facts()
    pools = [{**before["blas"][0], "threads": 1}]
    after = _facts(libraries={"numpy": "2.1.0", "torch": "2.14.1"}, blas=pools,
                   variables={"OMP_NUM_THREADS": "1"})
    assert env.fingerprint(after) != env.fingerprint(before)
    assert env.setup_changes(before, after) == [
        "BLAS threads 2 → 1", "variables OMP_NUM_THREADS: unset → 1",
        "torch 2.13.0 → 2.14.1"]
    nccl = {"NCCL_NVLS_ENABLE": "0", "NCCL_VERSION": "2.28.3-1"}  # one of two unset
    assert env.setup_changes(_facts(variables=nccl), _facts(variables={
        "NCCL_VERSION": "2.28.3-1"})) == ["variables NCCL_NVLS_ENABLE: 0 → unset"]
    gpu = {"index": 0, "name": "NVIDIA H100 80GB HBM3", "memory_total": 85520809984}
    assert env.setup_changes(before, _facts(gpus=[gpu], driver="580.1", cuda_driver="13.0")
                             ) == ["GPU none → NVIDIA H100 80GB HBM3 (79.6 GiB)"]


def test_a_part_known_on_one_side_only_is_no_change() -> None:
    """A library installed since measured nothing in the baseline, and a run stored by an
    older gpuvs lacks the facts recorded since (here: the variables): neither refuses."""
    before = _facts()
    with_cupy = _facts(libraries={**before["libraries"], "cupy-cuda12x": "13.3.0"})
    assert env.setup_changes(before, with_cupy) == []
    older = {k: v for k, v in before.items() if k != "variables"}
    assert env.setup_changes(older, _facts(variables={"OMP_NUM_THREADS": "1"})) == []
    assert env.setup_changes(with_cupy, _facts(libraries={
        **with_cupy["libraries"], "cupy-cuda12x": "13.4.0"})) == [
        "cupy-cuda12x 13.3.0 → cupy-cuda12x 13.4.0"]


def test_describe_gives_label_value_rows() -> None:
    rows = env.describe(env.collect())
    assert rows and all(isinstance(k, str) and isinstance(v, str) for k, v in rows)
    labels = [k for k, _ in rows]
    assert {"CPU", "memory", "Python", "libraries"} <= set(labels)
    assert "BLAS / threads" in labels
    assert any(k.startswith("GPU") for k in labels)


def test_collecting_imports_no_framework() -> None:
    code = ("import sys; from gpuvs import backends; from gpuvs.machine import env; "
            "e = env.collect(backends.REGISTRY.all()); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('torch', 'jax', 'jaxlib', 'cupy', 'keras')))")
    path = os.pathsep.join(sys.path)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env={**os.environ, "PYTHONPATH": path}).stdout.strip()
    assert out == "[]"


def test_with_backends_their_versions_are_recorded() -> None:
    e = env.collect([backends.get("numpy")])
    assert e.facts["backends"] == {"numpy": np.__version__}
    assert e.fingerprint == env.collect().fingerprint  # what was asked for is not the machine


def test_variables_that_change_results_are_recorded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    monkeypatch.setenv("XLA_FLAGS", "--xla_force_host_platform_device_count=2")
    monkeypatch.setenv("HOME_OF_SOMETHING_ELSE", "x")
    e = env.collect()
    assert e.facts["variables"]["OMP_NUM_THREADS"] == "3"
    assert "XLA_FLAGS" in e.facts["variables"]
    assert "HOME_OF_SOMETHING_ELSE" not in e.facts["variables"]
    row = dict(env.describe(e))["variables"]
    assert "OMP_NUM_THREADS=3, " in row
    assert "XLA_FLAGS=--xla_force_host_platform_device_count=2" in row


class FakeNVMLError(Exception):
    pass


def _fake_nvml(monkeypatch: pytest.MonkeyPatch, fail_init: bool) -> None:
    def init() -> None:
        if fail_init:
            raise FakeNVMLError("Driver Not Loaded")

    handle = object()
    nvml = SimpleNamespace(
        NVMLError=FakeNVMLError, nvmlInit=init, nvmlShutdown=lambda: None,
        nvmlDeviceGetCount=lambda: 1, nvmlDeviceGetHandleByIndex=lambda i: handle,
        nvmlDeviceGetName=lambda h: b"NVIDIA H100 80GB HBM3",
        nvmlDeviceGetMemoryInfo=lambda h: SimpleNamespace(total=85520809984),
        nvmlSystemGetDriverVersion=lambda: "580.159.04",
        nvmlSystemGetCudaDriverVersion=lambda: 13000)
    monkeypatch.setitem(sys.modules, "pynvml", nvml)


def test_gpus_come_from_nvml(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_nvml(monkeypatch, fail_init=False)
    f = env.collect().facts
    assert f["gpus"] == [{"index": 0, "name": "NVIDIA H100 80GB HBM3",
                          "memory_total": 85520809984}]
    assert (f["driver"], f["cuda_driver"]) == ("580.159.04", "13.0")
    row = dict(env.describe(env.collect()))["GPU 0"]
    assert row == "NVIDIA H100 80GB HBM3 · 79.6 GiB · driver 580.159.04 (CUDA 13.0)"


def test_without_nvml_there_are_no_gpus_and_a_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_nvml(monkeypatch, fail_init=True)
    f = env.collect().facts
    assert f["gpus"] == [] and f["nvml"] == "NVML unavailable: Driver Not Loaded"
    assert ("GPU", "none found (NVML unavailable: Driver Not Loaded)") in env.describe(
        env.collect())
    monkeypatch.setitem(sys.modules, "pynvml", None)  # nvidia-ml-py not installed
    assert env.collect().facts["nvml"] == "nvidia-ml-py is not installed"


def test_backend_rows_cover_each_device_kind_a_backend_supports() -> None:
    rows = env.backend_rows([backends.get("numpy"), backends.get("cupy")])
    assert {(r["backend"], r["device"]) for r in rows} == {("numpy", "cpu"), ("cupy", "cuda:0")}
    numpy_row = next(r for r in rows if r["backend"] == "numpy")
    assert numpy_row == {"backend": "numpy", "device": "cpu", "available": True, "reason": None,
                         "version": np.__version__}
    cupy_row = next(r for r in rows if r["backend"] == "cupy")
    assert cupy_row["available"] is (cupy_row["reason"] is None)
    only_cpu = env.backend_rows([backends.get("cupy")], devices=("cpu",))
    assert only_cpu == []


class Broken(NumpyBackend):
    name = "broken"

    def unavailable_reason(self, device: str = "cpu") -> str | None:
        raise OSError("libsomething.so.12: cannot open shared object file\nsecond line")


def test_a_backend_that_fails_to_load_is_a_row_with_the_reason() -> None:
    (row,) = env.backend_rows([Broken()])
    assert row["available"] is False
    assert row["reason"] == ("broken failed to load: OSError: libsomething.so.12: cannot open "
                             "shared object file")


def test_torch_rows_say_why_cuda_is_missing() -> None:
    torch: Any = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA device")
    rows = {r["device"]: r for r in env.backend_rows([backends.get("torch")])}
    assert rows["cpu"]["available"] and not rows["cuda:0"]["available"]
    assert rows["cuda:0"]["reason"].startswith("no CUDA device")


@pytest.mark.gpu
def test_on_the_gpu_machine_nvml_lists_the_gpus() -> None:
    f = env.collect().facts
    if "nvml" in f:
        pytest.skip(f["nvml"])
    assert f["gpus"] and all(g["name"] and g["memory_total"] > 0 for g in f["gpus"])
    assert f["driver"] and re.fullmatch(r"\d+\.\d+", f["cuda_driver"])
