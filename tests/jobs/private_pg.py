"""A PostgreSQL of a test's own, for tests that stop, restart or break the server.

The shared test database must never be restarted under other tests, so a test that
does so starts one here: initdb in a temporary folder and pg_ctl on a free TCP port,
with the binaries of the `pgserver` wheel. Its address stays the same across restarts,
and its log (slow statements and lock waits included) is kept for the test to read.
"""

import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import psycopg

from e2e.leftovers import owned, swept

# Statements slower than this show in the server log, with the lock waits behind them.
SLOW_STATEMENT = 200  # ms
READY = 30.0  # seconds pg_ctl waits for the server to start or stop
SYSTEM_SERVERS = Path("/usr/lib/postgresql")  # where Debian and Ubuntu install each PostgreSQL version
RETRY_EVERY = 0.05  # seconds between tries of a server that does not answer yet
SETTINGS = {
    "listen_addresses": "'127.0.0.1'",
    "unix_socket_directories": "''",  # TCP only: workers meet a restart as an app would
    "max_connections": "200",
    "fsync": "off",  # a test's data need not survive the machine; a fast shutdown still flushes it
    "log_min_duration_statement": str(SLOW_STATEMENT),
    "log_lock_waits": "on",
    "deadlock_timeout": "100ms",  # how soon a lock wait is logged
    "log_line_prefix": "'%m [%p] %a: '",
}


class PrivatePostgres:
    """A PostgreSQL server in a folder of its own, on a port of its own.

    `bin` is the folder of the server's programs (the `pgserver` wheel's by default; see
    system_binaries for the machine's own), and `settings` are written to its
    postgresql.conf after SETTINGS. With `standby_of`, it starts as a streaming standby of
    that running server, from a base backup (pg_basebackup -R), until it is promoted.
    """

    def __init__(
        self,
        folder: Path,
        bin: Path | None = None,
        settings: dict | None = None,
        standby_of: "PrivatePostgres | None" = None,
    ):
        self.folder = folder
        self.data = folder / "data"
        self.log = folder / "server.log"
        self.port = free_port()
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"
        self.user = server_user()
        self.bin = bin or binaries()
        self.data.mkdir()
        if self.user:
            shutil.chown(self.folder, self.user)
            shutil.chown(self.data, self.user)
            os.chmod(self.folder, 0o755)
        if standby_of is None:
            self._run("initdb", "-D", self.data, "-U", "postgres", "--auth=trust", "--encoding=utf8")
        else:
            self._run(
                "pg_basebackup",
                "-D",
                self.data,
                "-R",
                "-X",
                "stream",
                "-c",
                "fast",
                "-h",
                "127.0.0.1",
                "-p",
                standby_of.port,
                "-U",
                "postgres",
            )
            os.chmod(self.data, 0o700)  # the server refuses a data folder others may read; initdb's is so
        with open(self.data / "postgresql.conf", "a") as conf:
            conf.write(f"port = {self.port}\n")
            conf.writelines(f"{name} = {value}\n" for name, value in (SETTINGS | (settings or {})).items())

    def start(self) -> "PrivatePostgres":
        self._run("pg_ctl", "-D", self.data, "-l", self.log, "-w", "-t", str(int(READY)), "start")
        return self

    def stop(self) -> None:
        """A fast shutdown: open transactions roll back, sessions are cut off, nothing is lost."""
        self._run("pg_ctl", "-D", self.data, "-w", "-t", str(int(READY)), "-m", "fast", "stop")

    def crashed(self) -> None:
        """An immediate shutdown, as a machine that loses its power: no checkpoint, sessions cut off."""
        self._run("pg_ctl", "-D", self.data, "-w", "-t", str(int(READY)), "-m", "immediate", "stop")

    def promote(self) -> None:
        """Makes a standby a primary that accepts writes, and returns once it does."""
        self._run("pg_ctl", "-D", self.data, "-w", "-t", str(int(READY)), "promote")

    def restart(self) -> None:
        self._run("pg_ctl", "-D", self.data, "-l", self.log, "-w", "-t", str(int(READY)), "-m", "fast", "restart")

    def running(self) -> bool:
        return (self.data / "postmaster.pid").exists()

    def connect(self, **options) -> psycopg.Connection:
        return psycopg.connect(self.url, autocommit=True, **options)

    def logged(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def _run(self, program: str, *args) -> None:
        command = [str(self.bin / program), *map(str, args)]
        subprocess.run(command, check=True, user=self.user, cwd=self.folder, capture_output=True, timeout=READY + 10)


def free_port() -> int:
    """A TCP port nothing listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def server_user() -> str | None:
    """The system user to run PostgreSQL as: none of our own unless we are root, which it refuses."""
    if os.geteuid() != 0:
        return None
    from pgserver.utils import ensure_user_exists

    ensure_user_exists("pgserver")
    return "pgserver"


def binaries() -> Path:
    from pgserver._commands import POSTGRES_BIN_PATH

    return Path(POSTGRES_BIN_PATH)


def system_binaries() -> Path:
    """The programs of the machine's own PostgreSQL (a Debian or Ubuntu package), built with JIT.

    The newest version under SYSTEM_SERVERS whose lib folder holds llvmjit.so; an
    AssertionError saying what to install when there is none.
    """
    found = sorted(SYSTEM_SERVERS.glob("*/lib/llvmjit.so"), key=lambda path: int(path.parts[-3]))
    assert found, (
        f"these tests need the machine's PostgreSQL with JIT under {SYSTEM_SERVERS} (apt-get install postgresql)"
    )
    return found[-1].parent.parent / "bin"


def started(parent: str | None = None, **options):
    """A started PrivatePostgres in a new temporary folder; `removed` stops it and deletes the folder.

    The options are PrivatePostgres's `bin` and `settings`. The folder is marked as this
    run's, so that the next run stops the server and deletes the folder should this run
    be killed before `removed` (e2e/leftovers.py).
    """
    if parent is None:
        swept()
    folder = Path(tempfile.mkdtemp(prefix="jobs-private-pg-", dir=parent))
    owned(folder)
    try:
        return PrivatePostgres(folder, **options).start()
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)  # nothing runs from it: the server never started
        raise


def removed(server: PrivatePostgres) -> None:
    """Stops the server if it runs and deletes its folder."""
    if server.running():
        try:
            server._run("pg_ctl", "-D", server.data, "-w", "-m", "immediate", "stop")
        except subprocess.CalledProcessError:
            pass
    shutil.rmtree(server.folder, ignore_errors=True)


def waited_until_up(server: PrivatePostgres, timeout: float = READY) -> None:
    """Returns once the server answers a query."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with server.connect() as db:
                db.execute("SELECT 1")
                return
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(RETRY_EVERY)  # a poll of the condition, bounded by the deadline
