"""A run → one self-contained HTML page: verdict, plots, tables, method, environment.

Self-contained means no request leaves the page: CSS is inline, plots are inline SVG,
and the favicon is an empty data: URL (else browsers ask the file system or server for
one). The page is a pure function of the run, its measurements and the ceilings — no
"generated at" time — so the same run renders to the same bytes, here or from its JSON
export elsewhere. Jinja2 autoescapes every value; only the SVG from Matplotlib is marked
safe.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from gpuvs import units
from gpuvs.analysis.calibration import cases_of
from gpuvs.analysis.cost import Prices
from gpuvs.analysis.crossover import group_key
from gpuvs.machine import env
from gpuvs.measuring.caveats import ADVICE
from gpuvs.model import Caveat, Ceiling, Measurement, Run, Status
from gpuvs.report import views
from gpuvs.report.calibration import table as calibration_table
from gpuvs.report.layout import result_tables, sweep_title
from gpuvs.report.plots import ENERGY, ROOFLINE, all_plots
from gpuvs.report.sections import (
    NO_CPU,
    ONE_SERIES,
    Figure,
    Sweep,
    TableView,
    figure_of,
    view,
)
from gpuvs.report.verdict import nothing_table, series_table, verdict_table
from gpuvs.table import Table

TEMPLATE = "report.html.j2"
# The most characters of one text a page shows (`capped`): the longest sentence gpuvs
# writes, a note under a table's row, is about 400.
TEXT_MAX = 1000
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


def render_html(run: Run, measurements: Iterable[Measurement],
                ceilings: Sequence[Ceiling] = ()) -> str:
    """The report page for `run`. Deterministic: same inputs, same bytes."""
    page: str = jinja().get_template(TEMPLATE).render(_page(run, list(measurements), ceilings))
    return page


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
    """Everything the template shows, in the order it shows it, as the run's kind shows
    it (`views.of`): a kind that draws its own sections has no CPU-against-GPU verdict,
    sweep plots or roofline, and none is computed or drawn for it."""
    shown = views.of(run.kind)
    calibration = calibration_table(ms)  # first; every other part is the run's cases'
    ms = cases_of(ms)
    answers = shown.verdict
    prices = Prices.of(run.config.get("prices"))
    plots: dict[str, list[Figure]] = {}
    for p in all_plots(ms, ceilings) if answers else ():
        plots.setdefault(p.section, []).append(figure_of(p))
    first = shown.first_screen(ms)
    return {
        "run": run,
        "kind": run.kind.value,
        "calibration": view(calibration) if calibration is not None else None,
        "answers": answers,
        "summary": _summary(run, ms),
        "first": view(first) if first is not None else None,
        "first_heading": shown.first_heading,
        "verdict": view(verdict_table(ms, prices)) if answers else None,
        "nothing": view(nothing_table(ms)) if answers else None,
        "series": view(series_table(ms)) if answers else None,
        "own": [view(t) for t in shown.own_tables(ms)],
        "own_heading": shown.own_heading,
        "own_anchor": shown.own_anchor,
        "own_link": shown.own_link,
        "sweeps": (_sweeps(ms, ceilings, plots, prices) if shown.sections is None
                   else shown.sections(ms)),
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


def _summary(run: Run, ms: Sequence[Measurement]) -> list[tuple[str, str]]:
    counts = Counter(m.status.value for m in ms)
    order = [s.value for s in Status]
    return [("status", run.status),
            ("started", run.started_at), ("finished", run.finished_at or "—"),
            ("cases", f"{len(ms)}: " + ", ".join(f"{counts[k]} {k}" for k in order
                                                 if counts.get(k)))]


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
