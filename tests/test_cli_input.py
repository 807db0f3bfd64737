"""Bad input in every place a user can put it (flags, [tool.gpuvs], the environment,
paths) is one line and exit 2; a signal ends a run as `interrupted`, and `--resume
latest` finishes it; `--axis` picks cases."""

from __future__ import annotations

import os
import signal
import sqlite3
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.helpers import interruptible, invoke, stored_count

QUICK = ["--budget", "0.1", "--backend", "numpy", "--device", "cpu"]
REPO = Path(__file__).resolve().parents[1]


def one_line_error(result, message: str) -> None:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    assert message in lines[0], lines[0]


@pytest.mark.parametrize(("args", "message"), [
    (["-s", "1e30"], "size '1e30' is not a positive integer up to 1e15"),
    (["-s", "1:1e30"], "size '1e30' is not a positive integer up to 1e15"),
    (["--criterion", "fixed:n=0"], "criterion parameter n=0 must be a whole number from 1"),
    (["--criterion", "fixed:n=2.5"], "criterion parameter n=2.5 must be a whole number"),
    (["--criterion", "median-ci:rel=-1"], "criterion parameter rel=-1 must be a positive"),
    (["--variant", "tuned"], "no variant tuned in matmul (it has as_written, correct)"),
    (["-a", "shape=round"], "no case has shape=round; accepted values of shape here: "
                            "seed000, square"),
    (["-a", "shape"], "axis 'shape' must be NAME=VALUE"),
])
def test_bad_flags_fail_before_anything_runs(args, message, db) -> None:
    one_line_error(invoke("run", "-w", "matmul", *QUICK, *args, "--db", db), message)
    assert not Path(db).exists() or not sqlite3.connect(db).execute(
        "select count(*) from runs").fetchone()[0]  # no empty run was stored


@pytest.mark.parametrize(("setting", "message"), [
    ("sizes = [-5, 0]", "size '-5' is not a positive integer"),
    ('cold = "no"', "cold in [tool.gpuvs] of pyproject.toml must be true or false; got 'no'"),
    ('backends = "numpy"', "backends in [tool.gpuvs] of pyproject.toml must be a list, e.g. "
                           'backends = ["numpy", "torch"]'),
    ('budget_s = "x"', "budget_s in [tool.gpuvs] of pyproject.toml must be a number"),
    ("passes = 1.5", "passes in [tool.gpuvs] of pyproject.toml must be a whole number"),
    ("sizes = [", "pyproject.toml is not valid TOML"),
    ('criterion = "fixed:n=0"', "criterion parameter n=0 must be a whole number from 1"),
    ("sizes = []", "sizes in [tool.gpuvs] of pyproject.toml is empty; list at least one, "
                   "e.g. sizes = [1000, 4096], or leave the key out for gpuvs's default"),
    ("backends = []", "backends in [tool.gpuvs] of pyproject.toml is empty"),
])
def test_bad_pyproject_values_are_one_line(setting, message, tmp_path) -> None:
    (tmp_path / "pyproject.toml").write_text(f"[tool.gpuvs]\n{setting}\n")
    result = invoke("run", "-w", "matmul", "--db", str(tmp_path / "r.sqlite"), cwd=tmp_path)
    one_line_error(result, message)


def test_a_bad_plugin_module_is_one_line_even_from_list() -> None:
    env = os.environ | {"GPUVS_PLUGINS": "no_such_module_here"}
    done = subprocess.run([sys.executable, "-m", "gpuvs", "list"], capture_output=True,
                          text=True, env=env, timeout=120)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert ("GPUVS_PLUGINS names 'no_such_module_here', which cannot be imported"
            in done.stderr)


def test_db_in_a_missing_directory_is_refused_not_created(tmp_path) -> None:
    missing = tmp_path / "typo" / "r.sqlite"
    one_line_error(invoke("run", "-w", "matmul", *QUICK, "--db", str(missing)),
                   f"its directory {missing.parent} does not exist")
    assert not missing.parent.exists()


@pytest.mark.parametrize("command", [["show", "latest"], ["runs"], ["compare", "a", "b"],
                                     ["check", "--baseline", "latest"], ["report", "latest"]])
def test_reading_commands_never_create_a_database(command, tmp_path) -> None:
    missing = tmp_path / "none.sqlite"
    one_line_error(invoke(*command, "--db", str(missing)), f"no results database at {missing}")
    assert not missing.exists()


def test_json_to_a_path_under_a_file_fails_before_the_run(tmp_path, db) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    result = invoke("run", "-w", "matmul", *QUICK, "--json", str(blocker / "x.json"),
                    "--db", db)
    one_line_error(result, f"cannot write {blocker / 'x.json'}: {blocker} is a file")


def test_a_database_on_read_only_storage_is_still_read(tmp_path) -> None:
    source, mount = tmp_path / "src", tmp_path / "ro"
    source.mkdir()
    mount.mkdir()
    gpuvs = [sys.executable, "-m", "gpuvs"]
    subprocess.run([*gpuvs, "run", "-w", "matmul", "-s", "64", *QUICK, "--db",
                    str(source / "r.sqlite")], check=True, capture_output=True, timeout=120)
    bound = subprocess.run(["mount", "--bind", str(source), str(mount)], capture_output=True)
    if bound.returncode != 0:
        pytest.skip("a read-only bind mount needs root: " + bound.stderr.decode().strip())
    try:
        assert subprocess.run(["mount", "-o", "remount,ro,bind", str(mount)]).returncode == 0
        shown = subprocess.run([*gpuvs, "show", "latest", "--db", str(mount / "r.sqlite")],
                               capture_output=True, text=True, timeout=120)
        assert shown.returncode == 0, shown.stderr
        assert "Square matrix product, float32" in shown.stdout
    finally:
        subprocess.run(["umount", str(mount)])


def test_axis_keeps_one_case_per_size(db, tmp_path) -> None:
    out = tmp_path / "r.json"
    result = invoke("run", "-w", "matmul", "-s", "64,128", *QUICK, "-a", "shape=square",
                    "-a", "data=resident", "--json", str(out), "--db", db)
    assert result.exit_code == 0, result.output
    keys = [r[0] for r in sqlite3.connect(db).execute(
        "select case_key from measurements where workload != 'calibration' order by id")]
    assert keys == ["matmul/correct/numpy/cpu/float32/64,shape=square",
                    "matmul/correct/numpy/cpu/float32/128,shape=square"]


@pytest.mark.usefixtures("worker_env")
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_marks_the_run_interrupted_and_resume_latest_finishes_it(db, sig) -> None:
    # Calls of 20-100 ms, and a criterion no case meets within the budget: every case
    # samples its whole 0.4 s, none ends early, so the three left after the second is
    # recorded hold the run open for over a second — the signal lands mid-run, while
    # `--resume` has only those three to measure.
    cmd = [sys.executable, "-m", "gpuvs", "run", "-w", "test_spin", "-s",
           "2e4,4e4,6e4,8e4,1e5", "-b", "numpy", "-d", "cpu", "--budget", "0.4", "--passes",
           "1", "--criterion", "fixed:n=40", "--db", db]
    proc = interruptible(cmd, stderr=subprocess.PIPE)
    deadline = time.time() + 60
    while time.time() < deadline and stored_count(db) < 2:
        time.sleep(0.2)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert f"stopped by {sig.name}" in err
    assert "`gpuvs run --resume latest` finishes it" in err
    status, reason = sqlite3.connect(db).execute("select status, reason from runs").fetchone()
    assert (status, reason) == ("interrupted", f"stopped by {sig.name}")
    kept = stored_count(db)
    resumed = invoke("run", "--resume", "latest", "--db", db)
    assert resumed.exit_code == 0, resumed.output
    assert f"{kept} already recorded" in resumed.output
    assert f"[{5 - kept}/{5 - kept}]" in resumed.output  # counts only what is left
    assert stored_count(db) == 5


def test_resume_refuses_flags_that_would_change_the_stored_run(db) -> None:
    one_line_error(invoke("run", "--resume", "latest", "-s", "64", "--budget", "2", "--db", db),
                   "--resume finishes a run with the settings it was started with; drop -s, "
                   "--budget")


def test_resume_latest_with_nothing_to_resume_says_so(db) -> None:
    assert invoke("run", "-w", "matmul", "-s", "64", *QUICK, "--db", db).exit_code == 0
    one_line_error(invoke("run", "--resume", "latest", "--db", db),
                   "--resume latest: no interrupted run in this database")


@pytest.mark.usefixtures("worker_env")
def test_a_full_disk_mid_run_fails_the_run_in_one_line_and_keeps_its_cases(tmp_path) -> None:
    disk = tmp_path / "small"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=160k", "tmpfs", str(disk)],
                             capture_output=True)
    if mounted.returncode != 0:
        pytest.skip("a small tmpfs needs root: " + mounted.stderr.decode().strip())
    try:
        db = disk / "r.sqlite"
        done = subprocess.run([sys.executable, "-m", "gpuvs", "run", "-w", "test_spin", "-s",
                               "10:1e5:1.5", "-b", "numpy", "-d", "cpu", "--budget", "0.05",
                               "--passes", "1", "--db", str(db)],
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 2, done.stderr
        assert "Traceback" not in done.stderr
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and "database or disk is full" in lines[0], lines
        assert "every case finished before it is kept" in lines[0]
        with sqlite3.connect(db) as c:
            status = c.execute("select status from runs").fetchone()[0]
            kept = c.execute("select count(*) from measurements").fetchone()[0]
        assert status in ("failed", "running")  # marked failed where the disk still let it
        assert kept >= 1
        assert f"[{kept}/" in done.stdout  # every case printed as finished is still stored
    finally:
        # Lazily: a worker of the failed run may still hold a file there for a moment, and
        # a plain umount would then leave the mount behind.
        subprocess.run(["umount", "--lazy", str(disk)])


def test_a_dry_run_or_a_refused_resume_creates_no_database(tmp_path) -> None:
    """--dry-run stores nothing, and a --resume refused for its flags opens nothing: no
    database file appears where none was."""
    db = tmp_path / "never.sqlite"
    assert invoke("run", "--dry-run", "--db", str(db)).exit_code == 0
    assert invoke("sweep", "matmul", "--dry-run", "--db", str(db)).exit_code == 0
    one_line_error(invoke("run", "--resume", "latest", "--all", "--db", str(db)),
                   "drop --all")
    assert not db.exists()


@pytest.mark.parametrize(("args", "message"), [
    (["run", "--budget", "abc"], "Invalid value for '--budget'"),
    (["run", "--no-such-flag"], "No such option: --no-such-flag"),
    (["show"], "Missing argument 'run_id'; `gpuvs show --help` lists what it accepts"),
    (["run", "--passes"], "Option '--passes' requires an argument"),
    (["no-such-command"], "No such command 'no-such-command'"),
    (["runs", "--limit", "1.5"], "Invalid value for '--limit'"),
])
def test_the_parsers_own_errors_are_one_line_too(args, message) -> None:
    """click's usage, hint and message came on three lines; gpuvs's errors are one."""
    result = invoke(*args)
    one_line_error(result, message)
    assert result.output.startswith("error: ")


def test_the_hint_names_gpuvs_however_it_was_started() -> None:
    """`python -m gpuvs` is click's program name there; the hint still says `gpuvs …`."""
    done = subprocess.run([sys.executable, "-m", "gpuvs", "dist", "collectives", "--energy"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stderr.strip() == (
        "error: No such option: --energy; `gpuvs dist collectives --help` lists what it "
        "accepts")


@pytest.mark.parametrize(("args", "message"), [
    (["-s", ""], "-s/--sizes was given an empty value; accepted: a list (1000,4096)"),
    (["-b", ""], "-b/--backend was given an empty value; accepted: cupy, jax, numpy, "),
    (["-b", "numpy", "-b", " "], "-b/--backend was given an empty value"),
    (["-d", ""], "-d/--device was given an empty value; accepted: cpu, cuda, cuda:N"),
    (["--variant", ""], "--variant was given an empty value; accepted: as_written, correct"),
    (["--dtype", ","], "--dtype was given an empty value; accepted: float16, bfloat16"),
    (["-w", ""], "-w/--workload was given an empty value"),
    (["--db", ""], "Invalid value for '--db': an empty value"),
    (["-s", "1e3:1e5:inf"], "size range factor 'inf' must be a number above 1 and finite"),
    (["-s", "1e3:1e5:nan"], "size range factor 'nan' must be a number above 1 and finite"),
    (["-s", "1:1e6:1.001"], "size range '1:1e6:1.001' makes 13,823 sizes; a range makes "
                            "at most 200"),
    (["--budget", "nan"], "--budget must be a positive number of seconds up to 604,800 "
                          "(a week); got nan"),
    (["--timeout", "inf"], "--timeout must be a positive number of seconds up to 604,800 "
                           "(a week); got inf"),
    (["--timeout", "1e10"], "--timeout must be a positive number of seconds up to 604,800 "
                            "(a week); got 10000000000.0"),
    (["--criterion", "fixed:n=1e12"], "criterion parameter n=1e+12 must be a whole number "
                                      "from 1 to 1,000,000"),
])
def test_empty_and_non_finite_values_are_refused_not_defaulted(args, message) -> None:
    """An empty -b once ran every backend, `1e3:1e5:inf` one size: each is refused."""
    one_line_error(invoke("run", *args, "--dry-run"), message)


def test_an_empty_resume_is_refused_not_a_new_run(db) -> None:
    one_line_error(invoke("run", "--resume", "", "--db", db),
                   "--resume was given an empty value; give a run id or latest")
    assert not Path(db).exists()


def test_a_plan_of_more_than_a_thousand_cases_needs_yes(db) -> None:
    sizes = ["-s", "1:1e15:1.2,3:9e14:1.2,5:9e14:1.2", "-b", "numpy", "-d", "cpu"]
    many = ["-w", "matmul", *sizes, "--db", db]
    shown = invoke("run", *many, "--dry-run")
    assert shown.exit_code == 0, shown.output
    n = int(shown.output.split()[0])
    assert n > 1000
    one_line_error(invoke("run", *many), f"this plan has {n:,} cases, more than 1,000; "
                   "--dry-run shows it, -w, -s or -a narrow it, --yes starts it")
    one_line_error(invoke("sweep", "matmul", *sizes, "--db", db), f"this plan has {n:,} cases")
    assert not Path(db).exists()
    # --yes lets it past the count, to the next check: an unknown backend named here.
    one_line_error(invoke("run", *many, "--yes", "--criterion", "nonesuch"),
                   "unknown criterion 'nonesuch'")


@pytest.mark.parametrize("value", ["nan", "-1", "inf"])
def test_run_file_refuses_a_tolerance_that_is_negative_or_not_finite(value, tmp_path,
                                                                      db) -> None:
    script = tmp_path / "work.py"
    script.write_text("def f(x):\n    return x\n\ndef inputs(size):\n    return (size,)\n")
    one_line_error(invoke("run-file", f"{script}::f", "--tolerance", value, "-d", "cpu",
                          "--db", db),
                   f"--tolerance must be a finite number from 0, e.g. 1e-3; got {float(value)}")


@pytest.mark.parametrize(("content", "message"), [
    (b"[tool.gpuvs]\nbudget_s = 1.0 # \xff\xfe\n",
     "pyproject.toml is not valid TOML: byte 30 is not UTF-8, which TOML files must be"),
    (b"[tool.gpuvs]\nsizes = " + b"[" * 5000 + b"]" * 5000 + b"\n",
     "pyproject.toml is not TOML gpuvs reads: its arrays or tables are nested too deeply"),
])
def test_a_pyproject_that_is_not_utf8_or_nested_too_deeply_is_one_line(content, message,
                                                                      tmp_path) -> None:
    (tmp_path / "pyproject.toml").write_bytes(content)
    one_line_error(invoke("run", "--dry-run", cwd=tmp_path), message)


@pytest.mark.parametrize(("url", "message"), [
    ("postgresql://ann:s3cret@db.example:abc/results",
     "cannot open the results database postgresql://db.example:abc/results: Port could not "
     "be cast to integer value as 'abc'"),
    ("postgresql://ann:s3cret@db.example:99999/results",
     "cannot open the results database postgresql://db.example:99999/results: Port out of "
     "range"),
    ("postgresql://ann:s3cret@[::1/results", "Invalid IPv6 URL"),
])
def test_a_postgresql_url_with_a_bad_port_is_one_line_and_hides_the_password(
        url, message, monkeypatch) -> None:
    pytest.importorskip("psycopg")
    for given in (["--db", url], []):  # the flag, and the environment variable
        monkeypatch.setenv("GPUVS_DB", url)
        result = invoke("runs", *given)
        one_line_error(result, message)
        assert "s3cret" not in result.output


@pytest.mark.parametrize("span", ["99999999999d", "1000000d", "999999w",
                                  "99999999999999999999999999h"])
def test_runs_since_an_absurd_span_is_one_line(span, db) -> None:
    one_line_error(invoke("runs", "--since", span, "--db", db),
                   f"--since {span!r} reaches back before the year 1")


def _stored_run(db: str) -> str:
    from gpuvs.model import Case, Environment, Measurement, Run, Status
    from gpuvs.store import open_store
    with open_store(db) as store:
        store.create_run(Run("r1", "2026-01-01T00:00:00+0000", {"budget_s": 1.0},
                             Environment("fp", {})))
        store.save("r1", Measurement(Case("matmul", "correct", "numpy", "cpu", "float32", 64),
                                     Status.OK, samples=(1e-3, 1.1e-3)))
    return "r1"


@pytest.mark.parametrize("kind", ["symlink", "fifo", "device"])
def test_an_output_onto_a_link_a_fifo_or_a_device_is_refused_not_replaced(kind, tmp_path,
                                                                         db) -> None:
    """The atomic rename put a regular file in their place and said "wrote"."""
    target = tmp_path / "target.json"
    target.write_text("kept")
    where = {"symlink": tmp_path / "link.json", "fifo": tmp_path / "fifo",
             "device": tmp_path / "null"}[kind]
    if kind == "symlink":
        where.symlink_to(target)
    elif kind == "fifo":
        os.mkfifo(where)
    else:  # a private twin of /dev/null: a regression replaces it, never the system's
        try:
            os.mknod(where, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        except PermissionError:
            pytest.skip("making a device node needs root")
    word = {"symlink": "a symbolic link", "fifo": "a FIFO", "device": "a device"}[kind]
    run = _stored_run(db)
    one_line_error(invoke("export", run, "-o", str(where), "--db", db),
                   f"{where} is {word}; gpuvs writes regular files only, so it would be "
                   "replaced: give the path of a regular file or a new one")
    one_line_error(invoke("report", run, "-o", str(where), "--db", db), f"{where} is {word}")
    one_line_error(invoke("run", "-w", "matmul", *QUICK, "--json", str(where), "--db", db),
                   f"{where} is {word}")  # before the run, not after it
    assert where.is_symlink() if kind == "symlink" else not where.is_file()
    assert target.read_text() == "kept"


@pytest.mark.parametrize("command", [["run", "-w", "matmul"], ["sweep", "matmul"],
                                     ["seeds", "--seed", "0"]])
def test_cuda_alone_without_a_gpu_is_refused_before_a_run_is_stored(command, tmp_path
                                                                    ) -> None:
    """`-d cuda` here would have stored a run of unavailable cases and exited 0: one line
    naming what runs here, exit 2, no database. Beside the CPU, the GPU's cases are
    still said unavailable in the run (test_cli), and a dry run plans them."""
    from gpuvs.backends.base import machine_has_gpu
    if machine_has_gpu():
        pytest.skip("this machine has a CUDA device")
    db = tmp_path / "never.sqlite"
    one_line_error(invoke(*command, "-d", "cuda", "--db", str(db)),
                   "-d cuda: this machine shows no NVIDIA device, so no case would run; "
                   "here -d cpu runs numpy")
    assert not db.exists()
    assert invoke(*command, "-d", "cuda", "--dry-run", "--db", str(db)).exit_code == 0


def test_a_dry_run_names_each_axis_a_workload_adds(tmp_path) -> None:
    """`-w matmul` is measured whole: its plan says it holds seed 000's shape beside the
    square one, instead of adding it quietly, and where its estimate comes from."""
    result = invoke("run", "-w", "matmul", "-s", "256:1024:2", "--dry-run",
                    "--db", str(tmp_path / "never.sqlite"))
    assert result.exit_code == 0, result.output
    assert "shape seed000, square" in result.output
    assert "a model: no past run of these cases on this machine" in result.output
    square = invoke("run", "-w", "matmul", "-s", "256:1024:2", "-a", "shape=square",
                    "--dry-run", "--db", str(tmp_path / "never.sqlite"))
    assert "shape square;" in square.output or square.output.rstrip().endswith("shape square")


def _runs(db: str) -> int:
    try:
        with sqlite3.connect(db) as c:
            return int(c.execute("select count(*) from runs").fetchone()[0])
    except sqlite3.OperationalError:  # not created yet
        return 0


def test_an_interrupted_seeds_run_names_a_command_seeds_accepts(db) -> None:
    """It said `gpuvs seeds 000 002`, which seeds refuses, and a `--resume` it lacks."""
    import re
    import shlex
    cmd = [sys.executable, "-m", "gpuvs", "seeds", "--seed", "0", "--quick", "-d", "cpu",
           "--budget", "0.05", "--db", db]
    proc = interruptible(cmd, stderr=subprocess.PIPE)
    deadline = time.time() + 300
    while time.time() < deadline and not _runs(db) and proc.poll() is None:
        time.sleep(0.1)
    time.sleep(1.0)  # its workers start (they import torch): the signal lands mid-run
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    found = re.search(r"`(gpuvs seeds [^`]*)` measures them again", err)
    assert found is not None, err
    assert found.group(1) == "gpuvs seeds --seed 000 --quick -d cpu --budget 0.05"
    assert "--resume" not in err
    again = invoke(*shlex.split(found.group(1))[1:], "--dry-run", "--db", db)
    assert again.exit_code == 0, again.output


def test_a_fifo_as_the_step_summary_is_refused_in_one_warning_and_never_blocks(
        tmp_path) -> None:
    """A FIFO with no reader blocked `--format md` forever; so would the store, damaged."""
    from gpuvs.store import open_store
    db = tmp_path / "r.sqlite"
    _stored_run(str(db))
    fifo = tmp_path / "summary"
    os.mkfifo(fifo)
    for summary, why in ((fifo, "it is a FIFO, not a regular file"),
                         (db, "it holds a SQLite database, not a step summary")):
        done = subprocess.run([sys.executable, "-m", "gpuvs", "show", "r1", "--format", "md",
                               "--db", str(db)], capture_output=True, text=True, timeout=120,
                              env={**os.environ, "GITHUB_STEP_SUMMARY": str(summary)})
        assert done.returncode == 0, done.stderr
        assert done.stderr.splitlines() == [
            f"warning: cannot append to $GITHUB_STEP_SUMMARY ({summary}): {why}; the "
            "command's result is unchanged"]
        assert "| size |" in done.stdout
    with open_store(str(db), reading=True) as store:
        assert [m.case.size for m in store.measurements("r1")] == [64]


def test_stored_text_is_escaped_in_markdown_and_the_step_summary(tmp_path,
                                                                 monkeypatch) -> None:
    """A name from the store with `|`, backticks, `<script>` or a newline went through
    raw: it broke the table, or ran as markup in the PR comment and the summary."""
    from gpuvs.model import Case, Environment, Measurement, Run, Status
    from gpuvs.store import open_store
    db, summary = str(tmp_path / "r.sqlite"), tmp_path / "summary.md"
    hostile = "a|b `rm -rf` <script>alert(1)</script>\n# head [x](http://e) &lt;"
    with open_store(db) as store:
        for run_id in ("r1", "r2"):
            store.create_run(Run(run_id, "2026-01-01T00:00:00+0000", {}, Environment("fp", {}),
                                 "finished", "2026-01-01T00:01:00+0000"))
            store.save(run_id, Measurement(Case("matmul", "correct", "numpy", "cpu", "float32",
                                                64, (("shape", hostile),)), Status.OK,
                                           samples=(1e-3, 1.1e-3, 1.05e-3) * 4))
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    result = invoke("check", "--baseline", "r1", "--run", "r2", "--format", "md", "--db", db)
    assert result.exit_code == 0, result.output
    escaped = ("a\\|b \\`rm -rf\\` \\<script\\>alert(1)\\</script\\> # head "
               "\\[x\\](http://e) \\&lt;")
    written = summary.read_text()
    for shown in (result.stdout, written):
        assert escaped in shown
        assert "<script>" not in shown and " `rm" not in shown
        rows = [x for x in shown.splitlines() if x.startswith("|")]
        assert len({x.replace("\\|", "").count("|") for x in rows}) == 1  # none broken
