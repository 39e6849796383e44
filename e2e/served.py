"""The guestbook as the specs serve it: the README's `make run`, in a subprocess, on a fresh database.

Each guestbook gets a port of its own, BASE_URL on that port (so the links in its
letters lead back to it), a new SECRET_KEY and an outbox folder of its own; a spec
adds the rest of its configuration (MAIL_URL, MAIL_RETRY_INTERVALS,
RESET_TOKEN_MAX_AGE) as environment variables, as anyone running it would. What it
prints goes to a log file, shown when it fails to start.
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

ROOT = Path(__file__).resolve().parents[1]  # the project, where the Makefile is
# The README's run command, on the Python that runs the specs. --old-file keeps make
# from building the virtual environment again under specs that already run in it.
COMMAND = ["make", "run", f"PY={sys.executable}", "--old-file=.venv/.installed"]
START_TIMEOUT = 30.0  # seconds the guestbook may take to answer its first request
STOP_TIMEOUT = 15.0  # seconds it may take to send the letter in hand and exit after SIGTERM
SECRET_BYTES = 32  # random bytes in each guestbook's SECRET_KEY
# The guestbook's configuration: never inherited from the environment the specs run in.
SETTINGS = ("DATABASE_URL", "SECRET_KEY", "MAIL_URL", "MAIL_FROM", "MAIL_OUTBOX", "BASE_URL", "PORT",
            "MAIL_RETRY_INTERVALS", "RESET_TOKEN_MAX_AGE", "TRUSTED_PROXIES")
TABLES = ("accounts", "entries", "client_tries", "admins", "jobs", "job_batches", "job_paused_queues")  # the guestbook's tables and the job queue's


class Guestbook:
    """A guestbook being served from `folder` (its log and outbox live there); `url` is its address."""

    def __init__(self, database_url: str, folder: Path, settings: dict):
        self.port = free_port()
        self.url = f"http://{HOST}:{self.port}"
        self.outbox = folder / "outbox"
        self.log = folder / "guestbook.log"
        environment = {name: value for name, value in os.environ.items() if name not in SETTINGS}
        environment.update(PORT=str(self.port), BASE_URL=self.url, DATABASE_URL=database_url,
                           SECRET_KEY=secrets.token_hex(SECRET_BYTES), MAIL_OUTBOX=str(self.outbox), **settings)
        with self.log.open("wb") as log:
            # A session of its own, so that stopping it reaches make and the server make started.
            self.process = subprocess.Popen(COMMAND, cwd=ROOT, env=environment, stdout=log,
                                            stderr=subprocess.STDOUT, start_new_session=True)

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
        """The link it printed at start, which lets the browser that opens it see /outbox and /jobs."""
        found = re.search(rf"Open ({re.escape(self.url)}/\?key=\w+) once", self.log.read_text())
        if found is None:
            raise RuntimeError(f"the guestbook printed no link to open; what it printed:\n{self.log.read_text()}")
        return found.group(1)

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
        """Stops it as a platform would, with SIGTERM: the letter in hand is sent first."""
        try:
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(STOP_TIMEOUT)
        except ProcessLookupError:
            pass  # it has exited already
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()


def emptied(database_url: str) -> None:
    """Empties the guestbook's tables and the job queue's where they exist, so that each spec starts afresh."""
    with psycopg.connect(database_url, autocommit=True) as db:
        present = [table for table in TABLES if db.execute("SELECT to_regclass(%s)", [table]).fetchone()[0]]
        if present:
            names = sql.SQL(", ").join(sql.Identifier(table) for table in present)
            db.execute(sql.SQL("TRUNCATE {} RESTART IDENTITY CASCADE").format(names))
