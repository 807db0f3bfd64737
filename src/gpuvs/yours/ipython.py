"""`%load_ext gpuvs`: the `%gpuvs` line magic and `%%gpuvs` cell magic.

`%gpuvs STATEMENT` (or a `%%gpuvs` cell) times the code where its data lives, by the gpuvs
protocol: on a CUDA tensor or CuPy array, CUDA events, the device synchronised around each
batch of samples; on the CPU, the host clock. It prints a `%timeit`-style line with the
device time, the first call (timed alone, before anything else) and, on an asynchronous
device, a warning when what `%timeit` would print — host time without synchronising, the
seed-000 mistake — differs from the device time by more than NAIVE_FACTOR.

Options, as `%timeit`'s where they make sense: `-n N` loops per sample, `-r R` samples,
`-o` return the result, `-q` print nothing; and `--budget S` (sampling seconds),
`--compare cpu,cuda` (run the cell's tensors, arrays and modules on each device with
`gpuvs.compare`) and `--versions` (each line of a `%%gpuvs` cell is one version of the
same work, `loop(x)`, `vectorised(x)`: each is timed, on the `--compare` devices or where
its data lives, its output checked against the first line's, and the fastest named at
each size). As with `%%timeit`, the rest of a `%%gpuvs` line is set-up code, run once,
untimed. The code runs in a copy of the namespace: its assignments do not leak. A time
measured while other processes took the CPU says so (`contended`).

The code is timed in the notebook's own process, and the line says so ("in this
process"): on a GPU machine a launch-bound call's speed can be set per process, and a new
process may land outside that interval. `--processes N` times one call of a function a
worker can import by name, `%gpuvs --processes 5 step(x, y)`, in N worker processes
instead (`gpuvs.compare(…, processes=N)`'s path, where its data lives): the figure is the
median of their medians, the interval over them. Code that lives in the notebook — a
function defined there, a statement, a cell — cannot move, and is refused in one line
that says why.

IPython is imported only when the extension is loaded, never by `import gpuvs`.
"""

from __future__ import annotations

import ast
import itertools
import linecache
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from types import CodeType
from typing import Any

from gpuvs import units
from gpuvs.config import MAX_PASSES, build, check_devices
from gpuvs.errors import GpuvsError, UsageError
from gpuvs.execute.take import take
from gpuvs.execute.wire import Sampling
from gpuvs.measuring.protocol import Budget, Prepared
from gpuvs.model import Case, Caveat, Measurement
from gpuvs.yours import moving, workers
from gpuvs.yours.moving import clock_for
from gpuvs.yours.timer import synchronize_all

NAIVE_FACTOR = 2.0
NAIVE_REPEAT = 3
REPEAT_MARGIN = 2.0  # `-r R`'s budget holds R samples twice over (`repeat_budget_s`)
DEFAULT_BUDGET_S = 1.0
WORKLOAD = "yours:%gpuvs"
_CELLS = itertools.count(1)
TIMERS = {"cuda_events": "device time, CUDA events", "host": "host clock"}


@dataclass(frozen=True)
class Timing:
    """What `%gpuvs -o` returns: the measurement, where it ran, and the naive figure."""

    measurement: Measurement
    device: str
    naive_s: float | None = None  # what %timeit would print: host time, no synchronise

    @property
    def naive_ratio(self) -> float | None:
        s = self.measurement.summary
        return s.median / self.naive_s if s is not None and self.naive_s else None

    def lines(self) -> list[str]:
        m, s = self.measurement, self.measurement.summary
        if s is None:
            return [f"{m.status.value}: {m.reason}"]
        half = (s.ci_high - s.ci_low) / 2
        loops = f"{m.loops} loop{'s' if m.loops != 1 else ''} each"
        where = (f"over {len(m.passes)} processes" if len(m.passes) > 1 else
                 "in this process")
        out = [f"{units.seconds(s.median)} ± {units.seconds(half)} per loop (median ± 95% CI "
               f"of {s.n} samples {where}, {loops}) on {self.device} "
               f"({TIMERS.get(m.timer, m.timer)})"]
        if len(m.passes) > 1:
            out.append(f"sampled in {len(m.passes)} worker processes: the median of their "
                       f"medians, its 95 % CI over them [{units.seconds(s.ci_low)}, "
                       f"{units.seconds(s.ci_high)}]")
        wall = m.wall_summary
        out.append(f"first call {units.seconds(m.first_call_s)}" + (
            f" · synchronised wall {units.seconds(wall.median)} per loop" if wall else ""))
        if Caveat.CONTENDED in m.caveats:
            share = m.counters.get("others_cpu_share")
            out.append("contended: other processes took "
                       + (f"{share:.0%} of " if share is not None else "")
                       + "the CPU it asked for while it was timed (measured again after a "
                         "pause, they still did): the time may hold their work")
        ratio = self.naive_ratio
        if ratio is not None and not (1 / NAIVE_FACTOR <= ratio <= NAIVE_FACTOR):
            more = f"{ratio:.1f}× less" if ratio > 1 else f"{1 / ratio:.1f}× more"
            out.append(f"warning: %timeit would print {units.seconds(self.naive_s)} per loop "
                       f"here, {more} than the device time: without synchronising it times "
                       "how fast the work is queued, not the work")
        return out

    def __str__(self) -> str:
        return "\n".join(self.lines())

    __repr__ = __str__

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(str(self))


@dataclass(frozen=True)
class Options:
    loops: int | None = None
    repeat: int | None = None
    budget_s: float = DEFAULT_BUDGET_S
    compare: tuple[str, ...] = ()
    versions: bool = False
    processes: int = 1  # 1: the notebook's own process


def load_ipython_extension(ipython: Any) -> None:
    ipython.register_magics(_magics_class())


def _magics_class() -> type:
    from IPython.core.magic import Magics, line_cell_magic, magics_class

    @magics_class
    class GpuvsMagics(Magics):
        @line_cell_magic
        def gpuvs(self, line: str, cell: str | None = None) -> object:
            """Time a statement or cell where its data lives (see `gpuvs.yours.ipython`)."""
            return run_magic(self, line, cell)

    return GpuvsMagics


def run_magic(magics: Any, line: str, cell: str | None) -> object:
    from IPython.core.error import UsageError as IPythonUsageError

    opts, stmt = magics.parse_options(line, "n:r:oq", "compare=", "budget=", "versions",
                                      "processes=",
                                      posix=False, strict=False, preserve_non_opts=True)
    shell = magics.shell
    setup, code = (stmt, cell) if cell is not None else ("", stmt)
    try:
        options = parse_options(opts)
        if not code.strip():
            raise UsageError("nothing to time: %gpuvs STATEMENT, or a %%gpuvs cell")
        ns = dict(shell.user_ns)
        if setup.strip():
            exec(compile(shell.transform_cell(setup), "<gpuvs setup>", "exec"), ns)
        result: object = (
            versions_source(ns, [shell.transform_cell(v) for v in code.splitlines()
                                 if v.strip()], options) if options.versions
            else compare_source(ns, shell.transform_cell(code), options) if options.compare
            else process_source(ns, shell.transform_cell(code), options)
            if options.processes > 1 else time_source(ns, shell.transform_cell(code), options))
    except GpuvsError as e:
        raise IPythonUsageError(str(e)) from None
    if "q" not in opts:
        print(result)
    return result if "o" in opts else None


def parse_options(opts: Mapping[str, Any]) -> Options:
    def count(flag: str) -> int | None:
        if flag not in opts:
            return None
        try:
            value = int(opts[flag])
        except ValueError:
            value = 0
        if value < 1:
            raise UsageError(f"-{flag} needs a positive whole number; got {opts[flag]!r}")
        return value

    given = None
    if "budget" in opts:
        try:
            given = float(opts["budget"])
        except ValueError:
            raise UsageError(f"--budget must be a positive number of seconds; got "
                             f"{opts['budget']!r}") from None
    budget = build({"budget_s": given}).budget_s  # 0.4 s, or [tool.gpuvs]'s budget_s
    devices: tuple[str, ...] = ()
    if "compare" in opts:
        devices = check_devices(str(opts["compare"]))
    versions = "versions" in opts
    if versions and ("n" in opts or "r" in opts):
        raise UsageError("--versions times each line by gpuvs.compare's protocol: it takes "
                         "--budget and --compare, not -n or -r")
    return Options(count("n"), count("r"), budget, devices, versions, _processes(opts))


def _processes(opts: Mapping[str, Any]) -> int:
    """--processes N: a whole number, alone with --budget (1 where not given)."""
    if "processes" not in opts:
        return 1
    try:
        processes = workers.check_processes(int(opts["processes"]))
    except (UsageError, ValueError):
        raise UsageError(f"--processes must be a whole number from 1 to {MAX_PASSES}; got "
                         f"{opts['processes']!r}") from None
    others = [flag for flag, name in (("-n", "n"), ("-r", "r"), ("--compare", "compare"),
                                      ("--versions", "versions")) if name in opts]
    if processes > 1 and others:
        raise UsageError("--processes times one call in worker processes by gpuvs's "
                         f"protocol, with --budget; it does not take {', '.join(others)}")
    return processes


def compiled(source: str) -> tuple[CodeType, CodeType | None]:
    """The code, and its last line apart when that is an expression (its value is the
    output: synchronised on and compared)."""
    try:
        tree = ast.parse(source)
    except SyntaxError as e:
        raise UsageError(f"cannot time this code: {e.msg} (line {e.lineno})") from None
    # Tracebacks through the timed code show its lines, as they do for a cell.
    filename = f"<gpuvs-{next(_CELLS)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    last = None
    final = tree.body[-1] if tree.body else None
    if isinstance(final, ast.Expr):
        tree.body.pop()
        last = compile(ast.Expression(final.value), filename, "eval")
    return compile(tree, filename, "exec"), last


def names_used(code: CodeType) -> set[str]:
    """Every global and attribute name the code (and code nested in it) refers to."""
    found = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, CodeType):
            found |= names_used(const)
    return found


def _runner(ns: dict[str, Any], source: str) -> tuple[Callable[[], object], list[object]]:
    body, last = compiled(source)
    used = names_used(body) | (names_used(last) if last else set())
    data = [ns[n] for n in sorted(used) if n in ns and moving.leaves(ns[n])]

    def call() -> object:
        exec(body, ns)
        return eval(last, ns) if last is not None else None

    return call, data


def time_source(ns: dict[str, Any], source: str, options: Options) -> Timing:
    call, data = _runner(ns, source)
    synchronize_all()
    t0 = time.perf_counter()
    out = call()  # the first call, alone: compilation, handles and caches show here
    synchronize_all(out)
    first_call_s = time.perf_counter() - t0
    device = (moving.data_devices(data) or moving.data_devices(out) or ["cpu"])[0]
    backend, clock = clock_for(device, [*data, out])
    case = Case(WORKLOAD, "correct", backend, device, moving.floating_dtype(data),
                moving.batch_size(data))
    criterion = f"fixed:n={options.repeat}" if options.repeat else "median-ci"
    # -n: exactly this many loops per sample
    sampling = Sampling(repeat_budget_s(options, first_call_s), criterion, loops=options.loops)
    prepared = Prepared(call=call, check=lambda _: None)
    m = take(case, lambda: prepared, sampling, clock=clock, raising=True).measurement
    m = replace(m, first_call_s=first_call_s)
    if options.repeat:  # samples come in batches: keep exactly the -r asked for
        m = replace(m, samples=m.samples[:options.repeat],
                    wall_samples=m.wall_samples[:options.repeat])
    naive = _naive_s(call, options.loops or m.loops) if clock.is_async else None
    return Timing(m, device, naive)


def repeat_budget_s(options: Options, first_call_s: float) -> float:
    """The sampling budget: `--budget`, stretched where `-r R` asks for more samples than
    it holds. The protocol ends sampling when its budget does, so `-r 30` of a 20 ms call
    within 0.4 s gave 20 samples. A sample lasts about the protocol's target length, or
    `-n` calls, or one call where a call is longer (the first call is the estimate: it
    is no faster than the rest); twice that leaves room, and costs little: the count
    ends the sampling as soon as it is reached, and only the warm-up (a quarter of the
    budget, 50 calls at most) may run longer."""
    if options.repeat is None:
        return options.budget_s
    target = 0.0 if options.loops else Budget().target_sample_s
    sample_s = max(target, first_call_s * (options.loops or 1))
    return max(options.budget_s, REPEAT_MARGIN * options.repeat * sample_s)


def _naive_s(call: Callable[[], object], loops: int) -> float:
    """%timeit's figure: loops of calls between two host-clock readings, no synchronise."""
    from gpuvs.measuring.as_written import timeit_loops
    runs, _ = timeit_loops(call, number=loops, repeat=NAIVE_REPEAT).run()
    synchronize_all()  # drain what was queued, before anything else is timed
    return sum(runs) / len(runs)


def process_source(ns: dict[str, Any], source: str, options: Options) -> Timing:
    """`--processes N`: one call `f(x, y)` of a function a worker imports by name, its
    arguments evaluated here and pickled to N worker processes, timed there where its
    data lives (resident)."""
    fn, args = _one_call(ns, source)
    n = options.processes
    device = (moving.data_devices(args) or ["cpu"])[0]
    try:
        compared = workers.run(fn, args, {}, processes=n, devices=(device,),
                               budget_s=options.budget_s, end_to_end=False)
    except workers.CannotMove as e:
        raise UsageError(f"--processes {n} times the call in worker processes, which import "
                         f"it by name: {e.why}; leave --processes out to time it here"
                         ) from None
    (m,) = compared.measurements
    return Timing(m, device)


def _one_call(ns: dict[str, Any], source: str) -> tuple[Callable[..., object],
                                                         tuple[Any, ...]]:
    """The function and positional arguments of `source`, one call `f(x, y)`, each
    evaluated in the namespace; else a UsageError that says what --processes takes."""
    try:
        tree = ast.parse(source.strip(), mode="eval")
    except SyntaxError:
        tree = None
    call = tree.body if tree is not None else None
    if (not isinstance(call, ast.Call) or call.keywords
            or any(isinstance(a, ast.Starred) for a in call.args)):
        raise UsageError("--processes times one call of a function with positional "
                         f"arguments, f(x, y); got {source.strip()!r}")

    def value(node: ast.expr) -> Any:
        return eval(compile(ast.Expression(node), "<gpuvs --processes>", "eval"), ns)

    return value(call.func), tuple(value(a) for a in call.args)


def compare_source(ns: dict[str, Any], source: str, options: Options) -> Any:
    """`--compare`: the code's tensors, arrays and modules moved to each device in turn."""
    from gpuvs.yours.compare import run
    (cell,), movable = _cells(ns, [source], "--compare")
    return run(cell, (), movable, devices=options.compare, budget_s=options.budget_s,
               name="%gpuvs")


def versions_source(ns: dict[str, Any], sources: list[str], options: Options) -> Any:
    """`--versions`: each line one version of the same work, named by its text, compared
    side by side (`gpuvs.compare` with several functions) on the `--compare` devices, else
    where the data lives."""
    from gpuvs.yours.compare import run
    names = [" ".join(v.split()) for v in sources]
    if len(names) < 2:
        raise UsageError("--versions compares the lines of a %%gpuvs cell, one version of "
                         "the work a line (loop(x), vectorised(x)); this cell has "
                         f"{len(names)}")
    if len(set(names)) < len(names):
        raise UsageError("--versions names each version by its line; two lines are the "
                         "same")
    cells, movable = _cells(ns, sources, "--versions")
    devices = options.compare or tuple(moving.data_devices(list(movable.values()))[:1]
                                       or ["cpu"])
    return run(dict(zip(names, cells, strict=True)), (), movable, devices=devices,
               budget_s=options.budget_s)


def _cells(ns: dict[str, Any], sources: list[str], flag: str
           ) -> tuple[list[Callable[..., object]], dict[str, Any]]:
    """Each source as a function of the tensors, arrays and modules it uses from the
    namespace (passed by name, so that `gpuvs.compare` moves them to each device), and
    those values."""
    code = [compiled(source) for source in sources]
    used = set().union(*(names_used(body) | (names_used(last) if last else set())
                         for body, last in code))
    movable = {n: ns[n] for n in sorted(used) if n in ns and moving.leaves(ns[n])}
    if not movable:
        raise UsageError(f"{flag} moves the tensors, modules and arrays the code uses to "
                         "each device, and this code uses none from the namespace")
    base = {n: ns[n] for n in (*used, "__builtins__") if n in ns}

    def cell(body: CodeType, last: CodeType | None) -> Callable[..., object]:
        def run_cell(**moved: Any) -> object:
            scope = {**base, **moved}
            exec(body, scope)
            return eval(last, scope) if last is not None else None

        return run_cell

    return [cell(body, last) for body, last in code], movable
