"""Device profiles: a ceilings run kept as versioned JSON with where it came from, found
by name (the user's, then those shipped) or by file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.predicting.samples import synthetic

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
    with pytest.raises(UsageError, match="is not a gpuvs device profile of format 1"):
        profile.load(str(path))


def test_the_shipped_profiles_are_measured_ones(profiles: Path) -> None:
    """Whatever ships was written by `gpuvs ceilings --save-profile` on its GPU: a run,
    a fingerprint, a driver and a GPU's ceilings. None is written by hand."""
    for found in profile.available():
        assert found.where == SHIPPED
        p = found.profile
        assert p.run_id and p.fingerprint and p.driver and p.has_gpu, found.path
        assert all(c.source for c in p.ceilings), found.path
