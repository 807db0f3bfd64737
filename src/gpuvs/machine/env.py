"""The environment a run ran on, and its fingerprint.

`collect()` runs in the parent without importing any framework: library versions come
from package metadata, GPUs from NVML (the nvidia-ml-py package) when it is there, BLAS
from threadpoolctl. `backend_rows()` is the one part that imports frameworks: it asks each
backend whether it can run, for `gpuvs env` and for workers.

The fingerprint hashes what changes timings (`timing_parts`): the CPU, the GPUs and their
driver, NumPy's BLAS and its threads, the variables that set threads, TF32 or the visible
GPUs, Python, and the measured libraries — numpy, torch, cupy, jax — with the CUDA
libraries they load. Not free memory, not the time, and not a package no case measures
(keras, which `make test` installs, is recorded and shown, never fingerprinted), so a
baseline stays valid until something that moves its numbers changes. `setup_changes`
names what did ("torch 2.13.0 → 2.14.1"): `gpuvs check` and the pytest gate refuse a
baseline on it, `gpuvs compare` prints it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import platform
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from gpuvs.backends.base import Backend, GiB
from gpuvs.model import Environment
from gpuvs.units import nbytes

FINGERPRINT_HEX = 16
MACHINE_VARIABLE = "GPUVS_MACHINE"
GIT_TIMEOUT_S = 5.0
# The measured libraries, each with the distributions that make it up; CuPy and JAX's GPU
# plug-ins publish one distribution per CUDA major version.
MEASURED = {"numpy": ("numpy",), "torch": ("torch",),
            "cupy": ("cupy-cuda13x", "cupy-cuda12x", "cupy-cuda11x", "cupy"),
            "jax": ("jax", "jaxlib", "jax-cuda13-plugin", "jax-cuda12-plugin")}
# The CUDA libraries torch and JAX load from pip wheels (CUDA 13's drop the -cu suffix).
CUDA_LIBRARIES = ("nvidia-cuda-runtime", "nvidia-cuda-runtime-cu12", "nvidia-cublas",
                  "nvidia-cublas-cu12", "nvidia-cudnn-cu13", "nvidia-cudnn-cu12",
                  "nvidia-nccl-cu13", "nvidia-nccl-cu12")
# Recorded too, never fingerprinted: keras runs on torch in the cnn workload's replay, and
# installing it (the test extra does) must not make every stored baseline another set-up's.
LIBRARIES = (*(d for ds in MEASURED.values() for d in ds), *CUDA_LIBRARIES, "keras")
# Environment variables that change results (threads, visible GPUs, allocators, TF32).
RESULT_VARIABLES = ("CUDA_VISIBLE_DEVICES", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
                    "OPENBLAS_NUM_THREADS", "OPENBLAS_CORETYPE", "KERAS_BACKEND",
                    "PYTORCH_CUDA_ALLOC_CONF", "CUPY_TF32", "NVIDIA_TF32_OVERRIDE")
RESULT_PREFIXES = ("XLA_", "NCCL_", "TORCH_NCCL_")


def collect(backends: Iterable[Backend] | None = None) -> Environment:
    """This machine and its software. With `backends`, also their versions (no imports)."""
    facts: dict[str, Any] = {
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "os": f"{platform.system()} {platform.release()}",
        "machine": platform.machine(),
        "cpu_model": _cpu_model(),
        "cpu_caches": cpu_caches(),
        **_cores_and_memory(),
        "blas": _blas(),
        "blas_build": _blas_build(),
        "libraries": _libraries(),
        "variables": _variables(),
        **_gpus(),
    }
    if backends is not None:
        facts["backends"] = {b.name: b.version() for b in backends}
    return Environment(fingerprint(facts), facts)


def provenance(cwd: str | None = None) -> dict[str, Any]:
    """What was run, and where, beside what it ran on: the git commit and dirty flag of
    the repository in the current directory (None outside one, or without git), the
    command line as typed, and a machine label ($GPUVS_MACHINE, else the hostname). Not
    part of the fingerprint: a commit is not a machine."""
    commit = _git(["rev-parse", "HEAD"], cwd)
    dirty = None
    if commit is not None:
        status = _git(["status", "--porcelain", "--untracked-files=no"], cwd)
        dirty = bool(status) if status is not None else None
    return {"machine": os.environ.get(MACHINE_VARIABLE) or platform.node() or "unknown",
            "git_commit": commit, "git_dirty": dirty,
            "command": " ".join(sys.argv) if sys.argv and sys.argv[0] else ""}


def _git(args: list[str], cwd: str | None) -> str | None:
    """git's output, stripped; None where there is no git or no repository."""
    import subprocess

    try:
        done = subprocess.run(["git", *args], capture_output=True, text=True, cwd=cwd,
                              timeout=GIT_TIMEOUT_S)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def fingerprint(facts: Mapping[str, Any]) -> str:
    """Short sha256 of the parts that change timings (`timing_parts`), those known.

    Equal fingerprints mean no part differs. Unequal ones may still compare: a library
    installed since, or a part an older gpuvs did not record, is known on one side only,
    and `setup_changes` does not count it. Runs stored before the fingerprint had parts
    (it hashed every recorded library, memory included) keep their old string; whatever
    compares runs reads the parts again from their facts, never the two strings."""
    known = {k: v for k, v in timing_parts(facts).items() if v is not None}
    digest = hashlib.sha256(json.dumps(known, sort_keys=True).encode())
    return digest.hexdigest()[:FINGERPRINT_HEX]


def timing_parts(facts: Mapping[str, Any]) -> dict[str, str | None]:
    """What changes timings, part by part, in words; None where the facts do not say (a
    library not installed, a run stored before the fact was recorded). Read from a run's
    stored facts as well as from `collect()`'s, so old runs compare by the same parts."""
    libraries = facts.get("libraries") or {}
    parts: dict[str, str | None] = {
        "CPU": _cpu_part(facts), "GPU": _gpu_part(facts),
        "driver": (f"{facts['driver']} (CUDA {facts.get('cuda_driver')})"
                   if facts.get("driver") else None),
        "BLAS": facts.get("blas_build"), "BLAS threads": blas_threads(facts),
        "variables": (", ".join(f"{k}={v}" for k, v in sorted(facts["variables"].items()))
                      or "none set") if "variables" in facts else None,
        "Python": facts.get("python"),
    }
    for name, distributions in MEASURED.items():
        found = [d for d in distributions if d in libraries]
        parts[name] = (str(libraries[name]) if found == [name] else
                       ", ".join(f"{d} {libraries[d]}" for d in found) or None)
    cuda = [f"{d} {libraries[d]}" for d in CUDA_LIBRARIES if d in libraries]
    parts["CUDA libraries"] = ", ".join(cuda) or None
    return parts


def setup_changes(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    """What changes timings that differs between two runs' facts, one phrase a part:
    "torch 2.13.0 → 2.14.1". A part known on one side only is no change: a library
    installed since measured nothing before (none of its cases match), and a part an
    older gpuvs did not record cannot be told."""
    a, b = timing_parts(before), timing_parts(after)
    return [_variables_change(before["variables"], after["variables"]) if label == "variables"
            else f"{'' if str(a[label]).startswith(label) else label + ' '}{a[label]} → "
                 f"{b[label]}"
            for label in a
            if a[label] is not None and b[label] is not None and a[label] != b[label]]


def _variables_change(before: Mapping[str, str], after: Mapping[str, str]) -> str:
    """The variables that differ, each once ("variables NCCL_NVLS_ENABLE: 0 → unset"): the
    whole lists side by side hid a one-variable change among the ones both runs had."""
    changed = sorted(k for k in {*before, *after} if before.get(k) != after.get(k))
    return "variables " + ", ".join(
        f"{k}: {before.get(k, 'unset')} → {after.get(k, 'unset')}" for k in changed)


def blas_threads(facts: Mapping[str, Any]) -> str | None:
    """The threads of NumPy's own BLAS: the loaded pools whose library is the one NumPy
    was built with (a process that imported torch also shows torch's MKL or OpenMP pools,
    which vary by process); every BLAS pool where the build is not recorded."""
    build = str(facts.get("blas_build") or "").lower()
    pools = [p for p in facts.get("blas") or [] if p.get("user_api") == "blas"]
    mine = [p for p in pools if p.get("api") and str(p["api"]) in build] or pools
    threads = sorted({int(p["threads"]) for p in mine if p.get("threads")})
    return ", ".join(map(str, threads)) or None


def _cpu_part(facts: Mapping[str, Any]) -> str | None:
    if not facts.get("cpu_model"):
        return None
    return (f"{facts['cpu_model']}, {facts.get('cores_physical')} cores, "
            f"{facts.get('cores_logical')} threads ({facts.get('machine')})")


def _gpu_part(facts: Mapping[str, Any]) -> str | None:
    if "gpus" not in facts:
        return None
    return ", ".join(f"{g.get('name')} ({nbytes(int(g.get('memory_total') or 0))})"
                     for g in facts["gpus"]) or "none"


def _cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo (Linux), else what `platform` knows."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def cpu_caches(root: str = "/sys/devices/system/cpu/cpu0/cache") -> list[dict[str, Any]]:
    """The data caches one core sees, smallest first: level, size in bytes, and how many
    logical CPUs share it (Linux sysfs; [] elsewhere). Instruction caches are left out."""
    found = []
    for index in sorted(os.listdir(root)) if os.path.isdir(root) else []:
        folder = os.path.join(root, index)
        try:
            read = {k: Path(folder, k).read_text().strip()
                    for k in ("level", "type", "size", "shared_cpu_list")}
        except OSError:
            continue
        if read["type"] == "Instruction" or not read["size"]:
            continue
        found.append({"level": int(read["level"]), "size": _size_bytes(read["size"]),
                      "shared_by": _count_cpus(read["shared_cpu_list"])})
    return sorted(found, key=lambda c: c["level"])


def _size_bytes(text: str) -> int:
    """'48K', '1024K', '32768K', '2M' → bytes."""
    scale = {"K": 1024, "M": 1024**2, "G": 1024**3}.get(text[-1:].upper(), 1)
    return int(text.rstrip("KMGkmg")) * scale


def _count_cpus(listed: str) -> int:
    """'0-1,4' → 3."""
    total = 0
    for part in filter(None, listed.split(",")):
        lo, _, hi = part.partition("-")
        total += int(hi or lo) - int(lo) + 1
    return total


def _cores_and_memory() -> dict[str, Any]:
    import psutil

    mem = psutil.virtual_memory()
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    return {"cores_physical": psutil.cpu_count(logical=False),
            "cores_logical": psutil.cpu_count(logical=True),
            "cores_usable": usable,
            "memory_total_gib": round(mem.total / GiB),
            "memory_total": int(mem.total), "memory_available": int(mem.available)}


def _blas() -> list[dict[str, Any]]:
    """Thread pools of the BLAS and OpenMP libraries loaded in this process (threadpoolctl)."""
    import numpy  # noqa: F401  (threadpoolctl sees only libraries already loaded)
    from threadpoolctl import threadpool_info

    return [{"api": p.get("internal_api"), "user_api": p.get("user_api"),
             "library": os.path.basename(p.get("filepath") or ""),
             "version": p.get("version"), "threads": p.get("num_threads")}
            for p in threadpool_info()]


def _blas_build() -> str | None:
    """The BLAS NumPy was built with — unlike the loaded pools, the same in any process."""
    import numpy as np

    try:
        blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
    except (TypeError, KeyError):  # NumPy before 1.26 has no mode="dicts"
        return None
    return f"{blas.get('name')} {blas.get('version')}"


def _libraries() -> dict[str, str]:
    """Installed versions, from package metadata: nothing is imported."""
    from importlib.metadata import PackageNotFoundError, version

    found = {}
    for name in LIBRARIES:
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            continue
    return found


def _variables() -> dict[str, str]:
    return {k: v for k, v in sorted(os.environ.items())
            if k in RESULT_VARIABLES or k.startswith(RESULT_PREFIXES)}


def _gpus() -> dict[str, Any]:
    """GPU names, memory and driver from NVML; an empty list and the reason otherwise."""
    try:
        import pynvml
    except ImportError:
        return {"gpus": [], "nvml": "nvidia-ml-py is not installed"}
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as e:
        return {"gpus": [], "nvml": f"NVML unavailable: {_text(e)}"}
    try:
        gpus = []
        for i in range(pynvml.nvmlDeviceGetCount()):
            h = pynvml.nvmlDeviceGetHandleByIndex(i)
            gpus.append({"index": i, "name": _text(pynvml.nvmlDeviceGetName(h)),
                         "memory_total": int(pynvml.nvmlDeviceGetMemoryInfo(h).total)})
        cuda = int(pynvml.nvmlSystemGetCudaDriverVersion())  # e.g. 13000 for 13.0
        return {"gpus": gpus, "driver": _text(pynvml.nvmlSystemGetDriverVersion()),
                "cuda_driver": f"{cuda // 1000}.{cuda % 1000 // 10}"}
    except pynvml.NVMLError as e:
        return {"gpus": [], "nvml": f"NVML error: {_text(e)}"}
    finally:
        with contextlib.suppress(pynvml.NVMLError):
            pynvml.nvmlShutdown()


def _text(value: Any) -> str:
    text = value.decode() if isinstance(value, bytes) else str(value)
    return text.strip().splitlines()[0] if text.strip() else type(value).__name__


def describe(env: Environment) -> list[tuple[str, str]]:
    """(label, value) rows for people; the CLI prints them."""
    f = env.facts
    usable = f.get("cores_usable")
    rows = [("CPU", f"{f.get('cpu_model')} · {f.get('cores_physical')} cores, "
                    f"{f.get('cores_logical')} threads"
                    + (f", {usable} usable" if usable and usable != f.get("cores_logical")
                       else "")),
            ("memory", f"{f.get('memory_total_gib')} GiB, "
                       f"{nbytes(f.get('memory_available', 0))} free"),
            ("Python", f"{f.get('implementation')} {f.get('python')} on {f.get('os')} "
                       f"{f.get('machine')}")]
    for pool in f.get("blas", []):
        rows.append(("BLAS / threads", f"{pool['api']} {pool['version'] or ''} "
                                        f"({pool['library']}): {pool['threads']} threads"))
    rows += _gpu_rows(f)
    libs = ", ".join(f"{k} {v}" for k, v in f.get("libraries", {}).items())
    rows.append(("libraries", libs or "none"))
    if f.get("variables"):
        rows.append(("variables", ", ".join(f"{k}={v}" for k, v in f["variables"].items())))
    return rows


def _gpu_rows(f: Any) -> list[tuple[str, str]]:
    if not f.get("gpus"):
        return [("GPU", f"none found ({f.get('nvml') or 'NVML lists no device'})")]
    return [(f"GPU {g['index']}", f"{g['name']} · {nbytes(g['memory_total'])} · driver "
                                  f"{f.get('driver')} (CUDA {f.get('cuda_driver')})")
            for g in f["gpus"]]


def backend_rows(backends: Iterable[Backend], devices: Sequence[str] = ("cpu", "cuda")
                 ) -> list[dict[str, Any]]:
    """Whether each backend can run on each device kind it supports. Imports frameworks:
    run it in a worker or in `gpuvs env`, never at import time."""
    rows = []
    for backend in backends:
        for wanted in devices:
            kind = wanted.partition(":")[0]
            if kind not in backend.device_kinds:
                continue
            device = "cuda:0" if wanted == "cuda" else wanted
            reason = _reason(backend, device)
            rows.append({"backend": backend.name, "device": device, "available": reason is None,
                         "reason": reason, "version": backend.version()})
    return rows


def _reason(backend: Backend, device: str) -> str | None:
    try:
        return backend.unavailable_reason(device)
    except Exception as e:  # a broken install: the reason is the error, on one line
        return f"{backend.name} failed to load: {type(e).__name__}: {_text(e)}"
