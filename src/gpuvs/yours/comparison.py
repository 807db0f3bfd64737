"""What `gpuvs.compare` returns: the measurements, and the answers derived from them.

A `Comparison` holds the raw `Measurement`s (one per size × device × resident or
end-to-end) and derives the rest: `speedup` (GPU over the fastest CPU case, a bootstrap
95 % CI), `crossovers` for sweeps, `table()`, `plot()`, `explain()` and `to_json()`.
Its `repr` is a short readable summary, so that evaluating it in a notebook says what
happened.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from gpuvs import stats, units
from gpuvs.analysis.crossover import Crossover, best_cpu_by_size, crossovers
from gpuvs.model import Case, Measurement, Status

KIND = "yours"  # the `kind` of a saved comparison's run in the store


@dataclass(frozen=True)
class Speedup:
    """How many times faster a GPU case is than the fastest CPU case of its size."""

    device: str
    data: str          # "resident" or "end_to_end"
    size: int
    estimate: float    # ratio of medians, CPU ÷ GPU
    low: float         # bootstrap 95 % CI
    high: float

    @property
    def verdict(self) -> str:
        """'gpu' when the whole CI lies above 1, 'cpu' when below, else 'tie'."""
        return "gpu" if self.low > 1 else "cpu" if self.high < 1 else "tie"

    def __float__(self) -> float:
        return self.estimate

    def __str__(self) -> str:
        words = {"gpu": "GPU faster", "cpu": "CPU faster", "tie": "a tie"}[self.verdict]
        return f"{self.estimate:.3g}× [{self.low:.3g}, {self.high:.3g}]: {words}"

    def __repr__(self) -> str:
        return f"Speedup({self}; {self.device} {self.data} vs cpu at size {self.size})"


class Rendered:
    """Tables that print as plain text, render in Rich and show in notebooks."""

    def __init__(self, tables: Sequence[Any], width: int = 120) -> None:
        self.tables, self.width = list(tables), width

    def __rich_console__(self, console: Any, options: Any) -> Any:
        from rich.text import Text

        from gpuvs.report.console import to_rich

        for table in self.tables:
            yield to_rich(table)
            for note in table.notes:
                yield Text(note)
            yield Text("")

    def __str__(self) -> str:
        import io

        from rich.console import Console

        buf = io.StringIO()
        Console(file=buf, width=self.width, color_system=None, highlight=False).print(self)
        return buf.getvalue().rstrip() + "\n"

    __repr__ = __str__


class Comparison:
    """The result of `gpuvs.compare`: measurements per size, device and data placement."""

    def __init__(self, name: str, measurements: Sequence[Measurement], devices: Sequence[str],
                 replay: Callable[[Case], Callable[[], object]] | None = None) -> None:
        self.name = name
        self.measurements = tuple(measurements)
        self.devices = tuple(devices)
        self._replay = replay

    @property
    def sizes(self) -> tuple[int, ...]:
        return tuple(sorted({m.case.size for m in self.measurements}))

    @property
    def dtype(self) -> str:
        return next((m.case.dtype for m in self.measurements if m.case.dtype), "")

    @property
    def failed(self) -> tuple[Measurement, ...]:
        """Cases that crashed or disagreed with the reference output."""
        return tuple(m for m in self.measurements
                     if m.status in (Status.WRONG_RESULT, Status.CRASHED))

    def speedups(self) -> list[Speedup]:
        """Every finished GPU case against the fastest CPU case of its size."""
        cpu = best_cpu_by_size(self.measurements)
        out = []
        for m in self.measurements:
            ref = cpu.get(m.case.size)
            if m.case.device != "cpu" and m.status is Status.OK and ref is not None:
                est, lo, hi = stats.ratio_ci(ref.samples, m.samples)
                out.append(Speedup(m.case.device, data_of(m.case), m.case.size, est, lo, hi))
        return out

    def _last(self, data: str) -> Speedup | None:
        found = [s for s in self.speedups() if s.data == data]
        return max(found, key=lambda s: s.size) if found else None

    @property
    def speedup(self) -> Speedup | None:
        """The data-resident GPU speedup at the largest size; None without a GPU result."""
        return self._last("resident")

    @property
    def speedup_end_to_end(self) -> Speedup | None:
        """The same, paying the host↔device copies on every call."""
        return self._last("end_to_end")

    @property
    def crossovers(self) -> list[Crossover]:
        return crossovers(self.measurements)

    @property
    def crossover(self) -> int | None:
        """The smallest size from which the resident GPU is faster (CI above 1×)."""
        found = [c.size for c in self.crossovers if c.data == "resident"]
        return next((s for s in found if s is not None), None)

    def table(self, width: int = 120) -> Rendered:
        """The full tables (`gpuvs run`'s): cases, then crossovers for sweeps."""
        from gpuvs.report.layout import result_tables

        return Rendered(result_tables(self.measurements), width)

    def plot(self, ax: Any = None) -> Any:
        """A matplotlib Figure: time per call against size, one line per device and data
        placement, 95 % CIs shaded (a sweep); or one bar per case (a single size)."""
        return _plot(self, ax)

    def explain(self) -> Any:
        """What bounds each GPU case (launch, transfer…) and why, from measured numbers."""
        from gpuvs.analysis.explain import explain

        return explain(self, self._replay)

    def to_dict(self) -> dict[str, Any]:
        from gpuvs import __version__

        return {
            "gpuvs": __version__, "kind": KIND, "name": self.name,
            "devices": list(self.devices), "sizes": list(self.sizes),
            "measurements": [m.to_dict() for m in self.measurements],
            "speedups": [asdict(s) | {"verdict": s.verdict} for s in self.speedups()],
            "crossovers": [_crossover_dict(c) for c in self.crossovers],
        }

    def to_json(self, indent: int | None = None) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    def save(self, db: str | None = None) -> str:
        """Write the measurements to the results store as one run; returns its id, for
        `gpuvs show RUN_ID`."""
        from gpuvs.store import open_store

        with open_store(db) as store:
            return save_run(store, self.measurements, {
                "kind": KIND, "function": self.name, "devices": list(self.devices),
                "sizes": list(self.sizes)})

    def __repr__(self) -> str:
        return _summary(self)

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(repr(self))


def data_of(case: Case) -> str:
    return case.param("data", "resident")


def _crossover_dict(c: Crossover) -> dict[str, Any]:
    return {"device": c.gpu.device, "backend": c.gpu.backend, "data": c.data,
            "size": c.size, "tie_band": c.tie_band, "modelled_size": c.modelled_size,
            "extrapolated": c.extrapolated, "asymptotic_speedup": c.asymptotic_speedup,
            "points": [asdict(p) for p in c.points]}


def save_run(store: Any, measurements: Sequence[Measurement], config: dict[str, Any]) -> str:
    """One finished run holding `measurements`; returns the run id."""
    import secrets
    import time

    from gpuvs import env
    from gpuvs.model import Run

    run_id = time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(2)
    store.create_run(Run(run_id, _now(), config, env.collect()))
    for m in measurements:
        store.save(run_id, m)
    store.finish_run(run_id, "finished", _now())
    return run_id


def _now() -> str:
    import time

    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


def seconds_ci(m: Measurement) -> str:
    """'12.3 ms ±0.4%' for a finished case."""
    s = m.summary
    if s is None:
        return "—"
    return f"{units.seconds(s.median)} ±{100 * s.ci_halfwidth_rel:.1f}%"


def _label(m: Measurement) -> str:
    return m.case.device if m.case.device == "cpu" else f"{m.case.device} {data_of(m.case)}"


def _summary(c: Comparison) -> str:
    sizes = c.sizes
    sweep = len(sizes) > 1
    where = (f"sizes {units.size(sizes[0])}–{units.size(sizes[-1])} ({len(sizes)})" if sweep
             else f"size {units.size(sizes[0])}" if sizes else "no size")
    lines = [" · ".join(filter(None, (f"gpuvs.compare: {c.name}", c.dtype, where)))]
    speedups = {(s.device, s.data, s.size): s for s in c.speedups()}
    rows: list[list[str]] = []
    problems: list[str] = []
    skipped: dict[str, str] = {}
    for m in c.measurements:
        if m.status is Status.UNAVAILABLE:
            skipped.setdefault(m.case.device, m.reason)
            continue
        head = [units.size(m.case.size)] if sweep else []
        head += [m.case.device, data_of(m.case) if m.case.device != "cpu" else ""]
        if m.status is not Status.OK:
            rows.append([*head, m.status.value, "", "", "", ""])
            problems.append(f"{_label(m)}{f' at {units.size(m.case.size)}' if sweep else ''}: "
                            f"{m.status.value}: {m.reason}")
            continue
        wall = m.wall_summary.median if m.wall_summary else None
        speed = speedups.get((m.case.device, data_of(m.case), m.case.size))
        caveats = ", ".join(str(c).replace("_", " ") for c in m.caveats)
        rows.append([*head, seconds_ci(m), f"wall {units.seconds(wall)}" if wall else "",
                     f"first call {units.seconds(m.first_call_s)}", str(speed or ""),
                     f"({caveats})" if caveats else ""])
    time_col = 2 + sweep
    lines += ["  " + line for line in _aligned(rows, {0, time_col} if sweep else {time_col})]
    lines += [f"{d}: skipped: {r}" for d, r in skipped.items()]
    lines += problems + _agreement_lines(c) + _crossover_lines(c)
    return "\n".join(lines)


def _aligned(rows: list[list[str]], right: set[int]) -> list[str]:
    """Columns padded to their widest cell; those in `right` right-aligned."""
    if not rows:
        return []
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    out = []
    for r in rows:
        cells = [cell.rjust(w) if i in right else cell.ljust(w)
                 for i, (cell, w) in enumerate(zip(r, widths, strict=True)) if w]
        out.append("  ".join(cells).rstrip())
    return out


def _agreement_lines(c: Comparison) -> list[str]:
    errors = [m.counters["rel_error"] for m in c.measurements if "rel_error" in m.counters]
    if not errors or any(m.status is Status.WRONG_RESULT for m in c.measurements):
        return []
    reference = next(m.case.device for m in c.measurements if m.status is Status.OK)
    return [f"outputs agree with {reference}'s (largest relative error {max(errors):.1e})"]


def _crossover_lines(c: Comparison) -> list[str]:
    lines = []
    for x in sorted(c.crossovers, key=lambda x: (x.gpu.device, x.data != "resident")):
        if len(x.points) < 2:
            continue
        last = x.points[-1]
        if x.size is not None:
            verdict = f"GPU faster from {units.size(x.size)}"
        else:
            verdict = ("GPU never faster in this range" if last.verdict != "gpu"
                       else "GPU faster only at the largest sizes")
        lines.append(f"{x.gpu.device} {x.data}: {verdict}; {last.estimate:.3g}× at "
                     f"{units.size(last.size)}")
    return lines


def _plot(c: Comparison, ax: Any) -> Any:
    from matplotlib.figure import Figure

    fig = ax.figure if ax is not None else Figure(figsize=(6.4, 4.0), layout="constrained")
    ax = ax if ax is not None else fig.add_subplot()
    done = [m for m in c.measurements if m.status is Status.OK and m.summary is not None]
    if len(c.sizes) > 1:
        for label in dict.fromkeys(_label(m) for m in done):
            ms = sorted((m for m in done if _label(m) == label), key=lambda m: m.case.size)
            x = [m.case.size for m in ms]
            ax.plot(x, [m.summary.median for m in ms], marker="o", label=label)  # type: ignore[union-attr]
            ax.fill_between(x, [m.summary.ci_low for m in ms],  # type: ignore[union-attr]
                            [m.summary.ci_high for m in ms], alpha=0.25)  # type: ignore[union-attr]
        ax.set(xscale="log", yscale="log", xlabel="size", ylabel="seconds per call")
        if c.crossover is not None:
            ax.axvline(c.crossover, linestyle="--", color="grey", label="GPU faster from")
        ax.legend()
    else:
        labels = [_label(m) for m in done]
        medians = [m.summary.median for m in done]  # type: ignore[union-attr]
        err = [[m.summary.median - m.summary.ci_low for m in done],  # type: ignore[union-attr]
               [m.summary.ci_high - m.summary.median for m in done]]  # type: ignore[union-attr]
        ax.barh(labels, medians, xerr=err)
        ax.set(xscale="log", xlabel="seconds per call (median, 95 % CI)")
        ax.invert_yaxis()
    ax.set_title(f"{c.name}" + (f" · {c.dtype}" if c.dtype else ""))
    return fig
