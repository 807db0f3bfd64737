"""A run → one self-contained HTML page: verdict, plots, tables, method, environment.

Self-contained means no request leaves the page: CSS is inline, plots are inline SVG,
and the favicon is an empty data: URL (else browsers ask the file system or server for
one). The page is a pure function of the run, its measurements and the ceilings — no
"generated at" time — so the same run renders to the same bytes, here or from its JSON
export elsewhere. Jinja2 autoescapes every value; only the SVG from Matplotlib is marked
safe.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from gpuvs import units
from gpuvs.analysis.cost import Prices
from gpuvs.analysis.crossover import group_key
from gpuvs.machine import env
from gpuvs.measuring.caveats import ADVICE
from gpuvs.model import Caveat, Ceiling, Measurement, Run, RunKind, Status
from gpuvs.report.draw import to_svg
from gpuvs.report.layout import result_tables, sweep_title
from gpuvs.report.plain import INLINE_MAX
from gpuvs.report.plots import ENERGY, ROOFLINE, Plot, all_plots
from gpuvs.report.verdict import nothing_table, series_table, verdict_table
from gpuvs.table import Table

TEMPLATE = "report.html.j2"
# The most characters of one text a page shows (`capped`): the longest sentence gpuvs
# writes, a note under a table's row, is about 400.
TEXT_MAX = 1000
# Columns of numbers: right-aligned so that digits line up, never wrapped (a figure's
# parts stack instead: see TableView). A post's figures are numbers too.
NUMERIC = frozenset({"size", "threads", "time ±CI", "wall", "GPU busy", "throughput", "of peak",
                     "GPU vs CPU", "from size", "by (95 % CI)", "per call ±CI",
                     "graph replay ±CI", "algbw", "busbw", "loops", "N", "step ±CI",
                     "samples/s", "compute", "energy/call", "above idle", "power",
                     "peak host", "peak device", "cost/1M calls", "post claims",
                     "as written here", "correct here", "written ÷ correct", "it claimed",
                     "its method here"})
# Columns of sentences: a table with one keeps to the measure of the page's text, where
# they wrap, however wide its numbers.
PROSE = frozenset({"why", "answer", "reason"})
# Columns of sentences: each on a full-width line under its row, where it wraps inside
# the page; as a column beside a dozen columns of numbers it ran out of the page. Short
# ones (a few caveats' names) stay in their column, as in the plain-text tables.
UNDER_ROW = frozenset({"note"})
PROTOCOL = (
    ("first call", "timed alone and reported apart (compilation, handles, caches), never "
                   "mixed into the samples"),
    ("check", "the output compared with a float64 NumPy reference, outside the timed "
              "region; a fast wrong answer is recorded as wrong_result"),
    ("warm-up", "untimed calls until the calls stop getting faster"),
    ("loops", "calls per sample calibrated so that one sample is long next to the timer's "
              "resolution and the launch cost"),
    ("samples", "taken until the stopping criterion is met or the budget ends; on a GPU "
                "with device events, and synchronised wall time beside them"),
)


@dataclass(frozen=True)
class TableView:
    """A layout Table as the template draws it: empty columns dropped, numbers marked (a
    number cell's parts, "13.8 GFLOP/s, 27.8 GB/s", one above the other: the column then
    takes the width of one), and the sentences of UNDER_ROW columns taken out of the row
    to go under it. A table with columns of numbers and none of PROSE is `wide`: it may
    reach past the measure of the page's text to the window's edge."""

    title: str
    columns: tuple[str, ...]
    numeric: tuple[bool, ...]
    rows: tuple[tuple[str, ...], ...]
    notes: tuple[str, ...]
    under: tuple[str, ...] = ()  # per row: the line under it ("" for none); () if none
    wide: bool = False


@dataclass(frozen=True)
class Figure:
    name: str
    svg: Any  # markupsafe.Markup: the only unescaped text on the page
    caption: str


NO_CPU = ("No speedup plot: no CPU case of this sweep finished, so its GPU series have "
          "nothing to be set against.")
ONE_SERIES = "No speedup plot: only one series finished in this sweep."


@dataclass(frozen=True)
class Sweep:
    title: str
    figures: tuple[Figure, ...]
    tables: tuple[TableView, ...]
    # A sweep of GPU against CPU draws time and speedup; one figure means a series is
    # missing. A `gpuvs dist` section draws one figure by design.
    one_figure_by_design: bool = False
    no_speedup: str = ONE_SERIES  # why, where one figure is drawn and not by design

    @property
    def anchor(self) -> str:
        """The section's id: "sweep-square-matrix-product-float32", a link's target."""
        return "sweep-" + re.sub(r"[^a-z0-9]+", "-", self.title.lower()).strip("-")


def render_html(run: Run, measurements: Iterable[Measurement],
                ceilings: Sequence[Ceiling] = ()) -> str:
    """The report page for `run`. Deterministic: same inputs, same bytes."""
    return jinja().get_template(TEMPLATE).render(_page(run, list(measurements), ceilings))


def jinja() -> Any:
    """The templates of every gpuvs page, autoescaped, strict about missing values, and
    every text they show cut at TEXT_MAX characters (`capped`)."""
    from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

    return Environment(loader=PackageLoader("gpuvs.report", "templates"),
                       autoescape=select_autoescape(("html.j2",), default=True),
                       undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                       finalize=capped)


def capped(value: Any) -> Any:
    """A text the page shows, cut at TEXT_MAX characters with the cut stated where it is
    made: names and notes come from run files and stores anyone may have written, and a
    10 KB workload name once made a 316 MB page. The SVG of a plot (Markup) is not text."""
    from markupsafe import Markup

    if not isinstance(value, str) or isinstance(value, Markup) or len(value) <= TEXT_MAX:
        return value
    return f"{value[:TEXT_MAX]}… [cut at {TEXT_MAX:,} of {len(value):,} characters]"


def _page(run: Run, ms: list[Measurement], ceilings: Sequence[Ceiling]) -> dict[str, Any]:
    """Everything the template shows, in the order it shows it. A `gpuvs dist` run has no
    CPU-against-GPU verdict, sweep plots or roofline: none is computed or drawn for it."""
    dist = run.kind is RunKind.DIST
    prices = Prices.of(run.config.get("prices"))
    plots: dict[str, list[Figure]] = {}
    for p in () if dist else all_plots(ms, ceilings):
        plots.setdefault(p.section, []).append(figure_of(p))
    return {
        "run": run,
        "kind": run.kind.value,
        "dist": dist,
        "summary": _summary(run, ms),
        "posts": _posts(run, ms),
        "verdict": None if dist else view(verdict_table(ms, prices)),
        "nothing": None if dist else view(nothing_table(ms)),
        "series": None if dist else view(series_table(ms)),
        "seeds": [view(t) for t in _seed_tables(run, ms)],
        "sweeps": _dist_sections(ms) if dist else _sweeps(ms, ceilings, plots, prices),
        "rooflines": plots.get(ROOFLINE, []),
        "energy": plots.get(ENERGY, []),
        "has_ceilings": bool(ceilings),
        "method": _method(run, ms),
        "protocol": PROTOCOL,
        "caveats": _caveats(ms),
        "problems": _problems(ms),
        "environment": [("fingerprint", run.environment.fingerprint),
                        *env.describe(run.environment)],
    }


def figure_of(p: Plot) -> Figure:
    from markupsafe import Markup

    return Figure(p.name, Markup(to_svg(p)), p.caption)


def view(table: Table) -> TableView:
    keep = [i for i, _ in enumerate(table.columns) if any(row[i] for row in table.rows)]
    under = [i for i in keep if table.columns[i] in UNDER_ROW
             and any(len(row[i]) > INLINE_MAX for row in table.rows)]
    inline = [i for i in keep if i not in under]
    columns = tuple(table.columns[i] for i in inline)
    numeric = tuple(c in NUMERIC for c in columns)
    rows = tuple(tuple(_stacked(row[i]) if n else row[i] for i, n in zip(inline, numeric,
                                                                          strict=True))
                 for row in table.rows)
    return TableView(table.title, columns, numeric, rows, table.notes,
                     tuple(" ".join(row[i] for i in under if row[i]) for row in table.rows)
                     if under else (), any(numeric) and not PROSE & set(columns))


# ", " between a number cell's parts (not inside a CI's brackets or a remark's
# parentheses), and " (" before the remark: "4.99 µs ±6.2% (unstable, drifting)".
_PARTS = re.compile(r", (?![^\[\]()]*[\])])| (?=\()")


def _stacked(cell: str) -> str:
    return _PARTS.sub("\n", cell)


def _summary(run: Run, ms: Sequence[Measurement]) -> list[tuple[str, str]]:
    counts = Counter(m.status.value for m in ms)
    order = [s.value for s in Status]
    return [("status", run.status),
            ("started", run.started_at), ("finished", run.finished_at or "—"),
            ("cases", f"{len(ms)}: " + ", ".join(f"{counts[k]} {k}" for k in order
                                                 if counts.get(k)))]


def _posts(run: Run, ms: Sequence[Measurement]) -> TableView | None:
    """A seeds run's first screen: the posts answered, one line each (the section's
    heading says what the table is)."""
    if run.kind is not RunKind.SEEDS:
        return None
    from gpuvs.report.seed_tables import seed_answers
    return view(replace(seed_answers(ms), title=""))


def _seed_tables(run: Run, ms: Sequence[Measurement]) -> list[Table]:
    if run.kind is not RunKind.SEEDS:
        return []
    from gpuvs.report.seed_tables import seed_tables
    return seed_tables(ms)


def _sweeps(ms: Sequence[Measurement], ceilings: Sequence[Ceiling],
            plots: Mapping[str, list[Figure]], prices: Prices) -> list[Sweep]:
    """Per sweep its plots, then its table of cases and its crossovers. The section's
    heading names the sweep, so neither its plots' titles nor its tables' captions do."""
    sweeps: dict[str, list[TableView]] = {}
    for table in result_tables(ms, ceilings, prices):
        sweep = table.title.removeprefix("crossover · ")
        caption = "crossover" if table.title != sweep else ""
        sweeps.setdefault(sweep, []).append(view(replace(table, title=caption)))
    gpu_only = _finished(ms, on_cpu=False) - _finished(ms, on_cpu=True)
    return [Sweep(title, tuple(plots.get(title, ())), tuple(tables),
                  no_speedup=NO_CPU if title in gpu_only else ONE_SERIES)
            for title, tables in sweeps.items()]


def _finished(ms: Sequence[Measurement], on_cpu: bool) -> set[str]:
    """The sweeps with a case finished on the CPU (or on a device other than the CPU)."""
    return {sweep_title(group_key(m.case)) for m in ms
            if m.status is Status.OK and (m.case.device == "cpu") == on_cpu}


def _dist_sections(ms: Sequence[Measurement]) -> list[Sweep]:
    """A `gpuvs dist` run: the collectives' bus bandwidth against size, then data-parallel
    scaling against N (throughput, efficiency, the step's compute and comm), each with
    its tables."""
    from markupsafe import Markup

    from gpuvs.report.dist_plots import bandwidth_svg, scaling_svg
    from gpuvs.report.dist_tables import collective_tables, scaling_tables
    sections = (
        ("Collectives: bus bandwidth against size", "dist-bandwidth", bandwidth_svg,
         collective_tables, "bus bandwidth as nccl-tests defines it, one line per collective "
                            "and rank count"),
        ("Data-parallel scaling against N", "dist-scaling", scaling_svg, scaling_tables,
         "samples/s against the ideal, efficiency with its 95 % CI, and each N's step "
         "split into compute and the communication it waits for"),
    )
    out = []
    for title, name, draw, tables, caption in sections:
        found = tables(ms)
        if not found:
            continue
        svg = draw(ms)
        figures = (Figure(name, Markup(svg), caption),) if svg else ()
        out.append(Sweep(title, figures, tuple(view(t) for t in found), True))
    return out


def _method(run: Run, ms: Sequence[Measurement]) -> list[tuple[str, str]]:
    """How the numbers were taken: budgets, criterion, warm-up, caches, threads, dtypes."""
    c = run.config
    done = [m for m in ms if m.status is Status.OK and m.summary is not None]
    threads = sorted({(m.case.backend, int(m.counters["threads"])) for m in done
                      if "threads" in m.counters})
    timers = sorted({f"{m.timer} ({m.case.device})" for m in done if m.timer})
    return [
        ("budget", f"{c['budget_s']} s of sampling per case" if "budget_s" in c else "—"),
        ("timeout", f"{c['timeout_s']} s per case" if "timeout_s" in c else "—"),
        ("criterion", str(c.get("criterion", "median-ci"))),
        ("warm-up calls", _spread(m.warmups for m in done)),
        ("loops per sample", _spread(m.loops for m in done)),
        ("samples per case", _spread(m.summary.n for m in done if m.summary)),
        ("first call", _spread_s(m.first_call_s for m in done if m.first_call_s is not None)),
        ("cache state", "flushed before every timed call (--cold)" if c.get("cold")
         else "warm (--cold flushes the caches)"),
        ("CPU threads", ", ".join(f"{b} {n}" for b, n in threads) or "—"),
        ("dtypes", ", ".join(sorted({m.case.dtype for m in done})) or "—"),
        ("timers", ", ".join(timers) or "—"),
        ("GPU clocks", _clocks(done)),
    ]


def _clocks(done: Sequence[Measurement]) -> str:
    """The SM and memory clocks NVML read after each GPU case's samples, and how many
    cases the driver slowed down."""
    sm = [m.counters["sm_clock_mhz"] for m in done if "sm_clock_mhz" in m.counters]
    if not sm:
        return "not read (no NVML on the machine, or no GPU case)"
    memory = sorted({m.counters["memory_clock_mhz"] for m in done
                     if "memory_clock_mhz" in m.counters})
    slowed = sum(Caveat.THROTTLED in m.caveats for m in done)
    return (f"SM {_spread(round(x) for x in sm)} MHz, memory "
            f"{', '.join(f'{x:.0f}' for x in memory)} MHz after the samples; "
            f"{slowed} case(s) throttled")


def _spread(values: Iterable[int]) -> str:
    v = sorted(values)
    if not v:
        return "—"
    return str(v[0]) if v[0] == v[-1] else f"{v[0]}–{v[-1]} (median {v[len(v) // 2]})"


def _spread_s(values: Iterable[float]) -> str:
    v = sorted(values)
    if not v:
        return "—"
    return f"{units.seconds(v[0])}–{units.seconds(v[-1])} (median {units.seconds(v[len(v) // 2])})"


def _caveats(ms: Sequence[Measurement]) -> list[tuple[str, int, str]]:
    """Each caveat that occurred: how many cases, and what to do about it."""
    counts = Counter(cv for m in ms for cv in m.caveats)
    return [(str(cv).replace("_", " "), counts[cv], ADVICE[cv]) for cv in Caveat if counts[cv]]


PROBLEM_COLUMNS = ("case", "status", "reason")


def _problems(ms: Sequence[Measurement]) -> TableView | None:
    """Cases that failed, and finished cases too unstable to trust: status and reason."""
    rows: list[tuple[str, ...]] = []
    unavailable: dict[tuple[str, str], str] = {}
    for m in ms:
        if m.status is Status.UNAVAILABLE:
            unavailable.setdefault((m.case.backend, m.case.device), m.reason)
        elif m.status is not Status.OK:
            rows.append((m.case.key, m.status.value, m.reason))
        elif Caveat.UNSTABLE in m.caveats and m.summary is not None:
            rows.append((m.case.key, "ok, unstable", f"IQR {m.summary.iqr / m.summary.median:.0%} "
                         f"of the median over {m.summary.n} samples"))
    rows += [(f"{backend} on {device} (every case)", Status.UNAVAILABLE.value, reason)
             for (backend, device), reason in sorted(unavailable.items())]
    if not rows:
        return None
    return view(Table("failed, unavailable and unstable cases", PROBLEM_COLUMNS, tuple(rows)))
