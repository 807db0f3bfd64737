from __future__ import annotations

from pathlib import Path

import pytest

from gpuvs import config, workloads
from gpuvs.config import RunConfig, parse_sizes
from gpuvs.errors import UsageError
from gpuvs.execute import plan


def test_size_ranges_and_lists() -> None:
    assert parse_sizes(["1e3:1e6"]) == (1000, 10_000, 100_000, 1_000_000)
    assert parse_sizes(["64:512:2"]) == (64, 128, 256, 512)
    assert parse_sizes(["5,7", "7", "1e2"]) == (5, 7, 100)


@pytest.mark.parametrize(("spec", "message"), [
    ("1.5", "size '1.5' is not a positive integer"),
    ("-4", "size '-4' is not a positive integer"),
    ("0", "size '0' is not a positive integer"),
    ("big", "size 'big' is not a positive integer"),
    ("10:1", "size range '10:1' ends before it starts"),
    ("1:10:1", "size range factor '1' must be a number above 1"),
])
def test_bad_sizes_name_the_value(spec: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        parse_sizes([spec])


@pytest.mark.parametrize(("fields", "message"), [
    ({"workloads": ("matmull",)}, "unknown workload 'matmull'; known: "),
    ({"backends": ("cpy",)}, "unknown backend 'cpy'; known: cupy, jax, numpy, "),
    ({"dtypes": ("float8",)}, "unknown dtype 'float8'; known: float16, bfloat16, float32, "),
    ({"backends": ("numpy",), "dtypes": ("bfloat16",)},
     "numpy has no bfloat16; it supports float16, float32, float64"),
    ({"devices": ("gpu",)}, "unknown device 'gpu'; accepted: cpu, cuda, cuda:N"),
    ({"variants": ("fast",)}, "unknown variant 'fast'; known: as_written, correct, tuned"),
    ({"budget_s": -1.0}, r"--budget must be a positive number of seconds up to 604,800 "
                         r"\(a week\); got -1.0"),
])
def test_validation_names_the_bad_value_and_what_is_accepted(fields, message) -> None:
    with pytest.raises(UsageError, match=message):
        RunConfig(**fields).validate()


def test_pyproject_table_is_read_and_flags_win(tmp_path: Path) -> None:
    p = tmp_path / "pyproject.toml"
    p.write_text('[tool.gpuvs]\nbudget_s = 0.5\nbackends = ["numpy"]\n')
    c = config.build({"budget_s": 2.0, "backends": ()}, p)
    assert c.budget_s == 2.0 and c.backends == ("numpy",)


def test_the_projects_pyproject_is_found_from_a_directory_below_it(tmp_path: Path) -> None:
    """Run from `tests/` or `src/pkg/`, gpuvs reads the project's `[tool.gpuvs]`, as
    pytest reads its own settings; a pyproject.toml without the table is passed over,
    and the search ends at the repository's root."""
    root = tmp_path / "project"
    below = root / "src" / "pkg"
    below.mkdir(parents=True)
    (root / "pyproject.toml").write_text("[tool.gpuvs]\nbudget_s = 0.25\n")
    (root / "src" / "pyproject.toml").write_text("[project]\nname = 'pkg'\n")
    assert config.project_pyproject(below) == root / "pyproject.toml"
    (root / ".git").mkdir()
    (tmp_path / "pyproject.toml").write_text("[tool.gpuvs]\nbudget_s = 9.0\n")
    assert config.project_pyproject(below) == root / "pyproject.toml"
    (root / "pyproject.toml").write_text("[project]\nname = 'project'\n")
    assert config.project_pyproject(below) is None  # not the one above the repository


def test_a_command_below_the_project_root_takes_its_settings(tmp_path: Path,
                                                             monkeypatch) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.gpuvs]\nbudget_s = 0.25\n")
    (tmp_path / "tests").mkdir()
    monkeypatch.chdir(tmp_path / "tests")
    assert config.build({}).budget_s == 0.25


def test_unknown_pyproject_key_is_refused(tmp_path: Path) -> None:
    p = tmp_path / "pyproject.toml"
    p.write_text("[tool.gpuvs]\nbudgett = 1\n")
    with pytest.raises(UsageError, match="unknown key 'budgett' in \\[tool.gpuvs\\]"):
        config.build({}, p)


def test_plan_interleaves_backends_at_each_size_and_adds_end_to_end_on_gpus() -> None:
    cases = plan.expand(RunConfig(workloads=("matmul",), backends=("numpy", "torch"),
                                  sizes=(64, 128)))
    square = [c for c in cases if c.param("shape") == "square"]
    assert [(c.size, c.backend, c.device, c.param("data")) for c in square] == [
        (64, "numpy", "cpu", ""), (64, "torch", "cpu", ""),
        (64, "torch", "cuda:0", ""), (64, "torch", "cuda:0", "end_to_end"),
        (128, "numpy", "cpu", ""), (128, "torch", "cpu", ""),
        (128, "torch", "cuda:0", ""), (128, "torch", "cuda:0", "end_to_end"),
    ]


def test_cold_runs_are_cases_of_their_own() -> None:
    cases = plan.expand(RunConfig(workloads=("elementwise",), backends=("numpy",), sizes=(10,),
                                  cold=True))
    assert cases and all(c.param("cache") == "cold" for c in cases)


def test_a_run_that_names_nothing_is_the_first_answer_suite_and_all_is_everything() -> None:
    """`gpuvs run` answers in about a minute: square products and x *= 5 over sizes; a
    named workload is measured whole; `--all` is every workload of the default suite."""
    first = plan.expand(RunConfig(devices=("cpu",)))
    assert {(c.workload, c.param("shape") or c.param("op")) for c in first} == {
        ("matmul", "square"), ("elementwise", "scale")}
    assert max(c.size for c in first if c.workload == "elementwise") == 10**7
    whole = plan.expand(RunConfig(workloads=("matmul",), devices=("cpu",)))
    assert {c.param("shape") for c in whole} == {"square", "seed000"}
    everything = plan.expand(RunConfig(full_suite=True, devices=("cpu",)))
    assert {c.workload for c in everything} == set(workloads.default_suite())
    assert len(everything) > 2 * len(first)
