"""A PgBouncer of a test's own, in transaction mode, in front of the tests' database.

Debian's `pgbouncer` package, started on a free port with a configuration written to a
temporary folder, as the private server is (private_pg.py). Clients connect to it as
the tests' database user, with no password; every transaction may run on another
server connection, as it does behind a pooler that a deployment shares.
"""

import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from e2e.tether import dying_with_this_thread
from tests.jobs.private_pg import READY, RETRY_EVERY, free_port, server_user

POOL_SIZE = 20  # server connections PgBouncer opens at the most, for all its clients
MOST_CLIENTS = 200  # client connections it accepts
PROGRAM = "pgbouncer"  # on the PATH, or in /usr/sbin where Debian puts it


class PgBouncer:
    """A PgBouncer in transaction mode in front of the database at `url`, on a port of its own."""

    def __init__(self, folder: Path, url: str):
        self.folder = folder
        self.port = free_port()
        server = conninfo_to_dict(url)
        self.user, self.dbname = server.get("user", "postgres"), server.get("dbname", "postgres")
        self.url = make_conninfo(host="127.0.0.1", port=self.port, user=self.user, dbname=self.dbname)
        self.log = folder / "pgbouncer.log"
        target = make_conninfo(
            host=server.get("host", "127.0.0.1"), port=server.get("port", "5432"), dbname=self.dbname, user=self.user
        )
        (folder / "users.txt").write_text(f'"{self.user}" ""\n')
        (folder / "pgbouncer.ini").write_text(
            "\n".join(
                [
                    "[databases]",
                    f"{self.dbname} = {target}",
                    "[pgbouncer]",
                    "listen_addr = 127.0.0.1",
                    f"listen_port = {self.port}",
                    "unix_socket_dir =",
                    "auth_type = trust",
                    f"auth_file = {folder / 'users.txt'}",
                    "pool_mode = transaction",
                    f"default_pool_size = {POOL_SIZE}",
                    f"max_client_conn = {MOST_CLIENTS}",
                    "ignore_startup_parameters = extra_float_digits",
                    f"logfile = {self.log}",
                    f"pidfile = {folder / 'pgbouncer.pid'}",
                ]
            )
            + "\n"
        )
        self.process: subprocess.Popen[bytes] | None = None  # started by `start`

    def start(self) -> "PgBouncer":
        user = server_user()  # PgBouncer refuses to run as root
        if user:
            shutil.chown(self.folder, user)
        # Started as that user rather than with -u, whose change of user would undo the tie to this run.
        self.process = subprocess.Popen(
            [program(), str(self.folder / "pgbouncer.ini")],
            user=user,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.STDOUT,
            preexec_fn=dying_with_this_thread(),
        )
        waited_until_up(self)
        return self

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=READY)

    def connect(self, **options) -> psycopg.Connection:
        """A connection through PgBouncer, with psycopg's prepared statements off (see "Behind PgBouncer" in
        jobs/README.md)."""
        return psycopg.connect(self.url, autocommit=True, prepare_threshold=None, **options)

    def logged(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""


def program() -> str:
    found = shutil.which(PROGRAM) or shutil.which(PROGRAM, path="/usr/sbin")
    assert found, "these tests need PgBouncer (apt-get install pgbouncer)"
    return found


def waited_until_up(bouncer: PgBouncer) -> None:
    """Returns once a query passes through `bouncer`; fails with its log when it exited or never answered."""
    assert bouncer.process is not None, "waited_until_up is for a PgBouncer started"
    deadline = time.monotonic() + READY
    while True:
        if bouncer.process.poll() is not None:
            raise AssertionError(f"pgbouncer exited with {bouncer.process.returncode}:\n{bouncer.logged()}")
        try:
            with bouncer.connect() as db:
                db.execute("SELECT 1")
                return
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise AssertionError(f"pgbouncer never answered:\n{bouncer.logged()}") from None
            time.sleep(RETRY_EVERY)  # a poll of the condition, bounded by the deadline


def started(url: str) -> PgBouncer:
    """A started PgBouncer in front of `url`, in a new temporary folder; `removed` stops it and deletes it."""
    return PgBouncer(Path(tempfile.mkdtemp(prefix="jobs-pgbouncer-")), url).start()


def removed(bouncer: PgBouncer) -> None:
    bouncer.stop()
    shutil.rmtree(bouncer.folder, ignore_errors=True)
