"""The connections of a worker's long-lived threads, and the loop that keeps one open.

Each work thread and the listener runs its steps through `kept_running`: a step that
loses the connection (or hits a bug outside any job) is logged, the connection is
closed, and after a wait that doubles from RECONNECT_FIRST up to RECONNECT_MAX a new
one is opened. A statement the server refused is logged once (complaints.py) and the
connection kept. So a thread never dies of the database; it says why in the log.
"""

import logging
import threading

import psycopg

from .complaints import Complaints, kept

RECONNECT_FIRST = 0.1  # seconds before the first reconnection; doubles up to RECONNECT_MAX
RECONNECT_MAX = 5.0  # seconds between reconnections at the most

log = logging.getLogger("jobs")


def opened(connect):
    """A new connection from `connect`, in autocommit: each statement commits unless a transaction is begun."""
    db = connect()
    db.autocommit = True
    return db


def closed(db) -> None:
    """Closes `db`, if there is one, ignoring a connection that is already gone; returns None."""
    if db is not None:
        try:
            db.close()
        except psycopg.Error:
            pass
    return None


def kept_running(connect, stopping: threading.Event, step, *, who: str, complaints: Complaints,
                 on_open=None, on_lost=None) -> None:
    """Calls `step(db)` until it answers False or `stopping` is set, reconnecting when cut off.

    on_open(db) runs on each new connection before the first step on it; on_lost()
    runs when a step raised, before the connection is closed. `who` names the thread
    in the log; `complaints` (shared by a worker's threads) logs each refusal of the
    database once, and a refusal keeps a connection that is still sound.
    """
    db, pause = None, RECONNECT_FIRST
    try:
        while not stopping.is_set():
            try:
                if db is None:
                    db = opened_for(connect, on_open)
                if step(db) is False:
                    return
                pause = RECONNECT_FIRST
                complaints.mended(who)
            except Exception as error:
                # Don't let a lost connection, or a bug in a policy or a hook, end the
                # thread: the jobs in hand return when their lease runs out.
                if on_lost is not None:
                    on_lost()
                if stopping.is_set():
                    return  # a thread let go (its connection ended on purpose) or stopping: no news
                complained(who, error, pause, complaints)
                db = db if kept(db, error) else closed(db)
                stopping.wait(pause)
                pause = min(pause * 2, RECONNECT_MAX)
    finally:
        closed(db)


def opened_for(connect, on_open):
    """A new connection, with `on_open` run on it first when there is one."""
    db = opened(connect)
    try:
        if on_open is not None:
            on_open(db)
    except BaseException:
        closed(db)
        raise
    return db


def complained(who: str, error: Exception, pause: float, complaints: Complaints) -> None:
    """Logs why a thread's step failed, and when it tries again."""
    if isinstance(error, psycopg.Error):
        complaints.heard(error, who, pause)  # a lost connection, or a refused statement
    else:
        log.exception("%s hit an error outside any job; reconnecting in %.1f s", who, pause)
