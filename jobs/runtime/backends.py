"""Which server process runs a work thread's transaction, so that the worker can end it.

A job past its timeout, or still running when a shutdown's grace ends, has its
transaction ended from the server side (supervisor.py), so nothing it wrote can commit.
Connected straight to PostgreSQL, a connection is one server process for its life,
and libpq knows its pid. Behind a pooler (PgBouncer) libpq's pid is one the pooler
made up for cancel requests, and in transaction mode each transaction may run on
another server connection: the pid that counts is read inside the job's own
transaction, with the moment that transaction began, and the server process is
ended only while it still runs that same transaction, never a stranger's.
"""

import logging
import threading
import weakref
from datetime import datetime
from typing import Any, Protocol

import psycopg

from ..core.sql import one

log = logging.getLogger("jobs")


class Told(Protocol):
    """What `told` reads of a worker: whether it listens, and how often it polls."""

    listen: bool
    poll: float


_told: "weakref.WeakSet[Told]" = weakref.WeakSet()  # the workers that have said what a pooler lets them do
_telling = threading.Lock()  # a worker's threads open their connections at once


class Backend:
    """The server process of one work thread's connection, or of its current transaction behind a pooler."""

    def __init__(self, db: psycopg.Connection[Any]) -> None:
        real: int = one(db.execute("SELECT pg_backend_pid()"))[0]
        self.pooled = real != db.info.backend_pid  # libpq was given a pid that is no server process's
        # The server process, and behind a pooler the start of the transaction it runs for
        # this thread: one tuple, so that the listener never reads one without the other.
        self.running: tuple[int, datetime | None] | None = None if self.pooled else (real, None)

    def entered(self, db: psycopg.Connection[Any]) -> None:
        """Called inside a job's transaction: behind a pooler, learns which server process runs it."""
        if self.pooled:
            pid, began = one(db.execute("SELECT pg_backend_pid(), transaction_timestamp()"))
            self.running = (pid, began)


def ended(db: psycopg.Connection[Any], backend: Backend, wait_ms: int) -> bool:
    """Ends `backend`'s server process from `db`, waiting up to `wait_ms` for it to go; whether it is gone.

    Behind a pooler, only while it still runs the transaction `backend` entered (a
    transaction that has ended left nothing to end): once that has ended, the server
    connection may serve another client.
    """
    if backend.running is None:
        return True  # behind a pooler, no transaction was ever begun
    pid, began = backend.running
    if not backend.pooled:
        gone: bool = one(db.execute("SELECT pg_terminate_backend(%s, %s)", [pid, wait_ms]))[0]
        return gone
    row = db.execute(
        "SELECT pg_terminate_backend(pid, %s) FROM pg_stat_activity WHERE pid = %s AND xact_start = %s",
        [wait_ms, pid, began],
    ).fetchone()
    return row is None or row[0]


def told(worker: Told, backend: Backend) -> None:
    """Says once per worker, at its first connection through a pooler, what works there and what does not."""
    if not backend.pooled:
        return
    with _telling:
        if worker in _told:
            return
        _told.add(worker)
    if worker.listen:
        log.warning(
            "the worker's connections go through a pooler: in its transaction mode LISTEN hears no "
            "notification, so jobs wait up to the poll of %g s (run with listen=False, --no-listen)",
            worker.poll,
        )
    else:
        log.info(
            "the worker's connections go through a pooler: it polls for jobs every %g s, and ends a "
            "stuck job's transaction on the server process it learns inside that transaction",
            worker.poll,
        )
