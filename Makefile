# The two commands of the README: `make run` and `make test`. Each sets up what it needs.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
# This machine's set-up pins torch to the CPU build on local disk; the package itself
# accepts a range (pyproject.toml), so a CUDA machine keeps the torch it has.
TORCH  ?= torch==2.13.0
ARGS   ?=
CHROMIUM := /usr/bin/chromium
# The shared store's tests start their own PostgreSQL server from Debian's package.
POSTGRES := /usr/lib/postgresql

.PHONY: run test setup-run setup-test clean

# Independent set-up steps run side by side: on a clean CI machine the Python environment
# is built while apt-get fetches and installs Chromium and PostgreSQL.
MAKEFLAGS += --jobs=2

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

# One pip call per set-up, torch included where it is missing (a single resolution), and
# without pip's bytecode compilation, which runs on one core: `compileall` then uses all
# of them (on the 2-core CI machine the whole test set-up went from 113 s to 72 s). A file
# a package ships that this Python cannot compile is left to be compiled at import, as
# pip leaves it. gpuvs's own source and tests are compiled too: the install is editable,
# and where PYTHONDONTWRITEBYTECODE is set (this box, CI) every worker, rank and command
# the tests start compiled them again (process-heavy test files ran 10 % faster with them
# compiled). Python reads a .pyc only while it matches its source.
PIP_INSTALL = $(BIN)/python -m pip install -q --no-compile \
	$$($(BIN)/python -c "import torch" 2>/dev/null || echo "$(TORCH)")
COMPILE = $(BIN)/python -m compileall -q -j 0 \
	"$$($(BIN)/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" \
	src tests >/dev/null || true

# `make run` compiles only what its run loads: it imports what the command and each
# worker of the first-answer suite import (their frameworks started, their workloads'
# preloads run) with bytecode writing on, so each module is compiled once, as it is
# imported, into its __pycache__ — about 950 of site-packages' 7600 files with torch,
# where compiling all of them took 12 s of a 26 s set-up.
define IMPORT_RUN
import sys
import gpuvs.cli, gpuvs.execute.worker, gpuvs.report.layout, gpuvs.report.verdict
from gpuvs import backends, workloads
from gpuvs.config import RunConfig
from gpuvs.execute import plan
for case in plan.expand(RunConfig()):
    backend = backends.get(case.backend)
    if backend.unavailable_reason(case.device) is None:
        backend.preload(case.device)
        workloads.get(case.workload).preload(backend, case)
endef
export IMPORT_RUN
COMPILE_RUN = env -u PYTHONDONTWRITEBYTECODE $(BIN)/python -c "$$IMPORT_RUN"

$(VENV)/.setup-run: $(BIN)/python pyproject.toml
	$(PIP_INSTALL) -e .
	$(COMPILE_RUN)
	touch $@

# The test extra holds the package's own requirements too: one call sets up both.
$(VENV)/.setup-test: $(BIN)/python pyproject.toml
	$(PIP_INSTALL) -e ".[test]"
	$(COMPILE)
	touch $(VENV)/.setup-run $@

# The report's browser test drives Debian's chromium (no browser download: the package);
# the PostgreSQL store's tests start a private server from Debian's binaries (never the
# package's own cluster). CI runs as root on Debian: both come from one `apt-get update`
# (a grouped target: the recipe runs once for either), and the recipe says so before it
# installs anything: on a bare Debian their dependencies are about 115 packages. Elsewhere,
# without root, those tests skip and say how to install them.
APT_PACKAGES := chromium postgresql
$(CHROMIUM) $(POSTGRES) &:
	@if command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ]; then \
		echo "make test: installing $(APT_PACKAGES) through apt-get, with their dependencies (about 115 Debian packages on a bare system): the report's browser test and the PostgreSQL store's tests need them (without them, those tests skip)"; \
		apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $(APT_PACKAGES); \
	else echo "note: no $(CHROMIUM) or $(POSTGRES), and apt-get as root is not available to install them ($(APT_PACKAGES)): the tests that need them skip"; fi

setup-run: $(VENV)/.setup-run
setup-test: $(VENV)/.setup-test $(CHROMIUM) $(POSTGRES)

## make run: set up, then run the default suite (matmul and elementwise on every backend)
run: setup-run
	$(BIN)/gpuvs run $(ARGS)

## make test: set up the test tools, then run the test suite (GPU tests are deselected
## without `-m gpu`: `make test ARGS="-m gpu"` runs them on a machine with CUDA)
test: setup-test
	$(BIN)/python -m pytest $(ARGS)

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info
