"""Test doubles for the timing logic, and workloads that fail on purpose.

`SimBackend` is a seeded simulated *asynchronous* device with a virtual clock: a launch
costs the host `launch_s`, kernels queue up and run back to back, synchronising waits
for the queue and costs `sync_s`, and events are stamped when the device reaches them.
It lets the protocol be tested exactly on a CPU-only machine — and shows that host
timing without a synchronisation is wrong. It is never a stand-in for a real backend.

The `test_*` workloads fail for real inside a worker (abort, hang, exhaust memory, be
killed, return a wrong answer), so the runner's handling is tested on real processes.
Workers load this module through GPUVS_PLUGINS=tests.fakes.
"""

from __future__ import annotations

import importlib
import os
import resource
import signal
import time
from typing import Any

import numpy as np

from gpuvs import backends, workloads
from gpuvs.backends.base import Backend
from gpuvs.errors import WrongResult
from gpuvs.measuring.protocol import Clock, DeviceTimer, Prepared
from gpuvs.model import Case, Params
from gpuvs.workloads.base import Workload


class SimDevice:
    """Virtual host time plus a queue of kernels on a simulated device."""

    def __init__(self, launch_s: float = 5e-6, sync_s: float = 20e-6, jitter: float = 0.0,
                 seed: int = 0, idle_start_s: float = 0.0, event_s: float = 0.0) -> None:
        self.launch_s, self.sync_s, self.jitter = launch_s, sync_s, jitter
        # Device time an event takes once stamped (the queue drains around it: about a
        # microsecond on the H100).
        self.event_s = event_s
        # A kernel that starts on an idle device runs this much longer (as on the H100:
        # a 4096² product took 2725 µs a call from idle, 2649 µs back to back).
        self.idle_start_s = idle_start_s
        self.host = 0.0
        self.queue_end = 0.0
        self.rng = np.random.default_rng(seed)
        self.kernels = 0

    def launch(self, kernel_s: float) -> None:
        """The host pays the launch; the kernel runs when the device gets to it."""
        self.host += self.launch_s
        noise = 1 + self.jitter * float(self.rng.standard_normal()) if self.jitter else 1.0
        idle = self.idle_start_s if self.queue_end <= self.host else 0.0
        self.queue_end = max(self.host, self.queue_end) + kernel_s * max(noise, 0.0) + idle
        self.kernels += 1

    def synchronize(self) -> None:
        self.host = max(self.host, self.queue_end) + self.sync_s

    def stamp(self) -> float:
        """An event: recorded after the work queued before it, at no host cost."""
        stamp = self.queue_end = max(self.host, self.queue_end)
        self.queue_end += self.event_s
        return stamp


class SimTimer:
    def __init__(self, device: SimDevice) -> None:
        self.device = device
        self.pairs: list[tuple[float, float]] = []
        self._start = 0.0

    def start(self) -> None:
        self._start = self.device.stamp()

    def stop(self) -> None:
        self.pairs.append((self._start, self.device.stamp()))

    def lap(self) -> None:
        mark = self.device.stamp()
        self.pairs.append((self._start, mark))
        self._start = mark

    def elapsed(self) -> list[float]:
        self.device.synchronize()
        out = [b - a for a, b in self.pairs]
        self.pairs.clear()
        return out


class SimClock:
    name = "sim_events"
    is_async = True

    def __init__(self, device: SimDevice) -> None:
        self.device = device

    def now(self) -> float:
        return self.device.host

    def synchronize(self, result: object = None) -> None:
        self.device.synchronize()

    def timer(self) -> DeviceTimer | None:
        return SimTimer(self.device)


class UnsyncedClock(SimClock):
    """The %timeit mistake: read the host clock around launches and never wait."""

    is_async = False

    def synchronize(self, result: object = None) -> None:
        return None

    def timer(self) -> DeviceTimer | None:
        from gpuvs.measuring.protocol import HostTimer
        return HostTimer(self.now)


@backends.register
class SimBackend(Backend):
    name = "sim"
    device_kinds = ("cuda",)
    dtypes = ("float32",)
    module = "numpy"
    needs_nvidia_device = False  # a simulated GPU: runs on any machine

    def __init__(self) -> None:
        self.device = SimDevice()

    def clock(self, device: str) -> Clock:
        return SimClock(self.device)

    def from_numpy(self, a: np.ndarray, device: str, dtype: str) -> Any:
        return np.array(a, dtype=dtype)

    def to_numpy(self, x: Any) -> np.ndarray:
        return np.asarray(x)

    def ones(self, shape: tuple[int, ...], dtype: str, device: str) -> Any:
        return np.ones(shape, dtype=dtype)


class _TestWorkload(Workload):
    """A workload whose size is microseconds of work; no real memory needed."""

    dtypes = ("float32",)
    in_default_suite = False

    def default_sizes(self, params: Params) -> tuple[int, ...]:
        return (1000,)

    def data_modes(self, params: Params) -> tuple[str, ...]:
        return ("resident",)

    def memory_needed(self, size: int, params: Params, dtype: str) -> int:
        return 0

    def host_memory_needed(self, size: int, params: Params, dtype: str) -> int:
        return 0


def _ok(out: object) -> None:
    return None


@workloads.register
class SimKernel(_TestWorkload):
    """On SimBackend: one kernel of `size` microseconds per call."""

    name = "test_sim_kernel"
    description = "a simulated kernel of size µs"

    def prepare(self, backend: Backend, case: Case) -> Prepared:
        device = backend.device  # type: ignore[attr-defined]
        return Prepared(call=lambda: device.launch(case.size * 1e-6), check=_ok)


def spin(seconds: float) -> None:
    """Busy-wait: an operation of known length, more exact than sleep."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


@workloads.register
class Spin(_TestWorkload):
    name = "test_spin"
    description = "busy-waits size µs per call"

    def prepare(self, backend: Backend, case: Case) -> Prepared:
        return Prepared(call=lambda: spin(case.size * 1e-6), check=_ok)


@workloads.register
class Abort(_TestWorkload):
    name = "test_abort"
    description = "calls os.abort() while preparing"

    def prepare(self, backend: Backend, case: Case) -> Prepared:
        os.abort()


@workloads.register
class Hang(_TestWorkload):
    name = "test_hang"
    description = "sleeps far past any timeout"

    def prepare(self, backend: Backend, case: Case) -> Prepared:
        time.sleep(3600)
        raise AssertionError("unreachable")


@workloads.register
class Hog(_TestWorkload):
    """Caps the worker's address space, then allocates past the cap: a real MemoryError."""

    name = "test_hog"
    description = "allocates past a memory limit"

    def prepare(self, backend: Backend, case: Case) -> Prepared:
        limit = 4 * 1024**3 + _address_space_in_use()
        resource.setrlimit(resource.RLIMIT_AS, (limit, resource.RLIM_INFINITY))
        np.ones(limit // 8 + 1)  # over the cap: raises MemoryError
        raise AssertionError("the allocation should have failed")


def _address_space_in_use() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[0]) * resource.getpagesize()


@workloads.register
class Killed(_TestWorkload):
    """SIGKILL from outside, as the host's out-of-memory killer sends it."""

    name = "test_killed"
    description = "is killed with SIGKILL"

    def prepare(self, backend: Backend, case: Case) -> Prepared:
        os.kill(os.getpid(), signal.SIGKILL)
        raise AssertionError("unreachable")


@workloads.register
class Wrong(_TestWorkload):
    name = "test_wrong"
    description = "returns a wrong answer fast"

    def prepare(self, backend: Backend, case: Case) -> Prepared:
        def check(out: object) -> None:
            raise WrongResult(f"expected 1.0, got {out}")

        return Prepared(call=lambda: 0.0, check=check)


@workloads.register
class GpuHog(_TestWorkload):
    """Asks the device for twice its free memory: a real device out-of-memory."""

    name = "test_gpu_hog"
    description = "allocates twice the free device memory"

    def prepare(self, backend: Backend, case: Case) -> Prepared:
        elements = 2 * backend.memory_free(case.device) // 4
        x = backend.ones((elements,), "float32", case.device)
        backend.clock(case.device).synchronize(x)  # JAX reports failures when waited on
        raise AssertionError("the allocation should have failed")


@workloads.register
class DeviceAssert(_TestWorkload):
    """An out-of-bounds index in a CUDA kernel: a sticky error that poisons the process."""

    name = "test_device_assert"
    description = "triggers a device-side assert (torch only)"

    def prepare(self, backend: Backend, case: Case) -> Prepared:
        import torch

        x = torch.zeros(4, device=case.device)
        x[torch.tensor([10], device=case.device)] = 1.0
        torch.cuda.synchronize()
        raise AssertionError("the kernel should have failed")


@workloads.register
class Linear(_TestWorkload):
    """Known costs on both sides: the CPU spins 5 µs + 1 ns/element; the simulated GPU
    runs 20 µs + 0.01 ns/element. The GPU wins from about 15 152 elements on."""

    name = "test_linear"
    description = "a sweep with a known crossover (numpy vs sim)"

    def flops(self, size: int, params: Params) -> float:
        return float(size)

    def prepare(self, backend: Backend, case: Case) -> Prepared:
        if isinstance(backend, SimBackend):
            device = backend.device
            return Prepared(call=lambda: device.launch(2e-5 + case.size * 1e-11), check=_ok)
        return Prepared(call=lambda: spin(5e-6 + case.size * 1e-9), check=_ok)


@workloads.register
class TwoParts(_TestWorkload):
    """A call made of two known pieces, 1 ms and 2 ms, each also timed alone."""

    name = "test_two_parts"
    description = "a call whose parts are timed apart"

    def has_parts(self, case: Case) -> bool:
        return True

    def prepare(self, backend: Backend, case: Case) -> Prepared:
        def one() -> None:
            spin(1e-3)

        def two() -> None:
            spin(2e-3)

        return Prepared(call=lambda: (one(), two()), check=_ok,
                        parts=(("one", one), ("two", two)))


@workloads.register
class Pid(_TestWorkload):
    """Records the worker process it ran in, to show which cases shared a process."""

    name = "test_pid"
    description = "which process ran the case"
    variants = ("as_written", "correct")

    def prepare(self, backend: Backend, case: Case) -> Prepared:
        from gpuvs.measuring.as_written import wall_once
        return Prepared(call=lambda: None, check=_ok, self_timed=wall_once(lambda: None))

    def counters(self, case: Case) -> dict[str, float]:
        return {"pid": float(os.getpid())}


@workloads.register
class OtherPost(Pid):
    """A second post to replay: its cells run in a process of their own."""

    name = "test_pid_other"
    description = "which process ran the case, for another post"


@workloads.register
class Bimodal(_TestWorkload):
    """Every third call takes a third of the others' time: two groups of samples."""

    name = "test_bimodal"
    description = "alternates fast and slow calls (size µs the slow ones)"

    def prepare(self, backend: Backend, case: Case) -> Prepared:
        calls = [0]

        def call() -> None:
            calls[0] += 1
            spin(case.size * 1e-6 / (3 if calls[0] % 3 == 0 else 1))

        return Prepared(call=call, check=_ok, single_call=True)


@workloads.register
class Planted(_TestWorkload):
    """A call of size µs, made slower by $GPUVS_PLANTED_SLOWDOWN (a factor): the same case,
    the same workload version, slower code — what `gpuvs check` must catch. The size named
    by $GPUVS_PLANTED_CRASH_AT crashes its worker instead (a case that did not end ok)."""

    name = "test_planted"
    description = "size µs a call, times $GPUVS_PLANTED_SLOWDOWN"

    def prepare(self, backend: Backend, case: Case) -> Prepared:
        if os.environ.get("GPUVS_PLANTED_CRASH_AT") == str(case.size):
            os.abort()
        slowdown = float(os.environ.get("GPUVS_PLANTED_SLOWDOWN", "1"))
        return Prepared(call=lambda: spin(case.size * 1e-6 * slowdown), check=_ok)


@workloads.register
class PlantedArithmetic(Planted):
    """The planted call, counting its work: a busy loop on one core is arithmetic that
    moves no bytes, the bound of the calibration's CPU probe (on one thread where the run
    holds its BLAS to one), so that `compare` and `check` set it against that probe."""

    name = "test_planted_arithmetic"
    description = "size µs a call of counted arithmetic, times $GPUVS_PLANTED_SLOWDOWN"

    def flops(self, size: int, params: Params) -> float:
        return 1e3 * size


@workloads.register
class LateImport(_TestWorkload):
    """Imports a module no other code imports, as seed 000's inputs import torch in a NumPy
    worker."""

    name = "test_late_import"
    description = "imports tests.late_import while preparing"

    def prepare(self, backend: Backend, case: Case) -> Prepared:
        importlib.import_module("tests.late_import")
        return Prepared(call=lambda: spin(1e-6), check=_ok)


# The kinds of case whose `preload` ran in this process (a worker's), by `mark`.
PRELOADED: set[str] = set()


@workloads.register
class Preloaded(_TestWorkload):
    """Counts whether its preload ran in the worker before its case; `mark=fail` makes
    the preload raise."""

    name = "test_preloaded"
    description = "whether the worker preloaded this kind of case before it ran"
    variants = ("as_written", "correct")

    def preload(self, backend: Backend, case: Case) -> None:
        if case.param("mark") == "fail":
            raise RuntimeError("a preload that fails")
        PRELOADED.add(case.param("mark", "plain"))

    def prepare(self, backend: Backend, case: Case) -> Prepared:
        from gpuvs.measuring.as_written import wall_once
        return Prepared(call=lambda: None, check=_ok, self_timed=wall_once(lambda: None))

    def counters(self, case: Case) -> dict[str, float]:
        return {"preloaded": float(case.param("mark", "plain") in PRELOADED)}
