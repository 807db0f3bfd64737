"""Your own code on the CPU and the GPU: what `gpuvs.compare(fn, *args)` runs (the public
function is in `gpuvs.api`; this module is not named `compare` so that it never shadows it).

For each size (one, unless `batch=` or `sizes=` sweeps) and each device in turn:

1. copy the arguments to the device (`gpuvs.yours.moving`; the caller's are never modified);
2. time `fn` on them there — **resident**: the data already on the device;
3. on a GPU, time it again **end-to-end**: host data copied in, the call, the output
   brought back, every call — what a program starting from CPU data pays;
4. the first device that runs (normally the CPU) gives the reference output, and every
   other device's first output must agree with it within its dtype's tolerance, else the
   case is `wrong_result` and says where the outputs differ.

A device that cannot run here is recorded `unavailable` with the reason; a function that
raises on the reference device is a `UsageError` (there is nothing to compare), and one
that raises only on another device is recorded `crashed` on that device. Either names
the line of the user's code that raised (`raised_at`).
"""

from __future__ import annotations

import hashlib
import inspect
import sysconfig
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from gpuvs import backends
from gpuvs.analysis.speedup import END_TO_END, RESIDENT, data_of
from gpuvs.config import KEYWORDS, build, check_devices, check_tolerance
from gpuvs.errors import BackendUnavailable, UsageError, WrongResult, first_line, one_line
from gpuvs.execute import policy
from gpuvs.execute.take import take
from gpuvs.execute.wire import Sampling
from gpuvs.measuring.protocol import Prepared
from gpuvs.model import YOURS_PREFIX, Case, Measurement, Status
from gpuvs.yours import moving
from gpuvs.yours.agreement import agreement
from gpuvs.yours.comparison import Comparison

DEFAULT_SIZES = (10, 100, 1_000, 10_000)

Inputs = tuple[tuple[Any, ...], dict[str, Any]]
Functions = Callable[..., object] | Mapping[str, Callable[..., object]]


@dataclass(frozen=True)
class Implementation:
    """One function compared: its name (its workload is `yours:NAME`), the call (a module
    made an argument, `prefix`, so that its parameters move with the data) and its
    version, the hash of its source."""

    name: str
    fn: Callable[..., object]
    prefix: tuple[Any, ...]
    version: str

    @property
    def workload(self) -> str:
        return YOURS_PREFIX + self.name

    def placed(self, inputs: Inputs) -> Inputs:
        """The arguments this implementation is called with: its module first."""
        a, kw = inputs
        return (*self.prefix, *a), kw


@dataclass
class _Settings:
    implementations: tuple[Implementation, ...]
    budget_s: float
    tolerance: float | None
    criterion: str
    on_result: Callable[[Measurement], None] | None = None
    on_start: Callable[[Case], None] | None = None
    on_plan: Callable[[list[Case]], None] | None = None
    on_again: Callable[[], None] = lambda: None


def run(fn: Functions, args: tuple[Any, ...], kwargs: Mapping[str, Any], *,
        devices: Sequence[str] = ("cpu", "cuda"), batch: Callable[[int], Any] | None = None,
        sizes: Sequence[int] | str | None = None, budget_s: float | None = None,
        tolerance: float | None = None, name: str | None = None, criterion: str | None = None,
        on_result: Callable[[Measurement], None] | None = None,
        on_start: Callable[[Case], None] | None = None,
        on_plan: Callable[[list[Case]], None] | None = None,
        on_again: Callable[[], None] = lambda: None,
        done: Sequence[Measurement] = (), show_progress: bool = False,
        end_to_end: bool = True) -> Comparison:
    """`gpuvs.compare` with its arguments spelt out (the magic and the CLI call this, so
    that a user's keyword arguments can never collide with compare's own).

    `fn` is one function, or several by name (`{"loop": f, "vectorised": g}`): each is
    timed on each device, and every output must agree with the first function's on the
    first device. `on_plan(cases)` hears of a size's cases once its inputs are built,
    `on_start(case)` of each case before its inputs go to the device and it runs,
    `on_result(m)` of each measurement: run-file's worker tells its parent so which case
    is in flight when it dies, and what the cases of a size are called; `on_again()` that
    a contended case is being measured again (its parent's clock starts again). `done`
    are the cases an earlier worker finished or died in: they are neither run nor reported
    again, but are part of the result. `show_progress` shows a sweep's progress on stderr
    (`gpuvs.compare`). `end_to_end=False` times a GPU's call with its data resident only
    (the pytest fixture's question: this call, where its data lives)."""
    devices = check_devices(devices)
    config = build({"budget_s": budget_s, "criterion": criterion, "devices": devices},
                   names=KEYWORDS)
    check_tolerance(tolerance, "tolerance")
    settings = _Settings(implementations(fn, name), config.budget_s, tolerance,
                         config.criterion, on_result, on_start, on_plan, on_again)
    plan = plan_of(args, dict(kwargs), batch, sizes)
    earlier = _Earlier(devices, tuple(i.workload for i in settings.implementations),
                       {unit(m.case): m for m in done}, end_to_end)
    with _progress_shown(settings, plan, earlier, show_progress):
        measurements = _sweep(settings, plan, earlier)
    by_workload = {i.workload: i for i in settings.implementations}
    return Comparison(", ".join(i.name for i in settings.implementations), tuple(measurements),
                      devices, fresh_call=lambda case: _resident_call(
                          by_workload[case.workload], plan.inputs(case.size), case.device),
                      implementations=tuple(i.name for i in settings.implementations))


def implementations(fn: Functions, name: str | None = None) -> tuple[Implementation, ...]:
    """One function (named `name`, else as written), or several by name, in their order:
    the first is the reference every other output must agree with."""
    if not isinstance(fn, Mapping):
        return (_implementation(name or function_name(fn), fn),)
    if name is not None:
        raise UsageError("name= names one function; several are named by their keys: "
                         "compare({'loop': f, 'vectorised': g}, x)")
    if not fn:
        raise UsageError("compare needs a function to call; got an empty mapping")
    bad = [k for k in fn if not isinstance(k, str) or not k.strip()]
    if bad:
        raise UsageError(f"implementations are named by non-empty strings; got {bad[0]!r}")
    return tuple(_implementation(k, f) for k, f in fn.items())


def _implementation(name: str, fn: Callable[..., object]) -> Implementation:
    if not callable(fn):
        raise UsageError(f"compare needs a function to call; got {type(fn).__name__} {fn!r}")
    call, prefix = _unbound(fn)
    return Implementation(name, call, prefix, source_hash(fn))


def _sweep(s: _Settings, plan: Plan, earlier: _Earlier) -> list[Measurement]:
    measurements: list[Measurement] = []
    oom = policy.OutOfMemorySeries()  # an implementation's series on a device stops growing
    for size in plan.sizes:
        found = earlier.all_at(size)  # all done already: its inputs need not be built
        if found is None:
            found = _at_size(s, plan.inputs(size), size, earlier, oom)
        for m in found:
            oom.note((m.case.workload, m.case.device), m)
        measurements += found
    return measurements


@contextmanager
def _progress_shown(s: _Settings, plan: Plan, earlier: _Earlier, show: bool
                    ) -> Iterator[None]:
    """A sweep called from Python shows its progress on stderr as the commands do (a bar
    with the time left in a terminal or a notebook, a line per case elsewhere); one size
    is quick and shows none."""
    if not show or len(plan.sizes) < 2:
        yield
        return
    from gpuvs.report.progress import progress
    told = s.on_result  # the run's own settings: the caller's hook still hears each case
    cases = len(plan.sizes) * len(s.implementations) * sum(
        len(placements(d, earlier.end_to_end)) for d in earlier.devices)
    with progress(cases, stderr=True) as advance:
        def both(m: Measurement) -> None:
            advance(m)
            if told is not None:
                told(m)

        s.on_result = both
        yield


def _at_size(s: _Settings, inputs: Inputs, size: int, earlier: _Earlier,
             oom: policy.OutOfMemorySeries) -> list[Measurement]:
    planned = [(i, _cases(i, i.placed(inputs), size, d, earlier.end_to_end))
               for i in s.implementations for d in earlier.devices]
    if s.on_plan is not None:
        s.on_plan([c for _, cases in planned for c in cases])
    reference = _Reference(s.tolerance, named=len(s.implementations) > 1)
    out: list[Measurement] = []
    for impl, cases in planned:  # every implementation on every device before the next size
        key = (impl.workload, cases[0].device)
        stopped = [m for c in cases if (m := oom.stopped(key, c)) is not None]
        if stopped:
            out += [earlier.get(m.case) or _reported(s, m) for m in stopped]
        else:
            out += _on_device(s, impl, impl.placed(inputs), cases, reference, earlier)
    return out


Unit = tuple[str, int, str, str]


def unit(case: Case) -> Unit:
    """A case's place in a comparison: its implementation, size, device, and data resident
    or end-to-end."""
    return case.workload, case.size, case.device, data_of(case)


def placements(device: str, end_to_end: bool = True) -> tuple[str, ...]:
    """A GPU's cases time the call resident and end-to-end (unless `end_to_end` is
    False); the CPU's, once."""
    return (RESIDENT,) if device == "cpu" or not end_to_end else (RESIDENT, END_TO_END)


@dataclass(frozen=True)
class _Earlier:
    """The cases an earlier worker finished or died in, by implementation, size, device
    and data: run-file starts a fresh worker after a crash, which carries on from there."""

    devices: tuple[str, ...]
    workloads: tuple[str, ...]
    found: Mapping[Unit, Measurement]
    end_to_end: bool = True  # a GPU's cases end-to-end too

    def get(self, case: Case) -> Measurement | None:
        return self.found.get(unit(case))

    def all_at(self, size: int) -> list[Measurement] | None:
        """Every case of `size`, when every one is done."""
        units = [(w, size, d, data) for w, d in self._order()
                 for data in placements(d, self.end_to_end)]
        return [self.found[u] for u in units] if all(u in self.found for u in units) else None

    def wanted_after(self, size: int, workload: str, device: str) -> bool:
        """Whether an implementation or a device after (`workload`, `device`) has a case
        still to run at `size`, which this one's output is the reference for."""
        order = self._order()
        later = order[order.index((workload, device)) + 1:]
        return any((w, size, d, data) not in self.found
                   for w, d in later for data in placements(d, self.end_to_end))

    def _order(self) -> list[tuple[str, str]]:
        return [(w, d) for w in self.workloads for d in self.devices]


def _unbound(fn: Callable[..., object]) -> tuple[Callable[..., object], tuple[Any, ...]]:
    """A module (or a module's bound method) becomes an argument, so that its parameters
    move with the data: `compare(model, x)` runs `model(x)` with both on each device."""
    if moving.is_module(fn):
        return _call_module, (fn,)
    owner = getattr(fn, "__self__", None)
    if moving.is_module(owner):
        method = fn.__name__

        def call_method(module: Any, *a: Any, **kw: Any) -> object:
            return getattr(module, method)(*a, **kw)

        return call_method, (owner,)
    return fn, ()


def _call_module(module: Any, *args: Any, **kwargs: Any) -> object:
    return module(*args, **kwargs)


def function_name(fn: Callable[..., object]) -> str:
    if moving.is_module(fn):
        return type(fn).__name__
    name = (getattr(fn, "__name__", None) if inspect.isbuiltin(fn) else None) or \
        getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None)
    # A function defined inside another is named as written: `step`, not `main.<locals>.step`.
    return str(name or type(fn).__name__).rpartition("<locals>.")[2].replace("<lambda>",
                                                                             "lambda")


def source_hash(fn: Callable[..., object]) -> str:
    """The function's source, hashed (asv's benchmark version): changed code never mixes."""
    try:
        text = inspect.getsource(fn)
    except (OSError, TypeError):
        text = function_name(fn)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


@dataclass
class Plan:
    sizes: tuple[int, ...]
    inputs: Callable[[int], Inputs]


def plan_of(args: tuple[Any, ...], kwargs: dict[str, Any], batch: Callable[[int], Any] | None,
            sizes: Sequence[int] | str | None) -> Plan:
    """The sizes to run, and the arguments at each."""
    chosen = _sizes(sizes)
    if batch is not None:
        if args:
            raise UsageError("pass the arguments or batch=, not both: batch(size) returns "
                             "the arguments for each size")
        if not callable(batch):
            raise UsageError(f"batch= must be a function size -> arguments; got {batch!r}")
        return Plan(chosen or DEFAULT_SIZES, lambda n: (_built(batch, n), kwargs))
    if chosen:
        if not any(getattr(x, "ndim", 0) >= 1 for x in moving.leaves((args, kwargs))):
            raise UsageError("sizes= without batch= resizes the first axis of the tensor "
                             "and array arguments, and there are none; pass batch=lambda "
                             "size: (...) to build the arguments for each size")
        return Plan(chosen, lambda n: (moving.resized(args, n), moving.resized(kwargs, n)))
    n = moving.batch_size((args, kwargs))
    return Plan((n,), lambda _: (args, kwargs))


def _sizes(sizes: Sequence[int] | str | None) -> tuple[int, ...]:
    if sizes is None:
        return ()
    if isinstance(sizes, str):
        from gpuvs.config import parse_sizes
        return parse_sizes([sizes])
    bad = [s for s in sizes if not (isinstance(s, int) and s >= 1)]
    if bad or not sizes:
        raise UsageError(f"sizes must be positive integers or a range such as '1e2:1e5'; "
                         f"got {list(sizes)!r}")
    return tuple(sorted(set(sizes)))


def _built(batch: Callable[[int], Any], n: int) -> tuple[Any, ...]:
    try:
        built = batch(n)
    except Exception as e:
        raise UsageError(f"batch({n}) raised {type(e).__name__}{raised_at(e)}: {e}") from e
    return built if isinstance(built, tuple) else (built,)


@dataclass
class _Reference:
    """The first output seen at one size — the first implementation's on the first device
    that ran — which every other implementation's and device's must agree with. With
    several implementations, each output is named by its implementation as well."""

    tolerance: float | None
    named: bool = False
    source: Case | None = None  # the case whose output is the reference
    output: object = None
    errors: dict[str, float] = field(default_factory=dict)

    def checker(self, case: Case) -> Callable[[object], None]:
        def check(out: object) -> None:
            if self.source is None:
                self.source, self.output = case, moving.snapshot(out)
                return
            if (self.source.workload, self.source.device) == (case.workload, case.device):
                return  # its own end-to-end twin: the same call, the same device
            found = agreement(out, self.output, self._label(case), self._label(self.source),
                              self.tolerance)
            self.errors[case.key] = found.error
            if found.reason is not None:
                raise WrongResult(found.reason)

        return check

    def _label(self, case: Case) -> str:
        """'cuda', or with several implementations 'cuda (vectorised)'."""
        name = case.workload.removeprefix(YOURS_PREFIX)
        return f"{case.device} ({name})" if self.named else case.device


def _cases(impl: Implementation, inputs: Inputs, size: int, device: str, end_to_end: bool
           ) -> list[Case]:
    backend = moving.backend_for(inputs, device)
    dtype = moving.floating_dtype(inputs)
    return [Case(impl.workload, "correct", backend, device, dtype, size,
                 () if data == RESIDENT else (("data", data),))
            for data in placements(device, end_to_end)]


def skipped_end_to_end(resident: Measurement) -> Measurement:
    """The end-to-end twin of a GPU's resident case that did not finish: not measured."""
    return Measurement(replace(resident.case, params=(("data", END_TO_END),)), Status.SKIPPED,
                       f"not measured: the resident case is {resident.status}")


def _on_device(s: _Settings, impl: Implementation, inputs: Inputs, cases: list[Case],
               reference: _Reference, earlier: _Earlier) -> list[Measurement]:
    a, kw = inputs
    name, device, size = cases[0].backend, cases[0].device, cases[0].size
    known = [m for c in cases if (m := earlier.get(c)) is not None]
    if len(known) == len(cases):  # an earlier worker's: a device's cases come all or none
        if (reference.source is None and known[0].status is Status.OK
                and earlier.wanted_after(size, impl.workload, device)):
            _remake_reference(impl, inputs, cases[0], reference)
        return known
    reason = unavailable_reason(name, device, (a, kw))
    if reason is not None:
        return [_reported(s, Measurement(c, Status.UNAVAILABLE, reason)) for c in cases]
    backend = backends.get(name)
    _started(s, cases[0])
    placed, keep = _placed(a, kw, device, name, backend)
    if isinstance(placed, str):
        return [_reported(s, Measurement(c, Status.OOM, placed)) for c in cases]
    pa, pkw = placed
    counters = {"threads": float(t)} if device == "cpu" and (t := backend.threads()) else {}
    resident = _reported(s, _measure(s, impl, lambda: impl.fn(*pa, **pkw), cases[0], backend,
                                     reference, counters))
    if len(cases) == 1:
        return [resident]
    if resident.status is not Status.OK:
        return [resident, _reported(s, skipped_end_to_end(resident))]
    host_a, host_kw = moving.call_to_device(a, kw, "cpu", numpy_to_cupy=False,
                                            modules=lambda m: m)

    def end_to_end() -> object:
        ha, hkw = moving.call_to_device(host_a, host_kw, device,
                                        numpy_to_cupy=name == "cupy", modules=keep)
        return moving.to_host(impl.fn(*ha, **hkw))

    _started(s, cases[1])
    return [resident, _reported(s, _measure(s, impl, end_to_end, cases[1], backend, reference,
                                            counters, moving.copied_bytes((host_a, host_kw))))]


def _remake_reference(impl: Implementation, inputs: Inputs, case: Case,
                      reference: _Reference) -> None:
    """The reference output again, from one untimed call, when an earlier worker timed
    `case` and a later implementation or device at its size is still to run: its output
    is checked against it."""
    a, kw = inputs
    placed, _ = _placed(a, kw, case.device, case.backend, backends.get(case.backend))
    if isinstance(placed, str):
        return  # out of memory now: the next case that runs gives the reference
    pa, pkw = placed
    try:
        reference.checker(case)(impl.fn(*pa, **pkw))
    except Exception as e:
        raise UsageError(_raised(impl, case, e)) from e


def _started(s: _Settings, case: Case) -> None:
    if s.on_start is not None:
        s.on_start(case)


def _reported(s: _Settings, m: Measurement) -> Measurement:
    if s.on_result is not None:
        s.on_result(m)
    return m


def unavailable_reason(backend: str, device: str, data: object) -> str | None:
    """Why these arguments cannot run on `device` here, or None."""
    if device != "cpu" and not moving.leaves(data):
        return "nothing to move: the arguments hold no tensor, module or array"
    reason = backends.get(backend).unavailable_reason(device)
    if reason is not None and backend == "cupy":
        return f"NumPy arguments run on {device} through CuPy; {reason}"
    return reason


def _placed(a: tuple[Any, ...], kw: dict[str, Any], device: str, name: str,
            backend: Any) -> tuple[Inputs | str, Callable[[Any], Any]]:
    """The arguments on `device` (or why not: out of memory), and the module placer."""
    modules: dict[int, Any] = {}

    def place(m: Any) -> Any:
        if id(m) not in modules:
            import copy

            modules[id(m)] = copy.deepcopy(m).to(device)
        return modules[id(m)]

    try:
        placed = moving.call_to_device(a, kw, device, numpy_to_cupy=name == "cupy",
                                       modules=place)
    except UsageError:
        raise
    except Exception as e:
        if policy.out_of_memory(backend, e):
            backend.empty_cache(device)
            return f"out of memory copying the arguments to {device}: {first_line(e)}", place
        raise UsageError(f"cannot move the arguments to {device}: {one_line(e)}") from e
    return placed, place


def _measure(s: _Settings, impl: Implementation, call: Callable[[], object], case: Case,
             backend: Any, reference: _Reference, counters: dict[str, float],
             copied_in: float | None = None) -> Measurement:
    """`call` taken as `case`. An end-to-end call copies `copied_in` bytes in; with the
    output's, counted when it is checked (outside the timed calls), they are its
    "copied_bytes", by which `analysis.calibration` tells a latency-sized copy from a
    bandwidth-sized one."""
    checker = reference.checker(case)
    copied_out: list[float] = []

    def check(out: object) -> None:
        copied_out[:] = [moving.copied_bytes(out)]
        checker(out)

    prepared = Prepared(call=call, check=check)
    first = reference.source is None
    try:
        m = take(case, lambda: prepared, Sampling(s.budget_s, s.criterion),
                 backend=backend, threads=counters.get("threads"), again=s.on_again,
                 raising=True).measurement
    except Exception as e:
        what = _raised(impl, case, e)
        failed, _ = policy.failure(backend, case, e, crashed=what)
        if first and failed.status is Status.CRASHED:
            raise UsageError(what) from e
        return failed
    extra = dict(counters)
    if copied_in is not None:
        extra["copied_bytes"] = copied_in + sum(copied_out)
    if case.key in reference.errors:
        extra["rel_error"] = reference.errors[case.key]
    return replace(m, counters={**m.counters, **extra}, workload_version=impl.version)


def _raised(impl: Implementation, case: Case, e: BaseException) -> str:
    return (f"{impl.name} raised {type(e).__name__} on {case.device}{raised_at(e)}: "
            f"{first_line(e)}")


def _resident_call(impl: Implementation, inputs: Inputs, device: str
                   ) -> Callable[[], object]:
    """A fresh resident call of `impl` at one size on `device` (for profiling it again)."""
    a, kw = impl.placed(inputs)
    name = moving.backend_for((a, kw), device)
    reason = unavailable_reason(name, device, (a, kw))
    if reason is not None:
        raise BackendUnavailable(reason)
    pa, pkw = moving.call_to_device(a, kw, device, numpy_to_cupy=name == "cupy")
    return lambda: impl.fn(*pa, **pkw)


# Where code that is not the user's lives: gpuvs itself and the standard library (and,
# by the name of their folders, installed packages: torch, NumPy).
_NOT_YOURS = (Path(__file__).resolve().parents[1],
              *{Path(sysconfig.get_paths()[k]).resolve() for k in ("stdlib", "platstdlib")})


def raised_at(e: BaseException) -> str:
    """' at mlp.py:12': the innermost frame of `e`'s traceback in the user's own code,
    or '' when it has none. The frames inside torch or NumPy say what failed; this says
    which line of the user's asked for it, which is the line to fix."""
    for frame in reversed(traceback.extract_tb(e.__traceback__)):
        if _yours(frame.filename):
            return f" at {_shown(frame.filename)}:{frame.lineno}"
    return ""


def _yours(filename: str) -> bool:
    if filename.startswith("<"):  # a notebook cell or the magic's code, not a frozen module
        return not filename.startswith("<frozen")
    path = Path(filename).resolve()
    return not ({"site-packages", "dist-packages"} & set(path.parts)
                or any(path.is_relative_to(d) for d in _NOT_YOURS))


def _shown(filename: str) -> str:
    """The path relative to the working directory when it is below it, else as it is."""
    try:
        return str(Path(filename).resolve().relative_to(Path.cwd()))
    except (ValueError, OSError):  # elsewhere, or no working directory any more
        return filename



