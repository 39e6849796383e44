"""The guestbook as the specs serve it: the README's `make run`, in a subprocess, on a fresh database.

Each guestbook gets a port of its own, BASE_URL on that port (so the links in its
letters lead back to it), a new SECRET_KEY and an outbox folder of its own; a spec
adds the rest of its configuration (MAIL_URL, MAIL_RETRY_INTERVALS,
RESET_TOKEN_MAX_AGE) as environment variables, as anyone running it would. What it
prints goes to a log file, shown when it fails to start. It runs under the tether
(tether.py), so it dies with the test run even when the run is killed, and it starts
only once no other guestbook under test is connected to the database: a stray one's
worker would take the spec's letters.
"""

import os
import re
import secrets
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import psycopg
from psycopg import sql

from .local import HOST, free_port, wait_until
from .tether import dying_with_this_thread, tethered

ROOT = Path(__file__).resolve().parents[1]  # the project, where the Makefile is
# The README's run command, on the Python that runs the specs. --old-file keeps make
# from building the virtual environment again under specs that already run in it.
COMMAND = ["make", "run", f"PY={sys.executable}", "--old-file=.venv/.installed-run"]
START_TIMEOUT = 30.0  # seconds the guestbook may take to answer its first request
STOP_TIMEOUT = 15.0  # seconds it may take to send the letter in hand and exit after SIGTERM
# How its connections show in pg_stat_activity (libpq reads PGAPPNAME), with the test run's pid.
APPLICATION = "guestbook under test"
STRAY_WAIT = 5.0  # seconds another guestbook's connections may take to close before it counts as a stray
SECRET_BYTES = 32  # random bytes in each guestbook's SECRET_KEY
# The guestbook's configuration: never inherited from the environment the specs run in.
SETTINGS = (
    "DATABASE_URL",
    "SECRET_KEY",
    "MAIL_URL",
    "MAIL_FROM",
    "MAIL_OUTBOX",
    "BASE_URL",
    "PORT",
    "HOST",
    "MAIL_RETRY_INTERVALS",
    "RESET_TOKEN_MAX_AGE",
    "TRUSTED_PROXIES",
)
TABLES = (
    "accounts",
    "entries",
    "client_tries",
    "admins",
    "jobs",
    "job_batches",
    "job_paused_queues",
    "job_limits",
    "job_pulse",
)  # the guestbook's tables and the job queue's


class Guestbook:
    """A guestbook being served from `folder` (its log and outbox live there); `url` is its address."""

    def __init__(self, database_url: str, folder: Path, settings: dict):
        self.port = free_port()
        self.url = f"http://{HOST}:{self.port}"
        self.outbox = folder / "outbox"
        self.log = folder / "guestbook.log"
        environment = {name: value for name, value in os.environ.items() if name not in SETTINGS}
        environment.update(
            PORT=str(self.port),
            BASE_URL=self.url,
            DATABASE_URL=database_url,
            SECRET_KEY=secrets.token_hex(SECRET_BYTES),
            MAIL_OUTBOX=str(self.outbox),
            PGAPPNAME=f"{APPLICATION} (run {os.getpid()})",
            **settings,
        )
        no_stray_guestbook(database_url)
        with self.log.open("wb") as log:
            # The tether leads a process group of its own: make, and the server make started.
            self.process = subprocess.Popen(
                tethered(COMMAND, STOP_TIMEOUT),
                cwd=ROOT,
                env=environment,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=dying_with_this_thread(),
            )

    def wait_until_answering(self) -> "Guestbook":
        """Returns once the guestbook answers a request; fails with its log if it exits or takes too long."""
        try:
            wait_until(self.answers, START_TIMEOUT, f"the guestbook at {self.url} to answer")
        except (TimeoutError, RuntimeError) as error:
            self.stop()
            raise RuntimeError(f"{error}; what it printed:\n{self.log.read_text()}") from None
        return self

    @property
    def key_link(self) -> str:
        """The link it printed at start, under which its pages show /outbox and /jobs."""
        found = re.search(rf"Open ({re.escape(self.url)}/[0-9a-f]+/) to see", self.log.read_text())
        if found is None:
            raise RuntimeError(f"the guestbook printed no link to open; what it printed:\n{self.log.read_text()}")
        return found.group(1)

    @property
    def keyed_url(self) -> str:
        """The guestbook's address under the printed link: `url` for the person who started it."""
        return self.key_link.rstrip("/")

    def answers(self) -> bool:
        """Whether a request for its front page gets an answer; raises RuntimeError if it has exited."""
        if self.process.poll() is not None:
            raise RuntimeError(f"the guestbook exited with status {self.process.returncode} before it answered")
        try:
            with urllib.request.urlopen(self.url, timeout=1):
                return True
        except urllib.error.HTTPError:
            return True  # an answer all the same; the specs will tell what is wrong with it
        except OSError:
            return False

    def stop(self) -> None:
        """Stops it as a platform would, with SIGTERM: the letter in hand is sent first.

        The tether passes SIGTERM to make, make to the server, and the tether SIGKILLs
        whatever is left after STOP_TIMEOUT; this waits a little longer before doing so.
        """
        self.process.terminate()
        try:
            self.process.wait(STOP_TIMEOUT + START_TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()


def no_stray_guestbook(database_url: str) -> None:
    """Waits STRAY_WAIT for other guestbooks under test to leave the database; fails naming them if one stays.

    The connections of a spec's guestbook that has just stopped may take a moment to
    close; a guestbook that stays is a stray (of a killed run, or of a run beside this
    one) whose worker would take this spec's letters.
    """
    query = """SELECT application_name, count(*), min(backend_start)::text FROM pg_stat_activity
               WHERE datname = current_database() AND application_name LIKE %s GROUP BY 1"""
    try:
        db = psycopg.connect(database_url, autocommit=True)
    except psycopg.OperationalError:
        return  # a database nobody reaches holds no stray; the guestbook will say what is wrong with it
    with db:
        try:
            wait_until(
                lambda: not db.execute(query, [APPLICATION + "%"]).fetchall(),
                STRAY_WAIT,
                "other guestbooks under test to close their connections",
            )
        except TimeoutError:
            strays = "; ".join(
                f"{count} connections of {name} since {since}"
                for name, count, since in db.execute(query, [APPLICATION + "%"])
            )
            raise RuntimeError(
                f"a guestbook not of this spec still works the mail queue of {db.info.dbname}: "
                f"{strays}; stop it (pgrep -af 'guestbook serve') before the specs run"
            ) from None


def emptied(database_url: str) -> None:
    """Empties the guestbook's tables and the job queue's where they exist, so that each spec starts afresh."""
    with psycopg.connect(database_url, autocommit=True) as db:
        found = db.execute(
            "SELECT name FROM unnest(%s::text[]) AS name WHERE to_regclass(name) IS NOT NULL", [list(TABLES)]
        )
        present = [name for (name,) in found]
        if present:
            names = sql.SQL(", ").join(sql.Identifier(table) for table in present)
            db.execute(sql.SQL("TRUNCATE {} RESTART IDENTITY CASCADE").format(names))
