"""The database of a request: a connection lent by the pool when a view first asks, given back at teardown.

Connections are in autocommit mode, so a view says where its transaction is with
`with db.transaction():`, and what it writes there commits together with the
letters it queues (mail.delivered_later writes on the same transaction).

A pooled connection that goes silent (a firewall that forgets it, a hung pooler) is
found out within DATABASE_SILENT_AFTER seconds (jobs.SILENT_AFTER unless set): the
kernel's keepalives drop it, or the pool's watchdog cuts it when an answer does not
come, together with every connection unheard since; the pool then opens new ones.
"""

import threading
from pathlib import Path

import psycopg
from flask import current_app, g
from psycopg.rows import namedtuple_row
from psycopg_pool import ConnectionPool

import jobs
from jobs import load_queries
from jobs.runtime.watchdog import Watchdog
from jobs.store.schema import Steps, numbered

POOL_MIN = 1  # connections the pool keeps open when idle
POOL_MAX = 8  # connections at most: one per request served at once (see THREADS in server.py)
POOL_WAIT = 10.0  # seconds a request waits for a free connection before it fails
SCHEMA_LOCK = 4815162342  # the advisory lock that lets one starting process at a time take a step
TABLES = Steps(
    "guestbook tables",
    numbered(load_queries(Path(__file__).with_name("schema.sql"))),
    "guestbook_schema",
    SCHEMA_LOCK,
    "start the guestbook once as their owner (`python -m guestbook serve`)",
)

queries = load_queries(Path(__file__).with_name("queries.sql"))


def init_app(app) -> None:
    """Opens the app's pool, makes the tables it needs, and gives connections back after each request."""
    silent_after = app.config.get("DATABASE_SILENT_AFTER", jobs.SILENT_AFTER)
    # Once the watchdog cuts connections, the pool checks those it holds at once, in a
    # thread of its own: each found cut is replaced, so no request is handed it, and
    # none waits out the pool's backoff between the checks that fail.
    watchdog = Watchdog(silent_after, on_cut=lambda: threading.Thread(target=pool.check, daemon=True).start())

    def watched(db: psycopg.Connection) -> None:
        """Each connection the pool opens, watched (the pool's configure answers nothing; `watched` answers `db`)."""
        watchdog.watched(db)

    pool: ConnectionPool = ConnectionPool(
        app.config["DATABASE_URL"],
        min_size=POOL_MIN,
        max_size=POOL_MAX,
        timeout=POOL_WAIT,
        kwargs={"autocommit": True, "row_factory": namedtuple_row} | jobs.keepalives(silent_after),
        configure=watched,
        check=ConnectionPool.check_connection,
        name="guestbook",
        open=True,
    )
    app.extensions["guestbook.pool"], app.extensions["guestbook.watchdog"] = pool, watchdog
    with pool.connection() as db:
        prepared(db)
    app.teardown_appcontext(given_back)


def prepared(db: psycopg.Connection) -> None:
    """Makes the guestbook's tables and the job queue's, or takes the steps they lack.

    On a current database this only reads the two records of steps taken: it locks
    nothing, so a process that starts beside a request's open transaction waits for
    nothing and holds up no one (see jobs/store/schema.py, whose Steps takes these steps).
    Raises jobs.SchemaError when a step is due and cannot be taken.
    """
    TABLES.prepared(db)
    jobs.prepared(db)


def get_db() -> psycopg.Connection:
    """The request's connection, lent by the pool on first use."""
    if "db" not in g:
        g.db = current_app.extensions["guestbook.pool"].getconn()
    return g.db


def given_back(error: BaseException | None = None) -> None:
    """Returns the request's connection to the pool (which rolls back anything left open)."""
    db = g.pop("db", None)
    if db is not None:
        current_app.extensions["guestbook.pool"].putconn(db)


def closed(app) -> None:
    """Closes the app's pool and its watchdog, for the end of a process or a test."""
    app.extensions["guestbook.pool"].close()
    app.extensions["guestbook.watchdog"].stop()
