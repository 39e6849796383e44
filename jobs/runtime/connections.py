"""The connections of a worker's long-lived threads, and the loop that keeps one open.

Each work thread and the listener runs its steps through `kept_running`: a step that
loses the connection (or hits a bug outside any job) is logged, the connection is
closed, and after a wait that doubles from RECONNECT_FIRST up to RECONNECT_MAX a new
one is opened. A statement the server refused is logged once (refusals.py) and the
connection kept. So a thread never dies of the database; it says why in the log.

A connection that goes silent is lost too, within SILENT_AFTER: `keepalives` are the
options that make the kernel drop one whose packets go unanswered, and the worker's
watchdog (watchdog.py) cuts one whose answer does not come. The server may not know
the connection is gone, and would keep its session, and the locks of a transaction
left open, for hours: so the first thing a thread does on its new connection is end
the session of the one it lost, if it still runs (`ORPHAN_ENDED`).
"""

import logging
import threading
from collections.abc import Callable
from typing import Any

import psycopg

from .refusals import Complaints, kept

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
    return None


def kept_running(
    connect: Connect,
    stopping: threading.Event,
    step: Callable[[psycopg.Connection[Any]], bool | None],
    *,
    who: str,
    complaints: Complaints,
    on_open: Callable[[psycopg.Connection[Any]], None] | None = None,
    on_lost: Callable[[BaseException], None] | None = None,
    on_close: Callable[[psycopg.Connection[Any]], None] | None = None,
) -> None:
    """Calls `step(db)` until it answers False or `stopping` is set, reconnecting when cut off.

    on_open(db) runs on each new connection before the first step on it; on_lost(error)
    runs when a step (or on_open) raised, before the connection is closed; on_close(db)
    runs at the end on the connection still open, if one is (none while cut off). Any
    BaseException is caught: SystemExit raised on a thread would end it in silence. `who` names the thread
    in the log; `complaints` (shared by a worker's threads) logs each refusal of the
    database once, and a refusal keeps a connection that is still sound.
    """
    db: psycopg.Connection[Any] | None = None
    orphan: Session | None = None
    pause = RECONNECT_FIRST
    try:
        while not stopping.is_set():
            try:
                if db is None:
                    db, session = opened_for(connect, on_open, orphan)
                    orphan = None
                if step(db) is False:
                    return
                pause = RECONNECT_FIRST
                complaints.mended(who)
            except BaseException as error:
                # Don't let a lost connection, or a bug in a policy or a hook, end the
                # thread: what it held is let go first (on_lost), then it reconnects.
                if on_lost is not None:
                    on_lost(error)
                if stopping.is_set():
                    return  # a thread let go (its connection ended on purpose) or stopping: no news
                complained(who, error, pause, complaints)
                if db is not None and not kept(db, error):
                    closed(db)
                    db, orphan = None, session
                stopping.wait(pause)
                pause = min(pause * 2, RECONNECT_MAX)
    finally:
        if db is not None and on_close is not None and not (db.broken or db.closed):
            on_close(db)
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


def complained(who: str, error: BaseException, pause: float, complaints: Complaints) -> None:
    """Logs why a thread's step failed, and when it tries again."""
    if isinstance(error, psycopg.Error):
        complaints.heard(error, who, pause)  # a lost connection, or a refused statement
    else:
        log.exception("%s hit an error outside any job; reconnecting in %.1f s", who, pause)
