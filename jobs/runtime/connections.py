"""The connections of a worker's long-lived threads, and the loop that keeps one open.

Each thread runs its steps through `kept_running`: a step that loses the connection (or
hits a bug outside any job) is logged, and a new connection opened after a wait that
doubles from RECONNECT_FIRST up to RECONNECT_MAX; a refused statement is logged once and
the connection kept. A silent connection is lost too, within SILENT_AFTER (`keepalives`,
and the watchdog); the server may keep its session and its locks for hours, so a thread's
new connection first ends the session of the one it lost (`ORPHAN_ENDED`). `Backend` is
the server process the supervisor ends under a job past its timeout or a stop's grace;
behind a pooler it is read inside the job's transaction, and ended only while it runs it.
"""

import logging
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg

from ..store.schema import one
from .refusals import Refusals, still_usable

RECONNECT_FIRST = 0.1  # seconds before the first reconnection; doubles up to RECONNECT_MAX
RECONNECT_MAX = 5.0  # seconds between reconnections at the most
SILENT_AFTER = 30.0  # seconds without an answer after which a worker takes its connection for lost
KEEPALIVE_PROBES = 4  # keepalive probes the kernel sends an idle connection, unanswered, before it drops it
ORPHAN_WAIT = 1.0  # seconds a new connection waits for the server to end the session of the one lost

# The session of a connection, as the server knows it: its process and when it began,
# so that a later look finds that session and no other that got the same process id.
# Only when the process the connection was told of at its start is the one that answers:
# behind a pooler (PgBouncer) that id is the pooler's own, the server connection under
# it serves other clients too, and nothing is recorded, so nothing is ever ended.
SESSION = "SELECT backend_start FROM pg_stat_activity WHERE pid = %(pid)s AND pid = pg_backend_pid()"
ORPHAN_ENDED = (
    "SELECT pg_terminate_backend(pid, %(wait)s) FROM pg_stat_activity WHERE pid = %(pid)s AND backend_start = %(start)s"
)

log = logging.getLogger("jobs")
_told: "weakref.WeakSet[object]" = weakref.WeakSet()  # the workers that said what a pooler lets them do
_telling = threading.Lock()  # a worker's threads open their connections at once

# What opens a new connection: psycopg.connect with a URL and options, or a pool's.
Connect = Callable[[], psycopg.Connection[Any]]
# A connection's server session, as `session_of` reads it: its process id and when it began.
Session = tuple[int, object]


def keepalives(within: float = SILENT_AFTER) -> dict[str, Any]:  # Any: ** passes it to connect's keywords
    """The libpq options that make the kernel drop, within `within` seconds, a connection whose packets are lost.

    For psycopg.connect(url, **keepalives()). An idle connection is probed after a third
    of `within`, then KEEPALIVE_PROBES times until `within` has passed; one whose sent
    data goes unacknowledged for `within` (tcp_user_timeout) is dropped as well. Either
    way the thread waiting on it gets an error and reconnects. A new connection that
    gets no answer gives up after `within` too (connect_timeout, 2 s at the least). None
    of these sees a peer that acknowledges and never answers (a hung pooler): the
    watchdog does (watchdog.py).
    """
    idle = max(1, int(within / 3))
    interval = max(1, int((within - idle) / KEEPALIVE_PROBES))
    return {
        "keepalives": 1,
        "keepalives_idle": idle,
        "keepalives_interval": interval,
        "keepalives_count": max(1, int((within - idle) / interval)),
        "tcp_user_timeout": round(within * 1000),
        "connect_timeout": max(2, round(within)),
    }


def opened(connect: Connect) -> psycopg.Connection[Any]:
    """A new connection from `connect`, in autocommit: each statement commits unless a transaction is begun."""
    db = connect()
    db.autocommit = True
    return db


def session_of(db: psycopg.Connection[Any]) -> Session | None:
    """The server session of `db` (process id, start), or None when the server shows none by that id."""
    pid = db.info.backend_pid
    row = db.execute(SESSION, {"pid": pid}).fetchone()
    return None if row is None else (pid, row[0])


def orphan_ended(db: psycopg.Connection[Any], session: Session | None) -> None:
    """Ends, from `db`, the server session of a connection this thread lost, if it still runs.

    A connection cut for its silence, or dropped by the kernel, may still have its
    session on the server: idle in a transaction whose row locks the new connection's
    first statements (giving back the jobs it held) would wait on forever.
    """
    if session is not None:
        pid, start = session
        db.execute(ORPHAN_ENDED, {"pid": pid, "start": start, "wait": round(ORPHAN_WAIT * 1000)})


def closed(db: psycopg.Connection[Any] | None) -> None:
    """Closes `db`, if there is one, ignoring a connection that is already gone."""
    if db is not None:
        try:
            db.close()
        except psycopg.Error:
            pass


@dataclass(frozen=True)
class Reconnecting:
    """How a thread keeps its connection: its name in the log (`who`), the refusals its worker's threads share
    (each logged once; a refusal keeps a sound connection), and what it does on a new connection (on_open, before
    the first step), a lost one (on_lost(error), before it is closed), and the last one still open (on_close)."""

    who: str
    refusals: Refusals
    on_open: Callable[[psycopg.Connection[Any]], None] | None = None
    on_lost: Callable[[BaseException], None] | None = None
    on_close: Callable[[psycopg.Connection[Any]], None] | None = None


def kept_running(
    connect: Connect,
    stopping: threading.Event,
    step: Callable[[psycopg.Connection[Any]], bool | None],
    thread: Reconnecting,
) -> None:
    """Calls `step(db)` until it answers False or `stopping` is set, reconnecting when cut off, as `thread` says.

    Any BaseException is caught: SystemExit raised on a thread would end it in silence.
    """
    who, refusals, on_lost = thread.who, thread.refusals, thread.on_lost
    db: psycopg.Connection[Any] | None = None
    orphan: Session | None = None
    pause = RECONNECT_FIRST
    try:
        while not stopping.is_set():
            try:
                if db is None:
                    db, session = opened_for(connect, thread.on_open, orphan)
                    orphan = None
                if step(db) is False:
                    return
                pause = RECONNECT_FIRST
                refusals.mended(who)
            except BaseException as error:
                # Don't let a lost connection, or a bug in a policy or a hook, end the
                # thread: what it held is let go first (on_lost), then it reconnects.
                if on_lost is not None:
                    on_lost(error)
                if stopping.is_set():
                    return  # a thread let go (its connection ended on purpose) or stopping: no news
                complained(who, error, pause, refusals)
                if db is not None and not still_usable(db, error):
                    closed(db)
                    db, orphan = None, session
                stopping.wait(pause)
                pause = min(pause * 2, RECONNECT_MAX)
    finally:
        if db is not None and thread.on_close is not None and not (db.broken or db.closed):
            thread.on_close(db)
        closed(db)


def opened_for(
    connect: Connect, on_open: Callable[[psycopg.Connection[Any]], None] | None, orphan: Session | None
) -> tuple[psycopg.Connection[Any], Session | None]:
    """A new connection and its session; it first ends the `orphan` session, then runs `on_open`, if any."""
    db = opened(connect)
    try:
        orphan_ended(db, orphan)
        session = session_of(db)
        if on_open is not None:
            on_open(db)
    except BaseException:
        closed(db)
        raise
    return db, session


def complained(who: str, error: BaseException, pause: float, refusals: Refusals) -> None:
    """Logs why a thread's step failed, and when it tries again."""
    if isinstance(error, psycopg.Error):
        refusals.heard(error, who, pause)  # a lost connection, or a refused statement
    else:
        log.exception("%s hit an error outside any job; reconnecting in %.1f s", who, pause)


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

    Behind a pooler, only while it still runs the transaction `backend` entered: once that
    ended, the server connection may serve another client, and nothing is left to end.
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


def pooler_told(worker: object, backend: Backend, *, listen: bool, poll: float) -> None:
    """Says once per worker, at its first connection through a pooler, what works there and what does not."""
    if not backend.pooled:
        return
    with _telling:
        if worker in _told:
            return
        _told.add(worker)
    if listen:
        log.warning(
            "the worker's connections go through a pooler: in its transaction mode LISTEN hears no "
            "notification, so jobs wait up to the poll of %g s (run with listen=False, --no-listen)",
            poll,
        )
    else:
        log.info(
            "the worker's connections go through a pooler: it polls for jobs every %g s, and ends a "
            "stuck job's transaction on the server process it learns inside that transaction",
            poll,
        )
