"""What every workload knows: its axes, its cost model, and how to prepare a case.

A workload builds its inputs on the host (NumPy, seeded), moves them with the backend,
and hands back a `Prepared`: the call to time and a check against a float64 NumPy
reference. Where the data lives is an axis of its own: `resident` cases time the work
on data already on the device; `end_to_end` cases (`data=end_to_end`, GPU devices only)
include the host→device copies of the inputs and the device→host copy of the output,
which a user starting from CPU data must pay.
"""

from __future__ import annotations

import hashlib
import inspect
import math
import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace
from typing import Any, ClassVar, TypeVar

import numpy as np

from gpuvs.backends.base import Backend
from gpuvs.errors import WrongResult
from gpuvs.measuring.protocol import Prepared
from gpuvs.model import Case, Params

T = TypeVar("T")

ITEMSIZE = {"float16": 2, "bfloat16": 2, "float32": 4, "float64": 8}

# ‖out − ref‖ / ‖ref‖ allowed per dtype. float32 admits TF32 matrix units (about 3e-4,
# which JAX uses by default on GPUs); half precisions admit their 8- and 11-bit mantissas.
TOLERANCE = {"float64": 1e-10, "float32": 2e-3, "float16": 2e-2, "bfloat16": 4e-2}


def random_inputs(shape: tuple[int, ...], dtype: str, seed: int, low: float = 0.0
                  ) -> np.ndarray:
    """Uniform [low, low + 1) data in the case's host dtype, drawn without a float64 detour
    where the dtype allows (10^9 elements: 4 GB, not 8 GB and a cast). Past one chunk, each
    chunk has its own generator spawned from `seed`, filled on all cores (NumPy's
    multithreaded-generation recipe): 10^9 float64 draws take seconds on one."""
    draw: Any = np.float64 if dtype == "float64" else np.float32
    n = math.prod(shape)
    a: np.ndarray
    if n <= CHECK_CHUNK:
        a = np.random.default_rng(seed).random(shape, dtype=draw)
    else:
        a = np.empty(shape, dtype=draw)
        flat = a.reshape(-1)
        rngs = [np.random.default_rng(s)
                for s in np.random.SeedSequence(seed).spawn(-(-n // CHECK_CHUNK))]
        in_chunks(lambda i, j: rngs[i // CHECK_CHUNK].random(out=flat[i:j], dtype=draw), n)
    if low:
        a += low
    return a.astype(host_dtype(dtype), copy=False)


def host_dtype(dtype: str) -> str:
    """The NumPy dtype that holds `dtype` on the host (NumPy has no bfloat16)."""
    return "float32" if dtype == "bfloat16" else dtype


def as_device_sees(a: np.ndarray, dtype: str) -> np.ndarray:
    """The float64 values a device holds after casting `a` to `dtype`."""
    if dtype == "bfloat16":  # round to nearest even on the top 16 bits of float32
        u: np.ndarray = a.astype(np.float32).view(np.uint32).astype(np.uint64)
        u = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16
        return u.astype(np.uint32).view(np.float32).astype(np.float64)
    return a.astype(dtype, copy=False).astype(np.float64)


# Compare in chunks: a float64 copy of a 10^9-element output, and its difference from
# the reference, would each cost 8 GB and seconds of memory traffic.
CHECK_CHUNK = 1 << 22


def in_chunks(fn: Callable[[int, int], T], n: int) -> list[T]:
    """`fn(start, stop)` over CHECK_CHUNK-sized pieces of range(n), results in order; on a
    thread pool past one piece, since NumPy releases the GIL in its loops."""
    bounds = [(i, min(i + CHECK_CHUNK, n)) for i in range(0, n, CHECK_CHUNK)]
    if len(bounds) <= 1:
        return [fn(i, j) for i, j in bounds]
    with ThreadPoolExecutor(max_workers=min(len(bounds), os.cpu_count() or 1)) as pool:
        return list(pool.map(lambda b: fn(*b), bounds))


def relative_error(out: np.ndarray, ref: np.ndarray) -> float:
    """‖out − ref‖ / ‖ref‖ in float64; WrongResult on a shape mismatch or non-finite output."""
    out = np.asarray(out)
    if out.shape != ref.shape:
        raise WrongResult(f"output shape {out.shape} differs from the reference {ref.shape}")
    flat_out, flat_ref = out.reshape(-1), ref.reshape(-1)

    def sums(i: int, j: int) -> tuple[bool, float, float]:
        o = flat_out[i:j].astype(np.float64)
        r = flat_ref[i:j]
        d = o - r
        return bool(np.all(np.isfinite(o))), float(np.dot(d, d)), float(np.dot(r, r))

    parts = in_chunks(sums, flat_ref.size)
    if not all(finite for finite, _, _ in parts):
        raise WrongResult("output holds NaN or infinity where the reference is finite")
    err2, ref2 = sum(p[1] for p in parts), sum(p[2] for p in parts)
    return float(np.sqrt(err2) / (np.sqrt(ref2) if ref2 > 0 else 1.0))


def reference_check(ref: np.ndarray, dtype: str, to_numpy: Callable[[Any], np.ndarray]
                    ) -> Callable[[object], None]:
    """A check that raises WrongResult when the output is off by more than TOLERANCE."""

    def check(out: object) -> None:
        err = relative_error(to_numpy(out), ref)
        if err > TOLERANCE[dtype]:
            raise WrongResult(
                f"relative error {err:.2e} against the float64 reference exceeds the "
                f"{dtype} tolerance {TOLERANCE[dtype]:.0e}"
            )

    return check


@dataclass(frozen=True)
class SizeAxis:
    """What a workload's `size` counts, for a person: a plot's axis label with its unit,
    and how a sentence names one size (`phrase.format("256")` → "n = 256")."""

    label: str = "size"
    phrase: str = "size {}"


def with_others(name: str, params: Params, known: Sequence[str]) -> str:
    """`name`, then the parameters it does not already say, as `key=value`: two sweeps
    that differ only by a parameter never share a title."""
    rest = " ".join(f"{k}={v}" for k, v in params if k not in known)
    return f"{name} ({rest})" if rest else name


# The methods that do not change what a workload measures: those that name its sweeps
# and sizes for a person, the imports a worker makes ahead of its cases, and the copies
# an end-to-end call makes, as `gpuvs predict` counts them.
UNMEASURED = ("title", "size_axis", "preload", "copies")


class Workload(ABC):
    """One kind of work, swept over sizes and run on every backend the same way."""

    name: ClassVar[str]
    description: ClassVar[str]
    variants: ClassVar[tuple[str, ...]] = ("correct",)
    dtypes: ClassVar[tuple[str, ...]] = ("float32",)
    # Whether the work runs on matrix units, where float32 may silently become TF32.
    matrix_units: ClassVar[bool] = False
    # Whether `gpuvs run` without --workload runs it (ceiling probes and tests do not).
    in_default_suite: ClassVar[bool] = True
    # Whose tables cite counted kernels (a post's launches): profiled whatever the call's
    # length. Others are profiled only when short, where launches can decide the time.
    counts_kernels: ClassVar[bool] = False
    # Seconds each process samples a case of this workload, whatever the run's budget
    # (None: the run's). The calibration's probes sample the same short time in every run,
    # so that two runs' calibrations compare and a run pays a few seconds for its own.
    sampling_s: ClassVar[float | None] = None

    def param_sets(self) -> tuple[Params, ...]:
        """The non-size axes of this workload, one tuple of (name, value) pairs each."""
        return ((),)

    def has_parts(self, case: Case) -> bool:
        """Whether `prepare` gives this case parts to time alone (`Prepared.parts`): the
        worker times them after its last timed case, without preparing every case again
        to find out."""
        return False

    def applies(self, case: Case) -> bool:
        """Whether this cell of the sweep exists at all: a post's `as_written` replay only
        for what the post ran, a `tuned` variant only where a backend has the fix."""
        return True

    def data_modes(self, params: Params) -> tuple[str, ...]:
        """Where the data lives on GPU devices: resident, and end_to_end with copies."""
        return ("resident", "end_to_end")

    @abstractmethod
    def default_sizes(self, params: Params) -> tuple[int, ...]: ...

    def first_answer_sizes(self, params: Params) -> tuple[int, ...]:
        """The sizes `gpuvs run` measures at these params when nothing is named: the
        first-answer suite, sized to answer in about a minute on a 2-core CPU. () leaves
        the params (or the whole workload) to `gpuvs run --all`."""
        return ()

    def title(self, params: Params) -> str | None:
        """The sweep of `params` named for a slide ("Square matrix product"); the report
        adds the dtype and any variant but `correct`. None: the report names the sweep by
        its workload and parameters."""
        return None

    def size_axis(self, params: Params) -> SizeAxis:
        """What `size` counts in the sweep of `params` ("elements", "batch size")."""
        return SizeAxis()

    def flops(self, size: int, params: Params) -> float | None:
        return None

    def bytes_moved(self, size: int, params: Params, dtype: str) -> float | None:
        """Fewest bytes one call must move through device memory (each input read once,
        each output written once); the basis of achieved bandwidth."""
        return None

    @abstractmethod
    def memory_needed(self, size: int, params: Params, dtype: str) -> int:
        """Device bytes one case holds at its peak (inputs, outputs, workspace)."""

    def host_memory_needed(self, size: int, params: Params, dtype: str) -> int:
        """Host bytes for inputs, the float64 reference and the output brought back."""
        return 3 * self.memory_needed(size, params, "float64")

    @abstractmethod
    def prepare(self, backend: Backend, case: Case) -> Prepared: ...

    def preload(self, backend: Backend, case: Case) -> None:
        """Import what preparing `case` imports beyond its backend's framework (Keras,
        torch's compiler, torch's generator in a NumPy worker), in a worker started ahead
        of its cases. Workers start in parallel before anything is measured, so an import
        here is off the run's path; at the case it cost seconds, once in each pass's fresh
        process. Nothing by default; whatever fails here fails again at the case."""
        return None

    @property
    def version(self) -> str:
        """Hash of this workload's source: results of changed workloads never mix. What
        measures nothing (UNMEASURED: a title, an import made ahead) is left out: a stored
        baseline must still match (`gpuvs check`)."""
        cls = type(self)
        source = inspect.getsource(cls)
        for name in UNMEASURED:
            if name in vars(cls):
                source = source.replace("\n" + inspect.getsource(vars(cls)[name]), "")
        return hashlib.sha256(source.encode()).hexdigest()[:12]

    def launches(self, params: Params) -> int:
        """Ops (kernels, on a GPU) one call launches: the unit of its dispatch floor."""
        return 1

    def op_family(self, case: Case) -> str:
        """Which of `model.OP_FAMILIES` the ops a call launches are ("" for elementwise
        ones): the host cost `gpuvs predict` prices each launch at."""
        return ""

    def copies(self, size: int, params: Params, dtype: str
               ) -> tuple[tuple[float, ...], tuple[float, ...]]:
        """The arrays an end-to-end call copies: the bytes of each one copied to the
        device, and of each one brought back. `gpuvs predict` prices them with a
        machine's host↔device rates; () and () where the workload has no end-to-end
        cases (`data_modes`)."""
        return (), ()

    def counters(self, case: Case) -> dict[str, float]:
        c: dict[str, float] = {"launches": float(self.launches(case.params))}
        if (f := self.flops(case.size, case.params)) is not None:
            c["flops"] = f
        if (b := self.bytes_moved(case.size, case.params, case.dtype)) is not None:
            c["bytes_moved"] = b
        if case.param("data") == "end_to_end":
            copied_in, copied_out = self.copies(case.size, case.params, case.dtype)
            if copied_in or copied_out:
                c["copied_bytes"] = float(sum(copied_in) + sum(copied_out))
        return c


# False while a later pass prepares a case: its output was checked in the first pass,
# on the same seeded inputs, so `place` builds no float64 reference again (a 4096³
# product's costs 0.3 s on 16 cores; a 10⁹-element op's, seconds).
_REFERENCES: ContextVar[bool] = ContextVar("references", default=True)


def reference_wanted() -> bool:
    """Whether the case being prepared needs its reference built (`references`)."""
    return _REFERENCES.get()


@contextmanager
def references(wanted: bool) -> Iterator[None]:
    """Inside, `place` builds the reference and checks against it only if `wanted`."""
    token = _REFERENCES.set(wanted)
    try:
        yield
    finally:
        _REFERENCES.reset(token)


def prepared_case(workload: Workload, backend: Backend, case: Case,
                  checked: bool = True) -> Prepared:
    """A case ready to time: fresh inputs (in-place work such as `x *= 5` changes them),
    its float64 reference unless the case was `checked` already (a later pass, an
    observation), and for a cold case a cache flush before every call."""
    with references(checked):
        prepared = workload.prepare(backend, case)
    if case.param("cache") == "cold":
        prepared = replace(prepared, flush=backend.cache_flusher(case.device),
                           single_call=True)
    return prepared


@contextmanager
def threads_limited(backend: Backend, case: Case) -> Iterator[None]:
    """The CPU threads a case asks for (`threads=N`), held while it runs; `all` holds none."""
    threads = case.param("threads", "all")
    if not threads.isdigit():
        yield
        return
    with backend.limit_threads(int(threads)):
        yield


def place(backend: Backend, case: Case, host_inputs: Sequence[np.ndarray],
          op: Callable[..., Any], reference: Callable[[], np.ndarray]) -> Prepared:
    """Prepare `op(*inputs)` resident on the device, or end-to-end with the copies timed.
    `reference` builds the float64 answer, now, unless a later pass needs none."""
    device, dtype = case.device, case.dtype
    to_numpy = np.asarray if case.param("data") == "end_to_end" else backend.to_numpy
    check = (reference_check(reference(), dtype, to_numpy) if _REFERENCES.get()
             else _checked_before)
    if case.param("data") == "end_to_end":

        def end_to_end() -> np.ndarray:
            return backend.to_numpy(op(*(backend.from_numpy(a, device, dtype)
                                         for a in host_inputs)))

        return Prepared(call=end_to_end, check=check)
    arrays = [backend.from_numpy(a, device, dtype) for a in host_inputs]

    def resident() -> Any:
        return op(*arrays)

    return Prepared(call=resident, check=check)


def _checked_before(out: object) -> None:
    """A later pass's check: the first pass checked the same call on the same inputs."""
