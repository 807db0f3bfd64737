"""Whatever a user types, gpuvs ends with exit code 0 or 2, never a traceback, and a
refusal is one line. Hypothesis draws option values — empty, blank, non-finite, huge,
negative, markup, paths, ranges with odd factors — for the commands that only read or
plan (`--dry-run`): nothing is measured, so the examples run in seconds. Derandomized,
with a fixed number of examples: the same inputs in every run of the suite.

Issue 43's holes stay closed here too: every output flag drawn onto the store, SQLite's
files beside it, a directory, a FIFO or another database leaves the store readable with
its runs; a hostile device profile (0, NaN, text, null, deep nesting, too large) is one
line; a timeout past a week is one line."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.helpers import invoke

from gpuvs.model import Case, Environment, Measurement, Run, Status
from gpuvs.store import open_store

TRICKY = ["", " ", ",", ",,", ":", "::", "-", "--", "=", "0", "-1", "1e400", "-1e400", "nan",
          "inf", "-inf", "NaN", "1e-400", "0.0", "1.5", "99999999999999999999999", "1_000",
          "0x10", "1e3:1e5:inf", "1e3:1e5:nan", "1:1e6:1.001", "1:1e15:1.2", "64:4096:2",
          "10:1", "1e3:1e7", "1:2:3:4", "$", "${a}{b$", "{}", "[]", "%s", "\\", "\x00",
          "\udcff", "é", "../../x", "/dev/null", "latest", "matmul", "numpy", "cpu", "cuda",
          "cuda:99", "float16", "bfloat16", "correct", "as_written", "median-ci:rel=nan",
          "fixed:n=0", "fixed:n=1e400", "stdrel:max_noise=-1", "shape=square", "shape=",
          "=x", "7d", "99999999999d", "2026-13-45", "0001-01-01", "9999-12-31T23:59",
          "plain", "md", "json", "5%", "-5%", "1e400%", "x" * 2000, "1e10", "604801",
          "1e300"]
VALUES = st.one_of(st.sampled_from(TRICKY), st.text(max_size=12),
                   st.floats(allow_nan=True, allow_infinity=True).map(repr),
                   st.integers(min_value=-(10**30), max_value=10**30).map(str))
# command → its fixed arguments and the options drawn for it.
COMMANDS: dict[str, tuple[list[str], list[str]]] = {
    "run": (["run", "--dry-run"], ["-w", "--variant", "-b", "-d", "--dtype", "-s", "--budget",
                                   "--timeout", "--criterion", "--passes", "-a", "--format"]),
    "predict": (["predict", "--from-run", "r1"], ["--target", "--profile", "-b", "-s",
                                                  "--format"]),
    "sweep": (["sweep", "matmul", "--dry-run", "--refine"],
              ["-s", "-b", "-d", "--factor", "--budget", "--criterion", "--passes"]),
    "seeds": (["seeds", "--dry-run"], ["--seed", "-d", "--budget", "--timeout", "--epochs"]),
    "runs": (["runs"], ["--since", "--limit", "--machine", "--gpu", "-w", "--format"]),
    "show": (["show"], ["--format"]),
    "export": (["export", "-o", "-"], ["-f"]),
    "compare": (["compare"], ["--threshold", "--format"]),
}
POSITIONAL = {"show": 1, "export": 1, "compare": 2}  # run ids (or JSON paths) they take


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A store with one run of two cases, as the read-only commands' subject."""
    path = str(tmp_path_factory.mktemp("fuzz") / "r.sqlite")
    with open_store(path) as store:
        store.create_run(Run("r1", "2026-01-01T00:00:00+0000", {"budget_s": 1.0},
                             Environment("fp", {"cpu_model": "test"})))
        for size in (64, 128):
            store.save("r1", Measurement(Case("matmul", "correct", "numpy", "cpu", "float32",
                                              size, (("shape", "square"),)), Status.OK,
                                         samples=(1e-3, 1.1e-3, 0.9e-3)))
    return path


def _arguments(data: st.DataObject, command: str) -> list[str]:
    fixed, options = COMMANDS[command]
    args = list(fixed)
    for _ in range(POSITIONAL.get(command, 0)):
        args.append(data.draw(st.one_of(st.sampled_from(["r1", "latest", "nope"]), VALUES)))
    for flag in data.draw(st.lists(st.sampled_from(options), max_size=3, unique=True)):
        args += [flag, data.draw(VALUES)]
    return args


def _exits_0_or_2_in_one_line(args: Sequence[str], db: str) -> None:
    result = invoke(*args, "--db", db)
    shown = f"gpuvs {' '.join(map(repr, args))}:\n{result.output}"
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        shown, result.exception)
    assert result.exit_code in (0, 2), shown
    assert "Traceback" not in result.output, shown
    if result.exit_code == 2:
        assert len(result.output.strip().splitlines()) == 1, shown


FUZZ = settings(max_examples=45, derandomize=True, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.function_scoped_fixture])


@FUZZ
@given(data=st.data())
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_any_option_value_exits_0_or_2_without_a_traceback(command: str, data: st.DataObject,
                                                           db: str) -> None:
    _exits_0_or_2_in_one_line(_arguments(data, command), db)


@FUZZ
@given(path=st.one_of(st.sampled_from(["", " ", "-", "/", "/dev/null", "/proc/self/mem",
                                       "\udcff.sqlite", "x" * 5000, "nonexistent/x.sqlite",
                                       "sqlite://", "sqlite:///", "mysql://h/db",
                                       "postgresql://u@h:abc/db", "postgresql://u@h:0/db",
                                       "postgresql://u:p@[::1/db", "~0", "~nouser/x"]),
                      st.text(max_size=20).filter(lambda t: "://" not in t)))
def test_any_database_location_exits_0_or_2_without_a_traceback(path: str, tmp_path: Path,
                                                                 db: str) -> None:
    """--db as typed (PostgreSQL URLs only where they fail before a connection)."""
    result = invoke("runs", "--db", path)
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        path, result.output, result.exception)
    assert result.exit_code in (0, 2) and "Traceback" not in result.output, result.output
    if result.exit_code == 2:
        assert len(result.output.strip().splitlines()) == 1, result.output


# --- outputs never over data, hostile profiles (issue 43) -------------------------------

# Where an output may be pointed: the store and SQLite's files beside it, a directory, a
# FIFO, another database, a user's file, a special file, or a plain new file.
OUTPUT_PLACES = ["{db}", "{db}-wal", "{db}-shm", "{db}-journal", "{dir}", "{dir}/fifo",
                 "{dir}/other.sqlite", "{dir}/notes.txt", "/dev/null", "/proc/self/mem",
                 "{dir}/new.json", "{dir}/new.html", "{dir}/sub/new.csv", "{db}/x.json",
                 "", " ", "\x00", "x" * 5000]
WRITERS = [["export", "r1", "-o"], ["export", "r1", "-f", "csv", "-o"],
           ["report", "r1", "-o"], ["compare", "r1", "r1", "--report"],
           ["predict", "--from-run", "r1", "--target", "h100", "--json"],
           ["predict", "--from-run", "r1", "--target", "h100", "--report"],
           ["run", "--dry-run", "-w", "matmul", "-s", "64", "--json"],
           ["sweep", "matmul", "-s", "64", "--dry-run", "--report"],
           ["seeds", "--seed", "0", "--dry-run", "--json"]]


@pytest.fixture(scope="module")
def places(db: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder beside the store with a FIFO, another database and a user's notes."""
    import os
    folder = tmp_path_factory.mktemp("places")
    os.mkfifo(folder / "fifo")
    (folder / "notes.txt").write_text("mine\n")
    with open_store(str(folder / "other.sqlite")) as other:
        other.create_run(Run("o1", "2026-01-01T00:00:00+0000", {}, Environment("fp", {})))
    return folder


@FUZZ
@given(writer=st.sampled_from(WRITERS), place=st.sampled_from(OUTPUT_PLACES))
def test_any_output_path_exits_0_or_2_and_the_store_still_reads(
        writer: list[str], place: str, db: str, places: Path) -> None:
    target = place.format(db=db, dir=places)
    _exits_0_or_2_in_one_line([*writer, target], db)
    with open_store(db, reading=True) as store:
        assert [r.run_id for r in store.runs()] == ["r1"]
        assert len(store.measurements("r1")) == 2
    with open_store(str(places / "other.sqlite"), reading=True) as other:
        assert [r.run_id for r in other.runs()] == ["o1"]
    assert (places / "notes.txt").read_text() == "mine\n"


def _profile_text(kind: str) -> str:
    """A device profile file as someone may have written it."""
    import json

    from tests.predicting.samples import synthetic
    doc = synthetic("fz").to_dict()
    bad = {"zero": 0, "nan": float("nan"), "text": "fast", "null": None, "negative": -1,
           "true": True, "inf": float("inf"), "huge": 1e308}
    if kind in bad:
        doc["ceilings"][5]["value"] = bad[kind]
        return json.dumps(doc)
    return {"deep": "[" * 50_000 + "]" * 50_000, "not json": "{", "empty": "",
            "list": "[1, 2]", "no ceilings": json.dumps({**doc, "ceilings": []}),
            "good": json.dumps(doc)}[kind]


PROFILE_KINDS = ["zero", "nan", "text", "null", "negative", "true", "inf", "huge", "deep",
                 "not json", "empty", "list", "no ceilings", "good"]


@settings(max_examples=len(PROFILE_KINDS), derandomize=True, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow,
                                 HealthCheck.function_scoped_fixture])
@given(kind=st.sampled_from(PROFILE_KINDS))
def test_any_profile_file_exits_0_or_2_in_one_line(kind: str, db: str,
                                                   tmp_path_factory: pytest.TempPathFactory
                                                   ) -> None:
    path = tmp_path_factory.mktemp("profile") / "p.json"
    path.write_text(_profile_text(kind))
    _exits_0_or_2_in_one_line(["predict", "--from-run", "r1", "--profile", str(path), "-b",
                               "torch"], db)
