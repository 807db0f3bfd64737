"""A run file is untrusted: `report --from` and `plot --from` read JSON that anyone may
have written. What no measurement could hold is one line and exit 2; names are drawn as
text, cut where they are shown, and never steer where a file is written."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.helpers import invoke
from tests.report.samples import CEILINGS, measurement, run

from gpuvs.cli.output import file_stem
from gpuvs.report.draw import element_id, shown
from gpuvs.report.html import TEXT_MAX, capped
from gpuvs.store.export import write_json

Doc = dict[str, Any]


def _first(doc: Doc) -> Doc:
    return doc["measurements"][0]


def _set(path: Callable[[Doc], Doc], key: str, value: Any) -> Callable[[Doc], None]:
    def change(doc: Doc) -> None:
        path(doc)[key] = value
    return change


@pytest.fixture
def exported(tmp_path: Path) -> Path:
    """A small run (one CPU series, one plot: drawing is what costs here) and ceilings."""
    path = tmp_path / "run.json"
    write_json(path, run(), [measurement("numpy", "cpu", n) for n in (1000, 10_000)],
               CEILINGS)
    return path


def _rewrite(path: Path, change: Callable[[Doc], None]) -> Path:
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))
    return path


@pytest.mark.parametrize(("change", "message"), [
    (_set(lambda d: _first(d)["case"], "size", 10**400),
     "size 10000000000000000000000000000000000000000000000000000000000000000000000000000000… "
     "(401 characters) is out of range (0 to 9223372036854775807)"),
    (_set(lambda d: _first(d)["case"], "size", float("inf")),
     "not a gpuvs run export: cannot convert float infinity to integer"),
    (_set(_first, "samples", [0.0, 0.0]),
     "samples holds 0.0; a time is a positive, finite number of seconds"),
    (_set(_first, "samples", [1e-3, -1e-3]), "samples holds -0.001"),
    (_set(_first, "wall_samples", [float("nan")]), "wall_samples holds nan"),
    (_set(_first, "first_call_s", float("inf")), "first_call_s is inf"),
    (_set(_first, "first_call_s", "slow"), "first_call_s is 'slow'"),
    (_set(_first, "counters", {"flops": 1e400}), "counter 'flops' is not finite"),
    (_set(_first, "loops", 0), "loops 0, warmups 4; loops count from 1"),
    (_set(lambda d: d["ceilings"][0], "value", -1.0),
     "bad 'ceilings': Ceiling(name='matmul float32 threads=all'"),
])
def test_numbers_no_measurement_could_hold_are_one_line(change, message, exported) -> None:
    result = invoke("report", "--from", str(_rewrite(exported, change)), "-o",
                    str(exported.with_suffix(".html")))
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.output, result.output
    assert message in lines[0], lines[0]
    assert not exported.with_suffix(".html").exists()


@pytest.mark.parametrize(("text", "message"), [
    ("[" * 100_000 + "]" * 100_000, "is not a gpuvs run export: it nests arrays or objects "
                                    "too deeply"),
    ('{"format_version": 1, "n": ' + "9" * 5000 + "}", "is not JSON: Exceeds the limit"),
    ("\udcff", "is not JSON: 'utf-8' codec can't decode byte 0xff"),
])
def test_json_that_python_cannot_hold_is_one_line(text, message, tmp_path) -> None:
    path = tmp_path / "odd.json"
    path.write_bytes(text.encode("utf-8", "surrogateescape"))
    result = invoke("report", "--from", str(path))
    assert result.exit_code == 2, result.output
    assert len(result.output.strip().splitlines()) == 1
    assert message in result.output


def _name_everything(value: str) -> Callable[[Doc], None]:
    def change(doc: Doc) -> None:
        for m in doc["measurements"]:
            m["case"]["workload"] = f"yours:{value}"
            m["case"]["params"] = [["k", value]]
            m["reason"] = value
        doc["environment"]["facts"]["cpu_model"] = value
    return change


@pytest.mark.parametrize("value", ["${a}{b$", r"$\frac{a}{b$"])
def test_markup_in_a_name_is_drawn_as_text(value, exported, tmp_path) -> None:
    """Matplotlib reads text between two `$` as mathematics: `${a}{b$` raised."""
    _rewrite(exported, _name_everything(value))
    page = tmp_path / "page.html"
    assert invoke("report", "--from", str(exported), "-o", str(page)).exit_code == 0
    assert invoke("plot", "--from", str(exported), "--png", str(tmp_path / "png")).exit_code == 0
    assert any((tmp_path / "png").iterdir())
    assert shown(value).replace(r"\$", "$") == value  # drawn as written, each $ literal


def test_long_names_are_cut_where_they_are_shown_and_the_cut_is_stated(exported,
                                                                      tmp_path) -> None:
    """A 10 KB workload name made a 316 MB page; 100 KB a field exhausted the memory."""
    _rewrite(exported, _name_everything("w" * 100_000))
    page = tmp_path / "page.html"
    result = invoke("report", "--from", str(exported), "-o", str(page))
    assert result.exit_code == 0, result.output
    text = page.read_text()
    assert len(text) < 2_000_000
    assert re.search(rf"\[cut at {TEXT_MAX:,} of 100,0\d\d characters\]", text)  # the CPU
    assert re.search(rf"\[cut at {TEXT_MAX:,} of 200,0\d\d characters\]", text)  # a sweep's
    assert "w" * (TEXT_MAX + 1) not in text
    assert capped("x" * TEXT_MAX) == "x" * TEXT_MAX  # up to the cap, as written


def test_a_plot_id_made_from_a_name_cannot_leave_its_attribute() -> None:
    assert element_id('time "><script>alert(1)</script>') == "time-script-alert-1-script"
    assert element_id("") == "plot"
    assert len(element_id("x" * 10_000)) <= 200


@pytest.mark.parametrize("run_id", ["../../escaped/evil", "/tmp/gpuvs-absolute"])
def test_a_run_id_in_a_file_never_steers_where_the_output_goes(run_id, exported, tmp_path,
                                                                monkeypatch) -> None:
    work = tmp_path / "deep" / "work"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    _rewrite(exported, _set(lambda d: d["run"], "run_id", run_id))
    before = sorted(tmp_path.rglob("*"))
    assert invoke("report", "--from", str(exported)).exit_code == 0
    assert invoke("plot", "--from", str(exported)).exit_code == 0
    made = sorted(set(tmp_path.rglob("*")) - set(before))
    assert made and all(work in p.parents for p in made), made
    assert not Path("/tmp/gpuvs-absolute.html").exists()


@pytest.mark.parametrize(("name", "stem"), [
    ("../../escaped/evil", "_.._escaped_evil"), ("/tmp/x", "_tmp_x"), (".hidden", "hidden"),
    ("..", "run"), ("", "run"), ("a" * 5000, "a" * 100), ("20260101-000000-abcd",
                                                          "20260101-000000-abcd"),
])
def test_a_file_name_made_from_data_has_no_path_in_it(name, stem) -> None:
    assert file_stem(name) == stem
