"""The published contract for machines: every run export and every `--format json`
document gpuvs writes validates against the JSON Schema shipped in the package
(`gpuvs schema run|output`), and names no key the schema does not describe.

The exports are the real runs of tests/data/golden, the session's real runs (a sweep
with `--json`, `gpuvs seeds --quick`), `gpuvs export`, a `gpuvs.compare` result's
`to_json`; the documents are what `run`, `show`, `runs`, `compare`, `check` (pass, fail
and error), `ceilings` and `predict` print with `--format json`."""

from __future__ import annotations

import copy
import json
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tests.helpers import invoke
from tests.helpers import run_id as run_id_of
from tests.report import samples
from tests.report.samples import RealRun

import gpuvs
from gpuvs.report import documents
from gpuvs.store import export
from gpuvs.store.sqlite import SqliteStore

jsonschema = pytest.importorskip("jsonschema")  # a test dependency; not on a GPU VM
GOLDEN = samples.GOLDEN
EXPORTS = ("cpu-matmul-sweep.json", "cpu-seeds-quick.json", "h200x2-collectives.json",
           "h200x2-scaling.json")


@cache
def validators(name: str) -> tuple[jsonschema.Draft202012Validator, ...]:
    """The shipped schema, and a strict copy of it in which an object may hold no key its
    `properties` do not name: the published one lets a new key appear (a reader must
    tolerate one), the strict one finds a key the code writes that the schema never
    described."""
    shipped = json.loads(export.schema() if name == "run" else documents.schema())
    jsonschema.Draft202012Validator.check_schema(shipped)
    return (jsonschema.Draft202012Validator(shipped),
            jsonschema.Draft202012Validator(_closed(copy.deepcopy(shipped))))


def _closed(node: Any) -> Any:
    if isinstance(node, dict):
        if "properties" in node:
            node.setdefault("additionalProperties", False)
        for value in node.values():
            _closed(value)
    elif isinstance(node, list):
        for value in node:
            _closed(value)
    return node


def valid(name: str, doc: Any) -> None:
    for validator in validators(name):
        errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))
        assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message[:300]}"
                                     for e in errors[:5])


def printed(*args: str) -> Any:
    result = invoke(*args, "--format", "json")
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The golden runs in a store, as `gpuvs show` reads them."""
    db = tmp_path_factory.mktemp("schemas") / "r.sqlite"
    with SqliteStore(db) as s:
        for name in EXPORTS:
            run, ms, _ = export.load_json(GOLDEN / name)
            s.create_run(run)
            for m in ms:
                s.save(run.run_id, m)
    return db


def test_the_schemas_are_shipped_and_printed_by_gpuvs_schema() -> None:
    for name, text in (("run", export.schema()), ("output", documents.schema())):
        result = invoke("schema", name)
        assert result.exit_code == 0
        assert json.loads(result.stdout) == json.loads(text)
        assert json.loads(text)["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    refused = invoke("schema", "yaml")
    assert refused.exit_code == 2
    assert "unknown schema 'yaml'; accepted: run, output" in refused.output


@pytest.mark.parametrize("name", EXPORTS)
def test_each_golden_export_is_a_valid_run_export(name: str) -> None:
    valid("run", json.loads((GOLDEN / name).read_text()))


def test_an_export_written_now_keeps_to_the_schema(store: Path, tmp_path: Path) -> None:
    """`gpuvs export -f json` of every stored run: their summaries now kept too."""
    with SqliteStore(store) as s:
        ids = [r.run_id for r in s.runs()]
    for run_id in ids:
        out = tmp_path / f"{run_id}.json"
        assert invoke("export", run_id, "-o", str(out), "--db", str(store)).exit_code == 0
        doc = json.loads(out.read_text())
        assert any("summaries" in m for m in doc["measurements"])
        valid("run", doc)


def test_a_real_runs_json_keeps_to_the_schema(real_run: RealRun) -> None:
    valid("run", json.loads(real_run.json.read_text()))


def test_a_comparisons_json_keeps_to_the_schema() -> None:
    result = gpuvs.compare(lambda x: x * 2, np.ones(1000, dtype=np.float32), devices=("cpu",),
                           budget_s=0.02)
    valid("run", json.loads(result.to_json()))


def test_the_schema_refuses_what_is_not_an_export() -> None:
    doc = json.loads((GOLDEN / "cpu-matmul-sweep.json").read_text())
    for broken in ({"samples": [0.0]}, {"status": "fine"}, {"loops": 0}):
        bad = copy.deepcopy(doc)
        bad["measurements"][0] |= broken
        assert not validators("run")[0].is_valid(bad)
    assert not validators("run")[0].is_valid(doc | {"format_version": 2})
    assert not validators("run")[1].is_valid(doc | {"unheard_of": 1})  # the strict one


@pytest.mark.parametrize("name", EXPORTS)
def test_show_prints_a_valid_document(store: Path, name: str) -> None:
    run_id = json.loads((GOLDEN / name).read_text())["run"]["run_id"]
    valid("output", printed("show", run_id, "--db", str(store)))


def test_runs_prints_a_valid_document(store: Path) -> None:
    valid("output", printed("runs", "--db", str(store)))


def test_run_prints_a_valid_document(tmp_path: Path) -> None:
    doc = printed("run", "-w", "elementwise", "-a", "op=scale", "-s", "1000", "-b", "numpy",
                  "-d", "cpu", "--budget", "0.02", "--passes", "1",
                  "--db", str(tmp_path / "r.sqlite"))
    assert doc["command"] == "run"
    valid("output", doc)


def test_compare_and_check_print_valid_documents(store: Path, tmp_path: Path) -> None:
    """A comparison, a gate that passes, one that fails, and one that cannot judge."""
    a = GOLDEN / "cpu-matmul-sweep.json"
    run, ms, _ = export.load_json(a)
    slower = tmp_path / "slower.json"
    slower.write_text(json.dumps(export.run_document(
        run, [m if m.case.backend == "numpy" else _slower(m) for m in ms])))
    valid("output", printed("compare", str(a), str(slower)))
    passed = printed("check", "--baseline", str(a), "--run", str(a), "--db", str(store))
    failed = printed("check", "--baseline", str(a), "--run", str(slower), "--db", str(store))
    assert (passed["verdict"], failed["verdict"]) == ("pass", "fail")
    other = GOLDEN / "h200x2-scaling.json"
    error = invoke("check", "--baseline", str(a), "--run", str(other), "--db", str(store),
                   "--allow-env-change", "--format", "json")
    assert error.exit_code == 2
    assert json.loads(error.stdout)["verdict"] == "error"
    for doc in (passed, failed, json.loads(error.stdout)):
        valid("output", doc)


def _slower(m: Any) -> Any:
    from dataclasses import replace
    return replace(m, samples=tuple(3 * x for x in m.samples))


def test_ceilings_and_predict_documents_keep_to_the_schema() -> None:
    import gpuvs.predicting.forecast as forecast

    valid("output", documents.cases_document("ceilings", samples.ceilings_probes()))
    cpu = [m for m in samples.golden("cpu-matmul-sweep.json") if m.samples]
    target = forecast.target("h100")
    predicted = forecast.predict_cases(target, samples.gpu_twins(cpu))
    found = forecast.series(cpu, [p for p in predicted if p.prediction is not None])
    valid("output", json.loads(documents.dumps(documents.document(
        "predict", **json.loads(forecast.document(target, found))))))


def test_a_seeds_run_prints_a_valid_document(seed000_run: Any) -> None:
    """The session's real `gpuvs seeds --seed 0 --quick`, shown again."""
    doc = printed("show", run_id_of(seed000_run.output), "--db", str(seed000_run.db))
    assert doc["seeds"]
    valid("output", doc)


def test_the_schemas_name_every_status_caveat_and_kind_there_is() -> None:
    """A new caveat (or status, or kind of run) is a value the documents may hold: the
    schemas list it, or a reader validating against them refuses a run that has it."""
    from gpuvs.model import Caveat, RunKind, Status
    run, output = (json.loads(text) for text in (export.schema(), documents.schema()))
    for shipped in (run, output):
        assert shipped["$defs"]["caveat"]["enum"] == [c.value for c in Caveat]
    assert run["$defs"]["measurement"]["properties"]["status"]["enum"] == [
        s.value for s in Status]
    assert output["$defs"]["status"]["enum"] == [s.value for s in Status]
    assert output["$defs"]["run"]["properties"]["kind"]["enum"] == [k.value for k in RunKind]
