"""Output piped to a file or a CI log reads as in a wide terminal: no table squeezed to 80
columns, no number or word split across lines, whatever COLUMNS the environment sets."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

COMMANDS = {
    "run": ["run", "-w", "matmul", "-a", "shape=square", "-b", "numpy,torch", "-d", "cpu",
            "-s", "64,512", "--budget", "0.05", "--passes", "1"],
    "sweep": ["sweep", "elementwise", "-a", "op=scale", "-b", "numpy,torch", "-d", "cpu",
              "-s", "1e3,1e5", "--budget", "0.05", "--passes", "1"],
}  # and `gpuvs seeds --seed 0 --quick`, run once for several tests (conftest)


def gpuvs(args: list[str], db: Path, columns: str, out: Path | None = None) -> str:
    env = os.environ | {"COLUMNS": columns}
    with open(out or os.devnull, "w") as sink:
        proc = subprocess.run([sys.executable, "-m", "gpuvs", *args, "--db", str(db)],
                              stdout=sink if out else subprocess.PIPE, text=True, env=env,
                              timeout=300)
    assert proc.returncode == 0
    return out.read_text() if out else proc.stdout


def tables(text: str) -> list[tuple[str, list[str]]]:
    """(the dashes line, the rows under it) of each plain table."""
    lines, found = text.splitlines(), []
    for i, line in enumerate(lines):
        if re.fullmatch(r"-+( +-+)+", line):
            rows = []
            for row in lines[i + 1:]:  # the table ends at a blank line or a line of prose
                if not row.strip() or ("  " not in row.strip() and not _note(row)):
                    break
                rows.append(row)
            found.append((line, rows))
    return found


def _note(row: str) -> bool:
    return row.lstrip().startswith(("note:", "why:"))


@pytest.mark.parametrize("name", COMMANDS)
def test_piped_tables_keep_their_columns_at_any_columns_setting(name: str, tmp_path: Path
                                                                 ) -> None:
    db = tmp_path / "r.sqlite"
    _assert_wide_and_aligned(gpuvs(COMMANDS[name], db, columns="40", out=tmp_path / "out.txt"),
                             db)


def test_piped_seeds_tables_keep_their_columns(seed000_run) -> None:
    _assert_wide_and_aligned(seed000_run.output, seed000_run.db)  # piped, COLUMNS=40


def _assert_wide_and_aligned(text: str, db: Path) -> None:
    assert max(map(len, text.splitlines())) > 80  # not squeezed to a terminal's width
    found = tables(text)
    assert found, text
    for dashes, rows in found:
        gaps = [m.start() for m in re.finditer(r" {2}", dashes)]
        for row in rows:
            if _note(row):
                continue  # a long note has a line of its own under its row
            assert len(row) <= len(dashes), row
            assert all(row[g:g + 2] in ("  ", row[g:g + 2].rstrip(), "") for g in gaps
                       if g < len(row)), row
    # The same stored run, shown piped at two widths: the same bytes.
    narrow, wide = gpuvs(["show", "latest"], db, "40"), gpuvs(["show", "latest"], db, "400")
    assert narrow == wide


@pytest.fixture(scope="module")
def saved_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store with one run in it: a `gpuvs.compare` of NumPy's sine, saved."""
    import numpy as np

    import gpuvs

    db = tmp_path_factory.mktemp("piped") / "results.sqlite"
    gpuvs.compare(np.sin, np.ones(1000), devices=["cpu"], budget_s=0.02).save(str(db))
    return db


@pytest.mark.parametrize("args", [
    ["show", "latest", "--db", "{db}"], ["runs", "--db", "{db}"],
    ["export", "latest", "-f", "csv", "-o", "-", "--db", "{db}"],
    ["show", "latest", "--format", "json", "--db", "{db}"], ["list"], ["--help"],
    ["show", "--help"],
])
def test_a_reader_gone_from_the_pipe_is_no_error(saved_run: Path, args: list[str]) -> None:
    """Issue 42: `gpuvs show | head -1` exited 1, which fails a `pipefail` pipeline. Here
    the reader is gone before the first line: every write meets a closed pipe."""
    proc = subprocess.Popen([sys.executable, "-m", "gpuvs",
                             *(a.format(db=saved_run) for a in args)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0, err
    assert err == ""
