"""Device profiles: a ceilings run kept as versioned JSON with where it came from, found
by name (the user's, then those shipped) or by file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.helpers import invoke
from tests.predicting.samples import op_costs, synthetic

from gpuvs.errors import UsageError
from gpuvs.model import Ceiling, Environment, Run
from gpuvs.predicting import profile
from gpuvs.predicting.profile import SHIPPED, from_run

H100_FACTS = {"gpus": [{"index": 0, "name": "NVIDIA H100 80GB HBM3"}], "driver": "580.159.04",
              "cuda_driver": "13.0", "cpu_model": "Intel(R) Xeon(R) Processor",
              "libraries": {"numpy": "2.5.2", "torch": "2.11.0", "jax": "0.11.2"}}
CEILING = Ceiling("memory bandwidth (copy)", "cuda:0", "torch", 3.01e12, "B/s", "copy/…")


def ceilings_run(facts: dict[str, object]) -> Run:
    return Run("20261126-123247-3c8f", "2026-11-26T12:32:47+0000", {"kind": "ceilings"},
               Environment("25bc444df5a81552", facts), "finished")


def test_a_profile_keeps_the_gpu_driver_libraries_date_and_run() -> None:
    p = from_run("h100", ceilings_run(H100_FACTS), [CEILING])
    assert (p.device, p.driver, p.measured_at) == (
        "NVIDIA H100 80GB HBM3", "580.159.04 / CUDA 13.0", "2026-11-26T12:32:47+0000")
    assert p.libraries["torch"] == "2.11.0" and p.fingerprint == "25bc444df5a81552"
    assert p.describe() == ("NVIDIA H100 80GB HBM3, measured 2026-11-26 (driver 580.159.04 / "
                            "CUDA 13.0, jax 0.11.2, torch 2.11.0, run 20261126-123247-3c8f)")


def test_a_machine_without_a_gpu_names_its_cpu() -> None:
    facts = {"gpus": [], "cpu_model": "AMD EPYC", "libraries": {}}
    p = from_run("laptop", ceilings_run(facts), [Ceiling("matmul float32 threads=all", "cpu",
                                                         "numpy", 1e11, "FLOP/s", "")])
    assert p.device == "no GPU (AMD EPYC)" and not p.has_gpu and p.driver == ""


def test_saved_and_loaded_by_name_it_is_the_same_profile(profiles: Path) -> None:
    path = profile.save(synthetic("mine"))
    assert path == profiles / "mine.json"
    found = profile.load("mine")
    assert found.profile == synthetic("mine") and found.where == "yours"
    assert json.loads(path.read_text())["format_version"] == profile.FORMAT_VERSION
    assert found.origin().startswith(f"profile 'mine' from {path}: Synthetic GPU, measured")


def test_its_op_classes_round_trip_in_format_2(tmp_path: Path) -> None:
    measured = from_run("h100-next", ceilings_run(H100_FACTS), [CEILING], op_costs())
    path = profile.save(measured, tmp_path)
    doc = json.loads(path.read_text())
    assert doc["format_version"] == 2 and len(doc["op_classes"]) == len(op_costs())
    assert doc["op_classes"][0] == {"op_class": "matmul", "device": "cuda:0",
                                    "backend": "torch", "amount": 1e6, "seconds": 1e-5,
                                    "source": "op_class/matmul/1e+06", "contended": False}
    assert profile.load_file(path).profile == measured


def test_a_profile_of_format_1_still_loads_without_op_classes(tmp_path: Path) -> None:
    """A profile measured before the op classes (the shipped H100 one, until it is
    measured again) loads, and is written back as it was read."""
    old = {k: v for k, v in synthetic().to_dict().items() if k != "op_classes"} | {
        "format_version": 1}
    path = tmp_path / "old.json"
    path.write_text(json.dumps(old))
    read = profile.load_file(path).profile
    assert read.format_version == 1 and read.op_classes == ()
    assert read.to_dict() == old


def test_a_file_is_read_wherever_it_is(tmp_path: Path) -> None:
    path = profile.save(synthetic("elsewhere"), tmp_path)
    assert profile.load(str(path)).where == "file"


def test_an_unknown_name_lists_those_there_are_and_how_to_make_one(profiles: Path) -> None:
    profile.save(synthetic("a100"))
    with pytest.raises(UsageError) as e:
        profile.load("h300")
    assert str(e.value).startswith("no device profile 'h300'; available: a100, h100")
    assert "`gpuvs ceilings --save-profile h300` on that machine measures one" in str(e.value)


@pytest.mark.parametrize("name", ["", "../up", "has space", "x" * 65])
def test_a_name_that_is_no_file_stem_is_refused(name: str, profiles: Path) -> None:
    with pytest.raises(UsageError, match="is not accepted; use letters, digits"):
        profile.save(synthetic(name))


def test_another_format_version_is_refused_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "old.json"
    path.write_text(json.dumps(synthetic().to_dict() | {"format_version": 0}))
    with pytest.raises(UsageError, match="is not a gpuvs device profile of format 1 or 2"):
        profile.load(str(path))


def test_the_shipped_profiles_are_measured_ones(profiles: Path) -> None:
    """Whatever ships was written by `gpuvs ceilings --save-profile` on its GPU: a run,
    a fingerprint, a driver and a GPU's ceilings. None is written by hand."""
    for found in profile.available():
        assert found.where == SHIPPED
        p = found.profile
        assert p.run_id and p.fingerprint and p.driver and p.has_gpu, found.path
        assert all(c.source for c in p.ceilings), found.path


# --- a profile file is untrusted input (issue 43) ---------------------------------------

def _hostile(change: str) -> str:
    """The synthetic profile's JSON with one thing broken, as `change` names it."""
    doc = synthetic("bad", classes=True).to_dict()
    first = doc["ceilings"][0]
    edits = {
        "value 0": lambda: first.update(value=0), "value NaN": lambda: first.update(
            value=float("nan")), "value -1": lambda: first.update(value=-1.0),
        "value a string": lambda: first.update(value="fast"),
        "value null": lambda: first.update(value=None),
        "value true": lambda: first.update(value=True),
        "value inf": lambda: first.update(value=float("inf")),
        "name null": lambda: doc.update(name=None),
        "name a path": lambda: doc.update(name="../../etc"),
        "a ceiling's name a number": lambda: first.update(name=7),
        "ceilings null": lambda: doc.update(ceilings=None),
        "ceilings empty": lambda: doc.update(ceilings=[]),
        "a ceiling a string": lambda: doc.update(ceilings=["x"]),
        "libraries a string": lambda: doc.update(libraries="torch"),
        "contended a string": lambda: first.update(contended="no"),
        "format_version true": lambda: doc.update(format_version=True),
        "an op cost's seconds 0": lambda: doc["op_classes"][0].update(seconds=0),
        "an op cost's amount NaN": lambda: doc["op_classes"][0].update(amount=float("nan")),
        "an op cost's class a number": lambda: doc["op_classes"][0].update(op_class=3),
        "op_classes a string": lambda: doc.update(op_classes="fast"),
    }
    edits[change]()
    return json.dumps(doc)


HOSTILE = {
    "value 0": "ceiling 1 ('matmul float32 tf32=off') has the value 0; a ceiling's value is "
               "a positive, finite number",
    "value NaN": "has the value nan; a ceiling's value is a positive, finite number",
    "value -1": "has the value -1.0",
    "value a string": "has the value 'fast'",
    "value null": "has the value None",
    "value true": "has the value True",
    "value inf": "has the value inf",
    "name null": "'name' is None; it is text",
    "name a path": "its name '../../etc' is no profile name",
    "a ceiling's name a number": "ceiling 1 (7): 'name' is 7; it is text",
    "ceilings null": "'ceilings' is None; it is a list of 1 to 10000 measured ceilings",
    "ceilings empty": "'ceilings' is []",
    "a ceiling a string": "ceiling 1 is 'x', not an object",
    "libraries a string": "'libraries' is not a mapping of names to versions",
    "contended a string": "has contended 'no'; it is true or false",
    "format_version true": "is not a gpuvs device profile of format 1 or 2 (format_version "
                           "True)",
    "an op cost's seconds 0": "op cost 1 ('matmul') has the seconds 0; an op cost's "
                              "seconds is a positive, finite number",
    "an op cost's amount NaN": "op cost 1 ('matmul') has the amount nan",
    "an op cost's class a number": "op cost 1 (3): 'op_class' is 3; it is text",
    "op_classes a string": "'op_classes' is 'fast'; it is a list of 0 to 10000 measured "
                           "op costs",
}


@pytest.mark.parametrize("change", sorted(HOSTILE))
def test_a_hostile_profile_is_one_line_naming_the_field(change: str, tmp_path: Path) -> None:
    """0 and NaN reached the model's divisions (ZeroDivisionError), a string or null
    its arithmetic (TypeError)."""
    path = tmp_path / "bad.json"
    path.write_text(_hostile(change))
    with pytest.raises(UsageError) as err:
        profile.load_file(path)
    message = str(err.value)
    assert HOSTILE[change] in message and "\n" not in message, message
    assert message.startswith(f"profile {path} ")


@pytest.mark.parametrize(("content", "message"), [
    (b"[" * 100_000 + b"]" * 100_000, "nests arrays or objects too deeply"),
    (b"{" + b" " * (2 * 1024 * 1024) + b"}", "is larger than 1024 KiB"),
    (b"\xff\xfe not utf-8", "cannot read profile"),
    (b"{not json", "cannot read profile"),
])
def test_a_profile_file_too_deep_too_large_or_no_json_is_one_line(
        content: bytes, message: str, tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    with pytest.raises(UsageError, match=message) as err:
        profile.load_file(path)
    assert "\n" not in str(err.value)


def test_a_bad_file_among_good_ones_is_skipped_with_a_line_and_the_rest_load(
        profiles: Path) -> None:
    """One bad file once disabled every profile, the shipped ones too."""
    profile.save(synthetic("good"))
    (profiles / "nan.json").write_text(_hostile("value NaN"))
    (profiles / "deep.json").write_text("[" * 100_000)
    catalog = profile.scan()
    assert [f.profile.name for f in catalog.found] == ["h100", "h200", "good"]  # shipped first
    assert len(catalog.skipped) == 2
    assert all(line.startswith(f"skipped profile {profiles}") for line in catalog.skipped)
    result = invoke("profiles")
    assert result.exit_code == 0, result.output
    warnings = [x for x in result.output.splitlines() if x.startswith("warning: skipped")]
    assert len(warnings) == 2 and "good" in result.output and "h100" in result.output


def test_a_saved_name_never_hides_a_shipped_profile(profiles: Path) -> None:
    """An older gpuvs saved `h100` into the profile directory on a machine without a GPU:
    `--target h100` is still the shipped profile, and the file is read by its path."""
    with pytest.raises(UsageError, match="'h100' is the profile shipped with gpuvs"):
        profile.save(synthetic("h100"))
    profiles.mkdir()
    (profiles / "h100.json").write_text(json.dumps(synthetic("h100").to_dict()))
    found, skipped = profile.named("h100")
    assert found.where == SHIPPED and found.profile.device == "NVIDIA H100 80GB HBM3"
    assert skipped == (f"skipped {profiles / 'h100.json'}: it is named 'h100', as the "
                       "profile shipped with gpuvs, which --target h100 means; read it with "
                       f"--profile {profiles / 'h100.json'}",)
    assert profile.load_file(profiles / "h100.json").profile.device == "Synthetic GPU"


def test_a_profile_predict_would_refuse_is_refused_at_saving(profiles: Path) -> None:
    cpu_only = from_run("laptop", ceilings_run({"gpus": [], "cpu_model": "AMD EPYC"}),
                        [Ceiling("matmul float32 threads=all", "cpu", "numpy", 1e11,
                                 "FLOP/s", "")])
    with pytest.raises(UsageError, match=r"^profile 'laptop' was measured on a machine "
                                         r"without a GPU \(no GPU \(AMD EPYC\)\): it predicts "
                                         r"no GPU; not saved$"):
        profile.save(cpu_only)
    dispatch_only = from_run("gpu", ceilings_run(H100_FACTS), [
        Ceiling("per-op dispatch cost", "cuda:0", "torch", 1e-5, "s", "")])
    with pytest.raises(UsageError, match="holds no GPU memory bandwidth"):
        profile.save(dispatch_only)
    assert not profiles.exists()
