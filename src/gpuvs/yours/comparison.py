"""What `gpuvs.compare` returns: the measurements, and the answers derived from them.

A `Comparison` is data: the raw `Measurement`s (one per implementation × size × device ×
resident or end-to-end), the devices asked for, the implementations' names (one, unless
several functions were compared by name; the first is the reference), and a fresh call of
a case (run-file's worker profiles it once every case is timed).
Everything else is derived, by the modules that own it: `speedup` (GPU over the fastest
CPU case of the same implementation, with the 95 % interval a repeat's lands in),
`crossovers` and `winners` (which implementation on which device is fastest) by
`gpuvs.analysis`, `explain()` by `gpuvs.analysis.explain`, and `table()`, `plot()` and the
`repr` a notebook shows by `gpuvs.report`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, replace
from functools import cached_property
from typing import Any

from gpuvs.analysis import speedup as speedups_of
from gpuvs.analysis.crossover import Crossover, crossovers
from gpuvs.analysis.implementations import Winner, winners
from gpuvs.analysis.speedup import Speedup
from gpuvs.model import YOURS_PREFIX, Case, Measurement, Run, RunKind, Status


class Comparison:
    """The result of `gpuvs.compare`: measurements per implementation, size, device and
    data placement.

    With several implementations, each is set against its own CPU case (as its table
    does): `speedup`, `speedup_end_to_end`, `crossover` and `crossovers` are then the
    first's, the reference's; `r["vectorised"]` is another's comparison alone, and
    `winners` says which one, on which device, is fastest at each size."""

    def __init__(self, name: str, measurements: Sequence[Measurement], devices: Sequence[str],
                 fresh_call: Callable[[Case], Callable[[], object]] | None = None,
                 implementations: Sequence[str] = ()) -> None:
        self.name = name
        self.measurements = tuple(measurements)
        self.devices = tuple(devices)
        self.fresh_call = fresh_call
        self.implementations = tuple(implementations) or (name,)

    def __getitem__(self, name: str) -> Comparison:
        """One implementation's comparison alone (its devices, its sizes)."""
        if name not in self.implementations:
            raise KeyError(f"no implementation {name!r}; this comparison holds "
                           f"{', '.join(self.implementations)}")
        return Comparison(name, [m for m in self.measurements
                                 if m.case.workload == YOURS_PREFIX + name],
                          self.devices, self.fresh_call)

    @property
    def winners(self) -> list[Winner]:
        """At each size, the fastest implementation × device (its data where it runs), its
        margin over the next with a 95 % CI, and whether their intervals are apart."""
        return winners(self.measurements)

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
        """Every finished GPU case against the fastest CPU case of its implementation and
        size (the first implementation's first)."""
        return [s for name in self.implementations for s in speedups_of.speedups(
            [m for m in self.measurements if m.case.workload == YOURS_PREFIX + name])]

    def _last(self, data: str) -> Speedup | None:
        mine = self[self.implementations[0]].speedups() if len(self.implementations) > 1 \
            else self.speedups()
        found = [s for s in mine if s.data == data]
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
        return crossovers(self[self.implementations[0]].measurements
                          if len(self.implementations) > 1 else self.measurements)

    @property
    def crossover(self) -> int | None:
        """The smallest size from which the resident GPU is faster (CI above 1×)."""
        from gpuvs.report.yours import resident_crossover
        return resident_crossover(self.crossovers)

    def table(self, width: int = 120) -> Any:
        """The full tables (`gpuvs run`'s): cases, then crossovers for sweeps."""
        from gpuvs.report.console import Rendered
        from gpuvs.report.layout import result_tables
        return Rendered(result_tables(self.measurements), width)

    def plot(self, ax: Any = None) -> Any:
        """A matplotlib Figure drawn as the report's plots are: time per call against
        size, one line per device and data placement, 95 % CIs shaded (a sweep); or a
        point per case with its CI (a single size). On `ax` when given."""
        from gpuvs.report.yours import figure
        return figure(self.name, self.measurements, ax)

    def explain(self) -> Any:
        """What bounds each GPU case (launch, transfer…) and why, from measured numbers:
        the dispatch costs are measured in worker processes now (a few seconds); your
        process is never profiled, so kernels are not counted (`gpuvs run-file` counts
        them in its worker)."""
        from gpuvs.yours.explaining import explained_apart
        return explained_apart(self.measurements)

    def to_dict(self) -> dict[str, Any]:
        """The one run format (`store.export.run_document`: what `gpuvs report --from`,
        `gpuvs compare` and `gpuvs plot --from` read), with what the comparison derived
        beside it: its speedups and crossovers, each naming its implementation, and with
        several implementations, the winner at each size."""
        from gpuvs.report.implementations import winner_record
        from gpuvs.store.export import run_document
        several = len(self.implementations) > 1
        return run_document(self.run, self.measurements) | {
            "speedups": [asdict(s) | {"verdict": s.verdict, "implementation": name}
                         for name in self.implementations for s in self[name].speedups()],
            "crossovers": [_crossover_dict(c) for c in crossovers(self.measurements)],
        } | ({"winners": [winner_record(w) for w in self.winners]} if several else {})

    def to_json(self, indent: int | None = None) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    @cached_property
    def run(self) -> Run:
        """This comparison as a run (its environment read once, when first asked)."""
        from gpuvs._version import __version__
        from gpuvs.store.runs import new_run
        several = len(self.implementations) > 1
        record = new_run(RunKind.YOURS, {
            "function": self.name, "devices": list(self.devices),
            "sizes": list(self.sizes), "gpuvs": __version__} | (
                {"implementations": list(self.implementations)} if several else {}))
        return replace(record, status="finished", finished_at=record.started_at)

    def save(self, db: str | None = None, **config: Any) -> str:
        """Write the measurements to the results store as one run; returns its id, for
        `gpuvs show RUN_ID`. `config` adds to what the run records (run-file's target).
        Each save is a run of its own."""
        from gpuvs.store import open_store
        from gpuvs.store.runs import start_run
        with open_store(db) as store:
            run = start_run(store, RunKind.YOURS, {**self.run.config, **config},
                            environment=self.run.environment)
            for m in self.measurements:
                run.record(m)
            run.finish()
            return run.run_id

    def __repr__(self) -> str:
        from gpuvs.report.yours import summary
        return summary(self.name, self.measurements)

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(repr(self))

    def _repr_html_(self) -> str:
        """A notebook shows the title, then the tables (cases, then crossovers)."""
        from html import escape

        from gpuvs.report.layout import result_tables
        from gpuvs.report.markdown import to_html
        title = repr(self).splitlines()[0]
        return f"<p><b>{escape(title)}</b></p>\n" + to_html(result_tables(self.measurements))

    def rows(self) -> list[dict[str, Any]]:
        """One flat row per case (the CSV export's columns): for a DataFrame, a sheet."""
        from gpuvs.store.export import case_row
        return [case_row(m) for m in self.measurements]

    def to_pandas(self) -> Any:
        """The cases as a pandas DataFrame, one row each (`rows()`); pandas is not a
        dependency of gpuvs, so it must be installed."""
        try:
            import pandas
        except ImportError:
            raise ImportError("Comparison.to_pandas() needs pandas: pip install pandas; "
                              "Comparison.rows() gives the same rows as dicts") from None
        return pandas.DataFrame(self.rows())


def _crossover_dict(c: Crossover) -> dict[str, Any]:
    return {"implementation": c.gpu.workload.removeprefix(YOURS_PREFIX),
            "device": c.gpu.device, "backend": c.gpu.backend, "data": c.data,
            "size": c.size, "tie_band": c.tie_band, "modelled_size": c.modelled_size,
            "extrapolated": c.extrapolated, "asymptotic_speedup": c.asymptotic_speedup,
            "points": [{"size": p.size, "estimate": p.estimate, "low": p.low, "high": p.high}
                       for p in c.points]}
