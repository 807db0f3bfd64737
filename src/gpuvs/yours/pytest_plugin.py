"""The `gpuvs_bench` pytest fixture (registered through the `pytest11` entry point).

    def test_product(gpuvs_bench):
        x = torch.rand(4096, 4096, device="cuda")
        y = gpuvs_bench(torch.matmul, x, x)     # timed by the gpuvs protocol; returns fn's output

The call is timed where its data lives (CUDA events on a CUDA tensor or CuPy array, the
host clock on the CPU; `gpuvs_bench.device = "cuda:1"` overrides it), first call apart,
until the 95 % CI of the median is within ±1 % or `--gpuvs-budget` ends. As in
pytest-benchmark:

- `--gpuvs-save[=NAME]` writes every measurement to the gpuvs store (`--gpuvs-db`, else
  $GPUVS_DB, else the user data directory) as one run, so it shows in `gpuvs show`;
- `--gpuvs-compare[=RUN]` compares with a saved run: a run id, a saved NAME, or the
  latest finished pytest run when no value is given;
- `--gpuvs-fail=median:5%` fails a test whose median is more than 5 % slower than in the
  compared run (`median:0.001` allows 1 ms; min, max and mean work too); it compares
  with the latest saved run unless `--gpuvs-compare` names one;
- `--gpuvs-disable` calls each function once, untimed (for quick CI runs);
- `--gpuvs-processes N` samples each call in N worker processes, as `gpuvs run-file`
  does, instead of in the test's own (`gpuvs_bench.processes = N` for one test).

On a GPU machine a launch-bound call's speed can be set per process, in two groups
(docs/accuracy.md): an interval from the test's own process shows its group only, and
the next CI run's process may land in the other — a gate on it then fails a rerun of
unchanged code. With `--gpuvs-processes 5`, each call's figure is the median of five
processes' medians and its interval covers them. A worker imports the function by name
(defined at the top of a module, the test file included) and reads the arguments as
pickles; a call that cannot move (a lambda, a closure, keyword arguments) is timed in
the test's process, and the summary and the gate's message say its interval is one
process's.

The gate fails closed, as `gpuvs check` does: a timed call that did not end ok fails its
test (unless `--gpuvs-allow-failed`), and a session whose timed tests match none of the
saved run's fails, since nothing was compared. Tests are matched to the saved run by an
identity that does not move with pytest's root: the test file's path from the project
root (the nearest directory above it holding pyproject.toml or .git), then the test's
name and parameters. (A `--gpuvs-db ../results.sqlite` written with a space once moved
pytest's root to the parent directory, renamed every test, and let a 9× regression pass.)

This module imports only pytest at the top, so that every pytest run in an environment
with gpuvs installed stays as fast as before.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

STATS = ("median", "mean", "min", "max")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("gpuvs", "gpuvs: time code on CPUs and GPUs correctly")
    group.addoption("--gpuvs-save", metavar="NAME", nargs="?", const="", default=None,
                    help="Save the gpuvs_bench measurements to the gpuvs store as one run, "
                         "named NAME if given.")
    group.addoption("--gpuvs-compare", metavar="RUN", nargs="?", const="latest",
                    default=None,
                    help="Compare with a saved run: a run id, a saved name, or (no value) "
                         "the latest saved pytest run.")
    group.addoption("--gpuvs-fail", metavar="STAT:LIMIT", default=None,
                    help="Fail a test whose STAT (median, mean, min, max) is slower than in "
                         "the compared run by more than LIMIT: 5%% (relative) or 0.001 "
                         "(seconds). E.g. median:5%%.")
    group.addoption("--gpuvs-budget", metavar="SECONDS", type=float, default=None,
                    help="Sampling seconds per timed call (default 1, or [tool.gpuvs]'s "
                         "budget_s).")
    group.addoption("--gpuvs-db", metavar="PATH", default=None,
                    help="The gpuvs results database; default $GPUVS_DB, else the user data "
                         "directory.")
    group.addoption("--gpuvs-force", action="store_true", default=False,
                    help="Compare with a saved run even if it ran on another machine or "
                         "software set-up (its environment fingerprint differs).")
    group.addoption("--gpuvs-allow-failed", action="store_true", default=False,
                    help="Do not fail a test whose timed call did not end ok (with "
                         "--gpuvs-fail); it is still listed.")
    group.addoption("--gpuvs-disable", action="store_true", default=False,
                    help="Call each function once, untimed.")
    group.addoption("--gpuvs-processes", metavar="N", default=None,
                    help="Sample each timed call in N worker processes (each imports the "
                         "function by name) instead of the test's own, so that its "
                         "interval covers how processes differ; default 1, the test's "
                         "process.")


@dataclass(frozen=True)
class FailRule:
    stat: str
    limit: float
    relative: bool

    def __str__(self) -> str:
        return f"{self.limit:.4g}%" if self.relative else f"{self.limit:g} s"

    @classmethod
    def parse(cls, spec: str) -> FailRule:
        stat, sep, limit = spec.partition(":")
        if not sep or stat not in STATS:
            raise pytest.UsageError(f"--gpuvs-fail {spec!r}: expected STAT:LIMIT with STAT one "
                                    f"of {', '.join(STATS)}, e.g. median:5%")
        relative = limit.endswith("%")
        try:
            value = float(limit.rstrip("%"))
        except ValueError:
            value = -1.0
        if not value >= 0:
            raise pytest.UsageError(f"--gpuvs-fail {spec!r}: LIMIT must be a percentage (5%) "
                                    "or seconds (0.001)")
        return cls(stat, value, relative)

    def threshold(self, before: float) -> float:
        """The limit as a share of the baseline's statistic (gpuvs check's threshold)."""
        return self.limit / 100 if self.relative else self.limit / before


class GpuvsSession:
    """One pytest session's options, baseline run and saved run."""

    def __init__(self, config: pytest.Config) -> None:
        opt = config.getoption
        from gpuvs.config import build
        from gpuvs.errors import UsageError
        try:
            self.budget_s = build({"budget_s": opt("--gpuvs-budget")},
                                  names={"budget_s": "--gpuvs-budget",
                                         "timeout_s": "--timeout"}).budget_s
        except UsageError as e:
            raise pytest.UsageError(str(e)) from None
        self.disabled = bool(opt("--gpuvs-disable"))
        self.processes = _processes(opt("--gpuvs-processes"))
        spec = opt("--gpuvs-fail")
        self.fail = FailRule.parse(spec) if spec else None
        self.save_name: str | None = opt("--gpuvs-save")
        compare = opt("--gpuvs-compare") or ("latest" if self.fail else None)
        self.db: str | None = opt("--gpuvs-db")
        self.force = bool(opt("--gpuvs-force"))
        self.allow_failed = bool(opt("--gpuvs-allow-failed"))
        self.store: Any = None
        self.baseline_id: str | None = None
        self.baseline: dict[str, Any] = {}
        self.run: Any = None  # the run being saved (`gpuvs.store.runs.RunHandle`)
        self.results: list[tuple[str, Any]] = []
        self.side_by_side: list[tuple[str, list[Any]]] = []  # (the call, its implementations)
        self.stayed: list[tuple[str, str]] = []  # (a call, why it could not move)
        if compare or self.save_name is not None:
            self._open(compare)

    def _open(self, compare: str | None) -> None:
        from gpuvs.errors import GpuvsError
        from gpuvs.store import open_store
        try:
            self.store = open_store(self.db)
            if compare:
                self.baseline_id = _find_run(self.store, compare)
                if self.baseline_id is not None and not self.force:
                    _same_machine(self.store.get_run(self.baseline_id))
                if self.baseline_id is not None:
                    self.baseline = {m.case.key: m
                                     for m in self.store.measurements(self.baseline_id)}
            if self.save_name is not None:
                from gpuvs.model import RunKind
                from gpuvs.store.runs import start_run
                self.run = start_run(self.store, RunKind.PYTEST,
                                     {"name": self.save_name or None})
        except GpuvsError as e:
            raise pytest.UsageError(f"gpuvs: {e}") from None

    def record(self, nodeid: str, m: Any) -> str | None:
        """Save `m`; returns why the test fails against the baseline, or None."""
        from gpuvs.model import Status
        if self.run is not None:
            self.run.record(m)
        self.results.append((nodeid, m))
        if self.fail is not None and m.status is not Status.OK and not self.allow_failed:
            return (f"gpuvs: the timed call did not end ok ({m.status.value}: {m.reason}); "
                    "--gpuvs-allow-failed lets it pass")
        before = self.baseline.get(m.case.key)
        if self.fail is None or before is None or m.summary is None or before.summary is None:
            return None
        return self._judged(before, m)

    def _judged(self, before: Any, m: Any) -> str | None:
        """Why `m` fails against `before` by the gate `gpuvs check` uses (a slowdown with
        the whole CI beyond the limit, or a call it cannot judge), or None."""
        from gpuvs import units
        from gpuvs.analysis.regression import FAIL, gate, unjudged
        from gpuvs.model import Caveat
        assert self.fail is not None
        before_s = getattr(before.summary, self.fail.stat)
        threshold = self.fail.threshold(before_s)
        judged = gate([before], [m], threshold, statistic=self.fail.stat)
        if judged.verdict != FAIL:
            return None
        (c,) = judged.changes
        against = f"against run {self.baseline_id}"
        if c.verdict != "slower":
            where = ("this session" if Caveat.CONTENDED in m.caveats else
                     f"saved run {self.baseline_id}")
            again = ("measure it again on a quiet machine" if where == "this session" else
                     "save a baseline on a quiet machine (--gpuvs-save)")
            return (f"gpuvs: cannot judge {self.fail.stat} {against}: "
                    f"{unjudged(c, threshold)}" + (
                        f" in {where}: other processes took the CPU, so its "
                        f"{c.ratio:.3f}× may be theirs; {again}"
                        if c.contended else "") + _one_process(before, m))
        return (f"gpuvs: {self.fail.stat} regressed {100 * (c.b / before_s - 1):+.1f}% "
                f"({units.seconds(before_s)} → {units.seconds(c.b)}; the ratio's 95 % CI "
                f"[{c.low:.3f}, {c.high:.3f}] lies wholly above the limit) {against}; "
                f"--gpuvs-fail={self.fail.stat}:{self.fail} allows {self.fail}"
                + _one_process(before, m))

    def unmatched(self) -> str | None:
        """Why the session fails when the gate compared nothing: tests were timed and a
        saved run was found, yet no timed test matches one of its cases."""
        if self.fail is None or not self.baseline or not self.results:
            return None
        if any(m.case.key in self.baseline for _, m in self.results):
            return None
        return (f"gpuvs: no timed test matches a case of saved run {self.baseline_id} "
                f"({len(self.baseline)} case(s), e.g. {next(iter(self.baseline))}; this "
                f"session timed e.g. {self.results[0][1].case.key}): nothing was compared, "
                "so the gate fails — save a baseline of these tests (--gpuvs-save)")

    def finish(self) -> None:
        if self.store is None:
            return
        if self.run is not None:
            self.run.finish()
        self.store.close()
        self.store = None


def _processes(given: str | None) -> int:
    """--gpuvs-processes: a whole number from 1 up (gpuvs's pass limit), default 1."""
    from gpuvs.errors import UsageError
    from gpuvs.yours.workers import check_processes
    try:
        return check_processes(1 if given is None else int(given))
    except (UsageError, ValueError):
        from gpuvs.config import MAX_PASSES
        raise pytest.UsageError(f"--gpuvs-processes must be a whole number from 1 to "
                                f"{MAX_PASSES}; got {given!r}") from None


def _one_process(before: Any, m: Any) -> str:
    """'; this session … sampled it in one process, …' where either side was: a new
    process may land outside such an interval, so a verdict on it is read so."""
    sides = [side for side, x in (("this session", m), ("the saved run", before))
             if len(x.passes) <= 1]
    if not sides:
        return ""
    return (f"; {' and '.join(sides)} sampled it in one process, whose interval a new "
            "process may land outside (--gpuvs-processes N samples it in N)")


def _same_machine(baseline: Any) -> None:
    """A baseline from another machine or software set-up measures that set-up: refuse
    it, as `gpuvs check` does, naming what changed, unless --gpuvs-force."""
    from gpuvs.errors import UsageError
    from gpuvs.machine import env
    changed = env.setup_changes(baseline.environment.facts, env.collect().facts)
    if changed:
        raise UsageError(f"saved run {baseline.run_id} ran on another set-up "
                         f"({'; '.join(changed)}); its numbers are that set-up's — save a "
                         "baseline here, or pass --gpuvs-force")


def _find_run(store: Any, wanted: str) -> str | None:
    """A saved pytest run by id or name; 'latest': the newest finished one (or None)."""
    from gpuvs.errors import UsageError
    from gpuvs.model import RunKind
    saved = [r for r in store.runs(500)
             if r.kind is RunKind.PYTEST and r.status == "finished"]
    if wanted == "latest":
        return saved[0].run_id if saved else None
    for r in saved:
        if wanted in (r.run_id, r.config.get("name")):
            return str(r.run_id)
    names = ", ".join(dict.fromkeys(r.config.get("name") or r.run_id for r in saved[:5]))
    raise UsageError(f"no saved pytest run {wanted!r}; "
                     + (f"recent: {names}" if names else "none saved yet (--gpuvs-save)"))


_SESSION = pytest.StashKey[GpuvsSession]()


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_SESSION] = GpuvsSession(config)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """A gate that compared nothing fails the session (the terminal summary says why)."""
    gpuvs = session.config.stash.get(_SESSION, None)
    if gpuvs is not None and gpuvs.unmatched() and exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_unconfigure(config: pytest.Config) -> None:
    session = config.stash.get(_SESSION, None)
    if session is not None:
        session.finish()


class Bench:
    """What the `gpuvs_bench` fixture gives a test: call it like the function it times, or
    with several implementations of it by name, `gpuvs_bench({"loop": f, "vectorised":
    g}, x)`: each is timed where the data lives and its output checked against the first's
    (a disagreement fails the test), the fastest is said in the summary, and the first's
    output is returned."""

    def __init__(self, session: GpuvsSession, nodeid: str) -> None:
        self._session, self._nodeid = session, nodeid  # nodeid: the stable test identity
        self.budget_s = session.budget_s
        self.device: str | None = None   # None: where the arguments live
        self.processes = session.processes  # 1: the test's own process
        self.measurements: list[Any] = []
        self._calls = 0

    def __call__(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        from collections.abc import Mapping
        if isinstance(fn, Mapping):
            return self._side_by_side(fn, args, kwargs)
        if self._session.disabled:
            return fn(*args, **kwargs)
        from gpuvs.yours.bench import measure_call
        name = self._case_name()
        moved = self._in_processes(fn, args, kwargs, [name])
        if moved is not None:
            (m,), output = moved, fn(*args, **kwargs)  # the test's output, untimed
        else:
            m, output = measure_call(fn, args, kwargs, name, self.device, self.budget_s)
        self.measurements.append(m)
        failure = self._session.record(self._nodeid, m)
        if failure is not None:
            pytest.fail(failure, pytrace=False)
        return output

    def _side_by_side(self, fns: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        from gpuvs.yours.bench import Agreed, measure_call
        from gpuvs.yours.compare import implementations
        names = [i.name for i in implementations(fns)]  # named by strings, each callable
        if self._session.disabled:
            return [fns[n](*args, **kwargs) for n in names][0]
        base, first = self._case_name(), Agreed(names[0])
        moved = self._in_processes({n: fns[n] for n in names}, args, kwargs,
                                   [f"{base}::{name}" for name in names])
        if moved is not None:  # checked against the first there; its output made here
            measured, first.output = moved, fns[names[0]](*args, **kwargs)
        else:
            measured = []
            for name in names:
                m, output = measure_call(fns[name], args, kwargs, f"{base}::{name}",
                                         self.device, self.budget_s,
                                         check=first.checker(name))
                first.output = output if name == names[0] else first.output
                measured.append(m)
        failures = [self._session.record(self._nodeid, m)
                    or (f"gpuvs: {m.reason}" if m.status.value == "wrong_result" else None)
                    for m in measured]
        self.measurements += measured
        self._session.side_by_side.append((base.removeprefix("pytest:"), measured))
        failure = next((f for f in failures if f is not None), None)
        if failure is not None:
            pytest.fail(failure, pytrace=False)
        return first.output

    def _in_processes(self, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
                      names: list[str]) -> list[Any] | None:
        """The call's measurements (one per implementation, named `names`) from
        `self.processes` worker processes; None where it is timed here instead (one
        process asked for, or the call cannot move: the session notes why)."""
        from gpuvs.yours.bench import measure_in_processes
        if self.processes <= 1:
            return None
        measured = measure_in_processes(fn, args, kwargs, names, self.device,
                                        self.budget_s, self.processes)
        if isinstance(measured, str):
            call = names[0] if len(names) == 1 else names[0].rpartition("::")[0]
            self._session.stayed.append((call.removeprefix("pytest:"), measured))
            return None
        return measured

    @property
    def measurement(self) -> Any:
        """The last measurement (a `gpuvs.Measurement`)."""
        return self.measurements[-1] if self.measurements else None

    def _case_name(self) -> str:
        self._calls += 1
        return f"pytest:{self._nodeid}" + (f"#{self._calls}" if self._calls > 1 else "")


@pytest.fixture
def gpuvs_bench(request: pytest.FixtureRequest) -> Bench:
    """Time a function by the gpuvs protocol: `gpuvs_bench(fn, *args, **kwargs)`."""
    return Bench(request.config.stash[_SESSION], stable_test_id(request.node))


PROJECT_MARKERS = ("pyproject.toml", ".git")


def stable_test_id(item: pytest.Item) -> str:
    """'tests/test_x.py::TestY::test_z[p]': the test file's path from its project root —
    the nearest directory above it holding pyproject.toml or .git, else pytest's root —
    then the name and parameters. A node id is relative to pytest's root, which moves
    with the command line (a path argument in a parent directory moves it there)."""
    from pathlib import Path

    path = Path(item.path).resolve()
    root = next((d for d in path.parents if any((d / m).exists() for m in PROJECT_MARKERS)),
                Path(item.config.rootpath).resolve())
    name = item.nodeid.partition("::")[2]
    where = path.relative_to(root).as_posix() if path.is_relative_to(root) else str(path)
    return f"{where}::{name}" if name else where


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    session = config.stash.get(_SESSION, None)
    if session is None or not session.results:
        return
    from gpuvs.model import Caveat
    from gpuvs.report import implementations
    tr = terminalreporter
    tr.write_sep("-", "gpuvs")
    for line in [*(_summary_line(session, m) for _, m in session.results),
                 *_where_sampled(session)]:
        tr.write_line(line)
    for call, ms in session.side_by_side:
        for line in implementations.lines(ms, label=_implementation):
            tr.write_line(f"{call}: {line}")
    if session.baseline_id is None and (config.getoption("--gpuvs-compare") or session.fail):
        tr.write_line("no saved pytest run to compare with yet; save one with --gpuvs-save")
    contended = [m for _, m in session.results if Caveat.CONTENDED in m.caveats]
    if contended:
        tr.write_line(f"{len(contended)} timed call(s) measured under contention: other "
                      "processes took the CPU, so their times may hold others' work"
                      + ("; the gate cannot judge them" if session.fail else ""))
    failed = [m for _, m in session.results if m.status.value != "ok"]
    for m in failed:
        tr.write_line(f"not ok: {m.case.workload.removeprefix('pytest:')}: {m.status.value}: "
                      f"{m.reason}" + (" (allowed: --gpuvs-allow-failed)"
                                      if session.allow_failed else ""))
    unmatched = session.unmatched()
    if unmatched:
        tr.write_line(f"FAILED {unmatched}", red=True)
    if session.run is not None:
        tr.write_line(f"saved as run {session.run.run_id} in {session.store.path}; "
                      f"`gpuvs show {session.run.run_id}` prints it")


def _where_sampled(session: GpuvsSession) -> list[str]:
    """Where the intervals come from. A call timed in the test's own process has that
    process's interval, and a new process may land outside it (a gate on it is read so)."""
    if session.processes <= 1:
        return ["each interval is one process's (the test's own); --gpuvs-processes N "
                "samples each call in N worker processes"]
    stayed = (f"; {len(session.stayed)} call(s) timed in the test's own process instead, "
              "their intervals that one process's:" if session.stayed else "")
    return [f"intervals over the {session.processes} worker processes that sampled each "
            f"call, around the median of their medians{stayed}",
            *(f"  {call}: {why}" for call, why in session.stayed)]


def _implementation(case: Any) -> str:
    """'vectorised cpu': an implementation of a side-by-side call, and where it ran."""
    return f"{case.workload.rpartition('::')[2]} {case.device}"


def _summary_line(session: GpuvsSession, m: Any) -> str:
    """One timed call: its time, first call and device; against the saved run, the
    change, and whether either run measured it under contention or its code changed."""
    from gpuvs import units
    from gpuvs.model import Caveat
    s = m.summary
    cells = [units.seconds_ci(s.median, s.ci_halfwidth_rel) if s else m.status.value,
             f"first call {units.seconds(m.first_call_s)}", m.case.device]
    if Caveat.CONTENDED in m.caveats:
        cells.append("contended")
    before = session.baseline.get(m.case.key)
    if s is not None and before is not None and before.summary is not None:
        cells.append(f"{100 * (s.median / before.summary.median - 1):+.1f}% vs "
                     f"{session.baseline_id}"
                     + (" (contended there)" if Caveat.CONTENDED in before.caveats else "")
                     + (" (code changed)" if before.workload_version != m.workload_version
                        else ""))
    return f"{m.case.workload.removeprefix('pytest:')}  " + "  ".join(cells)
