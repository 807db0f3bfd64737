"""A private PostgreSQL server for the session, and a fresh database for each test.

The server is Debian's `postgresql` package (`make test` installs it as root, as CI
runs; see the Makefile), started from its binaries into a temporary directory: its own
data, a unix socket only, trust authentication. As root it runs as the `postgres` user
the package creates (PostgreSQL refuses to run as root). Where the binaries are absent —
a developer machine without root — the PostgreSQL tests skip and say how to install;
as root (CI) they fail instead, since `make test` should have installed them."""

from __future__ import annotations

import glob
import os
import shutil
import signal
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

INSTALL = ("PostgreSQL server binaries not found (/usr/lib/postgresql/*/bin): as root, "
           "`apt-get install postgresql` (make test does), or install PostgreSQL 13+")


def _bin() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"))
    return Path(found[-1]).parent if found else None


def _as_server_user(cmd: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return cmd
    return ["runuser", "-u", "postgres", "--", *cmd]


class Server:
    """The private server, which a test may stop and start again (a restart a store must
    live through): same data, same socket."""

    def __init__(self, binaries: Path, data: Path, sockets: Path) -> None:
        self.binaries, self.data, self.sockets = binaries, data, sockets
        self.url = f"postgresql://postgres@/{{}}?host={sockets}"  # {} is the database
        self.process: subprocess.Popen[str] | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(_as_server_user([
            str(self.binaries / "postgres"), "-D", str(self.data), "-k", str(self.sockets),
            "-c", "listen_addresses=", "-c", "fsync=off", "-c", "max_connections=50"]),
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        _wait_ready(self.url.format("postgres"), self.process)

    def stop(self) -> None:
        """A fast shutdown, as an operator's restart does: every client is disconnected."""
        if self.process is not None and self.process.poll() is None:
            # The postmaster itself (as root, the process started is runuser's).
            pid = int((self.data / "postmaster.pid").read_text().split()[0])
            os.kill(pid, signal.SIGINT)
            self.process.wait(timeout=30)


@pytest.fixture(scope="session")
def postgres(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    pytest.importorskip("psycopg")
    binaries = _bin()
    if binaries is None and os.geteuid() == 0:  # CI: make test installs it as root
        pytest.fail(INSTALL)
    if binaries is None:
        pytest.skip(INSTALL)
    # Not under pytest's temporary root: it is private to root, and the server is not.
    home = Path(tempfile.mkdtemp(prefix="gpuvs-postgres-"))
    data, sockets = home / "data", home / "run"
    sockets.mkdir()
    if os.geteuid() == 0:
        shutil.chown(home, "postgres")
        shutil.chown(sockets, "postgres")
    subprocess.run(_as_server_user([str(binaries / "initdb"), "-D", str(data), "-A", "trust",
                                    "-U", "postgres", "--no-sync"]),
                   check=True, capture_output=True)
    server = Server(binaries, data, sockets)
    try:
        server.start()
        yield server
    finally:
        if server.process is not None:
            server.process.terminate()
            server.process.wait(timeout=30)
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_server(postgres: Server) -> str:
    """A URL with `{}` for the database's name, over the server's unix socket."""
    return postgres.url


def _wait_ready(url: str, server: subprocess.Popen[str]) -> None:
    import time

    import psycopg

    deadline = time.monotonic() + 60
    while True:
        try:
            psycopg.connect(url, connect_timeout=2).close()
            return
        except psycopg.OperationalError:
            if server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the test PostgreSQL server did not start: "
                                   f"{server.stderr.read() if server.stderr else ''}") from None
            time.sleep(0.2)


@pytest.fixture
def postgres_db(postgres_server: str) -> Iterator[str]:
    """The URL of a fresh, empty database of its own for one test."""
    import psycopg

    name = f"gpuvs_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres_server.format("postgres"), autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    yield postgres_server.format(name)
    with psycopg.connect(postgres_server.format("postgres"), autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(params=["sqlite", "postgresql"])
def any_db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh, empty store of each kind, as `--db` names it: a SQLite file, then a
    PostgreSQL database of the private server. Every test of the store's contract runs
    on both: PostgreSQL once failed every second run, which no test had made."""
    if request.param == "sqlite":
        return str(tmp_path / "results.sqlite")
    return str(request.getfixturevalue("postgres_db"))
