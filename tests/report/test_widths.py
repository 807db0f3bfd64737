"""No wrong number at any width: every command's tables, drawn in a terminal 60, 80, 100,
120 and 200 columns wide, show each number of each cell whole, or leave its whole column
out and say so under the table.

A number cut short reads as a result (1024 printed as `102` at 80 columns), so the check
is by count: every number a shown cell holds must appear, whole, at least as often in
what the terminal shows. The runs are real ones (tests/data/golden: a matmul sweep and
`gpuvs seeds --quick` on a 2-core CPU, collectives and DDP scaling on two H200s), plus the
synthetic GPU sweep of samples.py for the GPU columns a CPU cannot fill, a ceilings run's
probes and `gpuvs predict`'s forecast against the shipped H100 profile."""

from __future__ import annotations

import io
import json
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from functools import cache
from pathlib import Path

import pytest
from rich.console import Console
from tests.report import samples
from typer.testing import CliRunner

from gpuvs.analysis import regression
from gpuvs.cli import app
from gpuvs.model import Status
from gpuvs.predicting import forecast
from gpuvs.report import fit, views
from gpuvs.report.console import print_tables
from gpuvs.report.history import change_table, means_table
from gpuvs.report.layout import result_tables
from gpuvs.report.predicted import forecast_tables
from gpuvs.store.export import load_json, run_document
from gpuvs.store.sqlite import SqliteStore
from gpuvs.table import Table

WIDTHS = (60, 80, 100, 120, 200)
# Never left out, at any width: what the case was and how long it took.
ESSENTIAL = {"size", "backend", "device", "data", "time ±CI"}
# A number as a reader sees one: digits, a fraction, an exponent; not part of a word.
NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?:e[+-]?\d+)?(?![\w.])")
STACKED = re.compile(r"^    [^ ][^:]*: ", re.M)  # a stacked row's `column: value` line
ANSI = re.compile(r"\x1b\[[0-9;]*m")
NOT_SHOWN = re.compile(r"not shown at (\d+) columns: (.*?) \(a wider terminal shows them, "
                       r"as does piping the output, e\.g\. to `less -S`\)")


def forecast_for_h100() -> list[Table]:
    cpu = [m for m in samples.golden("cpu-matmul-sweep.json") if m.status is Status.OK]
    target = forecast.target("h100")
    predicted = forecast.predict_cases(target, samples.gpu_twins(cpu))
    found = forecast.series(cpu, [p for p in predicted if p.prediction is not None])
    return forecast_tables(found, target, [p for p in predicted if p.prediction is None])


@cache
def each_commands_tables() -> dict[str, list[Table]]:
    """The tables each command prints: its kind of run's view (what `gpuvs show` prints
    again), and `gpuvs predict`'s forecast."""
    def shown(name: str) -> list[Table]:
        """A stored run's tables as `gpuvs show` prints them: its command's, then more."""
        run, ms, ceilings = load_json(samples.GOLDEN / name)
        view = views.of(run.kind)
        return [*view.tables(run, ms, ceilings),
                *(view.more(run, ms, ceilings) if view.more else [])]

    gpu = samples.run()
    return {
        "run (a CPU sweep)": shown("cpu-matmul-sweep.json"),
        "run (a GPU sweep)": views.of(gpu.kind).tables(gpu, samples.gpu_sweep(),
                                                        list(samples.CEILINGS)),
        "seeds": shown("cpu-seeds-quick.json"),
        "dist": shown("h200x2-collectives.json") + shown("h200x2-scaling.json"),
        "ceilings": views.CEILINGS.tables(samples.run("ceilings"), samples.ceilings_probes(),
                                          []),
        "predict": forecast_for_h100(),
    }


def numbers(texts: Sequence[str]) -> Counter[str]:
    return Counter(n for text in texts for n in NUMBER.findall(text))


def drawn(table: Table, width: int) -> str:
    buffer = io.StringIO()
    print_tables([table], Console(file=buffer, width=width, force_terminal=True,
                                  color_system=None))
    return ANSI.sub("", buffer.getvalue())


def left_out(shown: str) -> tuple[list[str], str]:
    """The columns the 'not shown' line names, and the output without that line (its
    column names hold numbers of their own)."""
    flat = " ".join(shown.split())
    said = NOT_SHOWN.search(flat)
    if said is None:
        return [], flat
    return said.group(2).split(", "), flat[:said.start()] + flat[said.end():]


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("command", list(each_commands_tables()))
def test_every_number_of_every_table_is_shown_whole(command: str, width: int) -> None:
    for table in each_commands_tables()[command]:
        bare = replace(table, title="", notes=())  # the cells and headers alone
        shown = drawn(bare, width)
        assert all(len(line.rstrip()) <= width for line in shown.splitlines()), shown
        dropped, rest = left_out(shown)
        assert not ESSENTIAL & set(dropped), dropped
        kept = [i for i, name in enumerate(table.columns) if name not in dropped]
        expected = numbers([*(table.columns[i] for i in kept),
                            *(row[i] for row in table.rows for i in kept)])
        found = numbers([rest])
        short = {n: (k, found[n]) for n, k in expected.items() if found[n] < k}
        assert not short, f"{table.title!r} at {width} columns: number: (in cells, " \
                          f"shown whole) {short}\n{shown}"


def test_a_wide_terminal_shows_every_column_and_says_nothing_is_left_out() -> None:
    for tables in each_commands_tables().values():
        for table in tables:
            assert "not shown" not in drawn(table, 400)


def test_columns_are_left_out_from_the_least_missed() -> None:
    [sweep, *_] = result_tables(samples.gpu_sweep(), list(samples.CEILINGS))
    at_80 = fit.fit(sweep, 80)
    assert at_80.dropped == ("throughput", "of peak", "note")
    assert [sweep.columns[i] for i in at_80.columns] == [
        "size", "backend", "device", "threads", "data", "time ±CI", "GPU vs CPU"]


def test_a_table_whose_essential_columns_do_not_fit_is_stacked_row_by_row() -> None:
    [sweep, *_] = result_tables(samples.gpu_sweep(), list(samples.CEILINGS))
    assert fit.fit(sweep, 40).stacked
    shown = drawn(sweep, 40)
    assert "not shown" not in shown  # a stacked row shows every column
    assert "    time ±CI: 30.8 µs ±0.3%" in shown.splitlines()


def test_a_sentence_wraps_at_its_spaces_and_never_inside_a_word() -> None:
    note = "transfer-bound: 96% of the 830 µs call is host↔device copying"
    table = Table("", ("size", "note"), (("1024", note),))
    shown = drawn(table, 30)
    words = " ".join(shown.split()).split()
    assert all(w in words for w in note.split())


@pytest.fixture(scope="module")
def exports(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """A store holding the golden matmul sweep and seeds run, and two exports of the
    sweep: as measured, and with its torch cases 10 % slower."""
    root = tmp_path_factory.mktemp("widths")
    with SqliteStore(root / "r.sqlite") as store:
        for name in ("cpu-matmul-sweep.json", "cpu-seeds-quick.json"):
            run, ms, _ = load_json(samples.GOLDEN / name)
            store.create_run(run)
            for m in ms:
                store.save(run.run_id, m)
    a = samples.GOLDEN / "cpu-matmul-sweep.json"
    run, ms, _ = load_json(a)
    slower = [replace(m, samples=tuple(1.1 * x for x in m.samples))
              if m.case.backend == "torch" else m for m in ms]
    b = root / "b.json"
    b.write_text(json.dumps(run_document(replace(run, run_id="20261124-000000-bbbb"), slower)))
    return root / "r.sqlite", a, b


def in_a_terminal(args: list[str], width: int) -> str:
    terminal = {"TTY_COMPATIBLE": "1", "NO_COLOR": "1", "COLUMNS": str(width)}
    result = CliRunner().invoke(app, args, env=terminal)
    assert result.exit_code in (0, 1), result.output  # check fails the slower run
    shown = ANSI.sub("", result.output)
    # drawn for a terminal, as a grid or row by row, not as piped text
    assert "┃" in shown or STACKED.search(shown), shown
    assert all(len(line.rstrip()) <= width for line in shown.splitlines()
               if "┃" in line or "│" in line), shown
    return shown


def whole_where_shown(shown: str, tables: Sequence[Table]) -> None:
    """Every number of the tables' cells appears whole in `shown`, but for the columns a
    'not shown' line names; and none of those is a case's size, backend, device or time."""
    flat = " ".join(shown.split())
    dropped = {c for said in NOT_SHOWN.finditer(flat) for c in said.group(2).split(", ")}
    assert not ESSENTIAL & dropped
    expected = numbers([row[i] for t in tables for row in t.rows
                        for i, name in enumerate(t.columns) if name not in dropped])
    found = numbers([flat])
    assert not {n: k for n, k in expected.items() if found[n] < k}, shown


@pytest.mark.parametrize("width", WIDTHS)
def test_show_fits_a_stored_runs_tables_to_the_terminal(
        exports: tuple[Path, Path, Path], width: int) -> None:
    """`gpuvs show` itself, in a terminal of each width."""
    db, _, _ = exports
    with SqliteStore(db) as store:
        runs = [(r, store.measurements(r.run_id)) for r in store.runs()]
    for run, ms in runs:
        shown = in_a_terminal(["show", run.run_id, "--db", str(db)], width)
        view = views.of(run.kind)
        whole_where_shown(shown, [*view.tables(run, ms, []),
                                  *(view.more(run, ms, []) if view.more else [])])


@pytest.mark.parametrize("width", WIDTHS)
def test_compare_and_check_fit_their_tables_to_the_terminal(
        exports: tuple[Path, Path, Path], width: int) -> None:
    db, a, b = exports
    (a_run, a_ms, _), (b_run, b_ms, _) = load_json(a), load_json(b)
    changes, _ = regression.compare(a_ms, b_ms)
    names = (a_run.run_id, b_run.run_id)
    whole_where_shown(in_a_terminal(["compare", str(a), str(b)], width), [
        change_table(changes, regression.DEFAULT_THRESHOLD, names),
        means_table(regression.geometric_means(changes))])
    whole_where_shown(in_a_terminal(["check", "--baseline", str(a), "--run", str(b),
                                     "--db", str(db)], width),
                      [change_table(regression.gate(a_ms, b_ms).changes,
                                    regression.DEFAULT_THRESHOLD, names)])
