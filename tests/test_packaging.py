"""gpuvs installs as a Python tool: `pip install .` (or pipx) gives a `gpuvs` on PATH
with every file the package reads at run time, and extras named for what they add.

The wheel is built here from a copy of the sources, as pip builds it; installing it with
its dependencies (torch is gigabytes) is the install check the README describes."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> zipfile.ZipFile:
    pytest.importorskip("setuptools")
    tree = tmp_path_factory.mktemp("tree")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, tree / name)
    shutil.copytree(REPO / "src", tree / "src",
                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    out = tmp_path_factory.mktemp("wheel")
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps",
                           "--no-build-isolation", "-q", "-w", str(out), str(tree)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    (built,) = out.glob("gpuvs-*.whl")
    return zipfile.ZipFile(built)


def test_the_wheel_holds_every_file_of_the_package(wheel: zipfile.ZipFile) -> None:
    """Templates, the page's CSS, py.typed: a file left out fails only once installed
    (`gpuvs report` raised TemplateNotFound: _style.css from a wheel)."""
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard",
                             "src/gpuvs"], capture_output=True, text=True, cwd=REPO)
    if listed.returncode != 0:
        pytest.skip("not a git checkout: the package's files are what git tracks")
    wanted = {line.removeprefix("src/") for line in listed.stdout.splitlines()}
    missing = sorted(wanted - set(wheel.namelist()))
    assert not missing


def test_the_wheel_puts_gpuvs_on_path_at_this_version(wheel: zipfile.ZipFile) -> None:
    from gpuvs import __version__
    (info,) = {n.split("/")[0] for n in wheel.namelist() if n.endswith(".dist-info/METADATA")}
    assert info == f"gpuvs-{__version__}.dist-info"
    scripts = wheel.read(f"{info}/entry_points.txt").decode()
    assert "gpuvs = gpuvs.cli:main" in scripts


def test_each_backend_names_an_extra_that_installs_it() -> None:
    """A backend that is not installed says `pip install 'gpuvs[NAME]'`: that extra
    exists, and so do those for the GPU's sensors and a shared store."""
    from gpuvs import backends
    extras = PYPROJECT["project"]["optional-dependencies"]
    runtime = " ".join(PYPROJECT["project"]["dependencies"])
    for name in backends.names():
        if name != "sim":  # the tests' simulated device
            assert name in extras or name in runtime, name
    assert {"torch", "cupy", "jax", "nvml", "postgres"} <= set(extras)


def test_dependencies_are_ranges_not_pins() -> None:
    """An installed tool shares an environment: a pin would fight the user's own torch."""
    for requirement in (*PYPROJECT["project"]["dependencies"],
                        *(r for rs in PYPROJECT["project"]["optional-dependencies"].values()
                          for r in rs)):
        assert "==" not in requirement, requirement


def test_make_test_says_what_it_installs_through_apt_before_it_installs(tmp_path: Path
                                                                        ) -> None:
    """Issue 42: `make test` as root installed 115 Debian packages with no word said. The
    recipe is run with an apt-get that only records its calls, for a browser and a server
    that are not there."""
    if shutil.which("make") is None:
        pytest.skip("no make")
    fake = tmp_path / "apt-get"
    fake.write_text("#!/bin/sh\necho \"apt-get $*\"\n")
    fake.chmod(0o755)
    env = {"PATH": f"{tmp_path}:/usr/bin:/bin"}
    made = subprocess.run(["make", "-s", "-C", str(REPO), f"CHROMIUM={tmp_path}/chromium",
                           f"POSTGRES={tmp_path}/postgresql", f"{tmp_path}/chromium"],
                          capture_output=True, text=True, env=env, check=True)
    lines = made.stdout.splitlines()
    if os.geteuid() != 0:  # apt-get as root only: the note says what would be needed
        assert lines == [f"note: no {tmp_path}/chromium or {tmp_path}/postgresql, and "
                         "apt-get as root is not available to install them (chromium "
                         "postgresql): the tests that need them skip"]
        return
    assert lines[0].startswith("make test: installing chromium postgresql through apt-get, "
                               "with their dependencies (about 115 Debian packages")
    assert lines[1:] == ["apt-get update -q", "apt-get install -y -q chromium postgresql"]


def test_the_readme_gives_pipx_a_cpu_only_route_that_pipx_parses() -> None:
    """Issue 42: `pipx install '.[torch]'` on a CPU-only box pulled a 5.7 GB CUDA torch.
    The README's route installs gpuvs alone, then injects the CPU build; each line is one
    pipx's own parser accepts (where pipx is installed: it is not a test dependency)."""
    readme = (REPO / "README.md").read_text()
    route = ["pipx install .",
             "pipx inject gpuvs torch --index-url https://download.pytorch.org/whl/cpu"]
    assert "\n".join(f"$ {line}" for line in route) in readme
    main = pytest.importorskip("pipx.main")
    parser, _ = main.get_command_parser()
    install = parser.parse_args(route[0].split()[1:])
    assert (install.command, install.package_spec) == ("install", ["."])
    inject = parser.parse_args(route[1].split()[1:])
    assert (inject.command, inject.package, inject.dependencies, inject.index_url) == (
        "inject", "gpuvs", ["torch"], "https://download.pytorch.org/whl/cpu")
