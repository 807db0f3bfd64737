"""The environment a run ran on, and its fingerprint.

Collected in the parent without importing any framework: library versions come from
package metadata, GPUs from NVML (nvidia-ml-py) when it is there. The fingerprint hashes
what identifies the machine and its software — not free memory, not the time — so runs
on the same set-up share it and ceilings can be cached by it.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
from collections.abc import Iterable
from typing import Any

from gpuvs.backends.base import Backend, GiB
from gpuvs.model import Environment
from gpuvs.units import nbytes

LIBRARIES = ("numpy", "torch", "cupy-cuda13x", "cupy-cuda12x", "cupy", "jax", "jaxlib",
             "keras", "scipy")
# Facts that identify a set-up; everything else is context for the reader.
STABLE = ("cpu_model", "cores_physical", "cores_logical", "memory_total_gib", "machine",
          "python", "libraries", "gpus", "blas")


def collect() -> Environment:
    facts: dict[str, Any] = {
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "os": f"{platform.system()} {platform.release()}",
        "machine": platform.machine(),
        "cpu_model": _cpu_model(),
        **_cores_and_memory(),
        "blas": _blas(),
        "libraries": _libraries(),
        **_gpus(),
    }
    stable = {k: facts.get(k) for k in STABLE}
    digest = hashlib.sha256(json.dumps(stable, sort_keys=True, default=str).encode())
    return Environment(digest.hexdigest()[:16], facts)


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _cores_and_memory() -> dict[str, Any]:
    import psutil

    mem = psutil.virtual_memory()
    return {"cores_physical": psutil.cpu_count(logical=False),
            "cores_logical": psutil.cpu_count(logical=True),
            "cpu_affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
            else None,
            "memory_total_gib": round(mem.total / GiB), "memory_available": mem.available}


def _blas() -> list[dict[str, Any]]:
    """Thread pools of the BLAS and OpenMP libraries NumPy has loaded (threadpoolctl)."""
    from threadpoolctl import threadpool_info

    return [{"api": p.get("internal_api"), "library": os.path.basename(p.get("filepath", "")),
             "version": p.get("version"), "threads": p.get("num_threads")}
            for p in threadpool_info()]


def _libraries() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    found = {}
    for name in LIBRARIES:
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            continue
    return found


def _gpus() -> dict[str, Any]:
    """GPU names, memory and driver from NVML; an empty list and the reason otherwise."""
    try:
        import pynvml
    except ImportError:
        return {"gpus": [], "nvml": "nvidia-ml-py is not installed"}
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as e:
        return {"gpus": [], "nvml": f"NVML unavailable: {e}"}
    try:
        driver = _text(pynvml.nvmlSystemGetDriverVersion())
        gpus = []
        for i in range(pynvml.nvmlDeviceGetCount()):
            h = pynvml.nvmlDeviceGetHandleByIndex(i)
            gpus.append({"index": i, "name": _text(pynvml.nvmlDeviceGetName(h)),
                         "memory_total": int(pynvml.nvmlDeviceGetMemoryInfo(h).total)})
        cuda = pynvml.nvmlSystemGetCudaDriverVersion()
        return {"gpus": gpus, "driver": driver,
                "cuda_driver": f"{cuda // 1000}.{cuda % 1000 // 10}"}
    except pynvml.NVMLError as e:
        return {"gpus": [], "nvml": f"NVML error: {e}"}
    finally:
        pynvml.nvmlShutdown()


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def describe(env: Environment) -> list[tuple[str, str]]:
    """(label, value) rows for people; the CLI prints them."""
    f = env.facts
    rows = [("CPU", f"{f['cpu_model']} · {f['cores_physical']} cores, "
                    f"{f['cores_logical']} threads"),
            ("memory", f"{f['memory_total_gib']} GiB, {nbytes(f['memory_available'])} free"),
            ("Python", f"{f['implementation']} {f['python']} on {f['os']} {f['machine']}")]
    for pool in f["blas"]:
        rows.append(("BLAS / threads", f"{pool['api']} {pool['version'] or ''} "
                                        f"({pool['library']}): {pool['threads']} threads"))
    for gpu in f["gpus"]:
        rows.append((f"GPU {gpu['index']}", f"{gpu['name']} · {nbytes(gpu['memory_total'])} · "
                                            f"driver {f['driver']} (CUDA {f['cuda_driver']})"))
    if not f["gpus"]:
        rows.append(("GPU", f"none found ({f.get('nvml', 'NVML found no device')})"))
    libs = ", ".join(f"{k} {v}" for k, v in f["libraries"].items())
    rows.append(("libraries", libs or "none"))
    return rows


def backend_rows(backends: Iterable[Backend]) -> list[dict[str, Any]]:
    """Availability of each backend on each device kind. Imports the frameworks."""
    rows = []
    for backend in backends:
        backend.prepare_worker()
        for kind in backend.device_kinds:
            device = "cuda:0" if kind == "cuda" else kind
            reason = backend.unavailable_reason(device)
            rows.append({"backend": backend.name, "device": device, "available": reason is None,
                         "reason": reason, "version": backend.version()})
    return rows
