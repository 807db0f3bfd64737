"""What each workload's sweeps are called for a person, and what its size counts: words a
slide can carry, never two sweeps with one name, and none of it part of the version."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

from gpuvs import workloads
from gpuvs.workloads import SizeAxis

NAMED = ("matmul", "elementwise", "gru", "cnn", "jacobian")


@pytest.mark.parametrize("name", NAMED)
def test_each_sweep_of_a_workload_has_a_title_of_its_own_without_key_value_pairs(name) -> None:
    w = workloads.get(name)
    titles = {w.title(params): params for params in w.param_sets()}
    assert len(titles) == len(w.param_sets()), titles
    assert not any(f"{k}=" in t for t, params in titles.items() for k, _ in params), titles


@pytest.mark.parametrize(("name", "params", "title"), [
    ("matmul", (("shape", "square"),), "Square matrix product"),
    ("matmul", (("shape", "seed000"),), "Seed 000's product (1×n)@(n×100)"),
    ("matmul", (("shape", "seed000"), ("threads", "1")),
     "Seed 000's product (1×n)@(n×100) on 1 CPU thread"),
    ("elementwise", (("op", "scale"),), "Elementwise x·5 in place"),
    ("elementwise", (("input", "ones"), ("op", "chain")), "Elementwise x·5, x·x, x+x in place "
                                                          "on ones(n)"),
    ("gru", (("axis", "batch"), ("how", "streams")),
     "Two GRU forwards on two CUDA streams (two threads on a CPU), by batch size"),
    ("cnn", (("dataset", "synthetic"), ("framework", "keras"), ("steps", "50")),
     "Training seed 003's CNN, Keras on torch, on synthetic images, fit() for 50 steps"),
    ("jacobian", (("method", "vmap"),), "Jacobian of seed 004's MLP, vmap(jacrev) per sample"),
])
def test_a_title_says_the_work_in_words(name, params, title) -> None:
    assert workloads.get(name).title(params) == title


def test_a_parameter_the_title_does_not_say_is_still_shown_so_sweeps_stay_apart() -> None:
    square = workloads.get("matmul").title((("layout", "nt"), ("shape", "square")))
    assert square == "Square matrix product (layout=nt)"


@pytest.mark.parametrize(("name", "params", "label", "one"), [
    ("matmul", (("shape", "square"),), "matrix size n (n×n×n)", "n = 256"),
    ("matmul", (("shape", "seed000"),), "inner dimension n of (1×n)@(n×100)", "n = 256"),
    ("elementwise", (("op", "scale"),), "elements", "256 elements"),
    ("gru", (("axis", "seq"), ("how", "sequential")), "sequence length (steps)", "256 steps"),
    ("cnn", (("dataset", "synthetic"), ("framework", "torch")), "batch size (images)",
     "batch 256"),
    ("jacobian", (("method", "naive"),), "batch size val (inputs)", "val = 256"),
])
def test_the_size_axis_says_what_size_counts(name, params, label, one) -> None:
    axis = workloads.get(name).size_axis(params)
    assert (axis.label, axis.phrase.format(256)) == (label, one)


def test_a_workload_that_names_nothing_has_no_title_and_a_plain_size() -> None:
    triad = workloads.get("triad")
    assert triad.title(()) is None and triad.size_axis(()) == SizeAxis("size", "size {}")


def test_an_unknown_workload_is_not_found_rather_than_an_error() -> None:
    assert workloads.find("yours:tanh") is None
    assert workloads.find("matmul") is not None


CLASS = '''
from gpuvs.workloads.base import SizeAxis, Workload
class Probe(Workload):
    name = "probe"
    description = "a workload for this test"

    def default_sizes(self, params):
        return (1,)
{naming}
    def memory_needed(self, size, params, dtype):
        return 0

    def prepare(self, backend, case):
        raise NotImplementedError
'''
NAMING = '''
    def title(self, params):
        return "A probe"

    def size_axis(self, params):
        return SizeAxis("things", "{} things")
'''


PRELOAD = '''
    def preload(self, backend, case):
        import json
'''


@pytest.mark.parametrize("added", [NAMING, PRELOAD], ids=["title and size axis", "preload"])
def test_what_measures_nothing_leaves_a_workloads_version_as_it_was(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, added: str) -> None:
    """Results stored before a workload had a title, or imported ahead of its cases, still
    match it (`gpuvs check`)."""
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "plain_probe.py").write_text(CLASS.format(naming=""))
    (tmp_path / "added_probe.py").write_text(CLASS.format(naming=added))
    try:
        plain = importlib.import_module("plain_probe").Probe()
        added_to = importlib.import_module("added_probe").Probe()
        assert type(added_to).__dict__.keys() - type(plain).__dict__.keys()  # it differs
        assert added_to.version == plain.version
    finally:
        for module in ("plain_probe", "added_probe"):
            sys.modules.pop(module, None)
