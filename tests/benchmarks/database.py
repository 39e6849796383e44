"""The database a benchmark run works on: a schema of its own, and tables filled and emptied.

Every connection of the run sets its search_path to SCHEMA, so jobs' `jobs` table and
the plain-SQL table `plain_jobs` (made LIKE jobs: same columns, same indexes) live there,
away from any jobs table the database already holds. The schema goes when the run ends.
"""

import json
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

import jobs

SCHEMA = "jobs_benchmark"  # the schema a run makes, works in and drops
QUEUE = "benchmark"  # the queue every measured job is on
NAME = "noop"  # the name of every measured job; its performer does nothing
PAST = 1000  # ms before now that filled jobs were due, so every one of them is due at once


@contextmanager
def database_at(url: str | None) -> Iterator[str]:
    """Yields `url`, or the address of a throw-away embedded PostgreSQL when it is None."""
    if url:
        yield url
        return
    from guestbook import embedded  # only a run without a database needs it

    with tempfile.TemporaryDirectory(prefix="jobs-benchmark-") as folder:
        yield embedded.server(Path(folder) / "pgdata", throwaway=True).get_uri()


def connected(url: str, *, autocommit: bool = True) -> psycopg.Connection:
    """A new connection to `url` that works in the benchmark's schema."""
    return psycopg.connect(
        url, autocommit=autocommit, options=f"-c search_path={SCHEMA}", application_name="jobs benchmark"
    )


def scalar(db: psycopg.Connection, query: str) -> Any:
    """The one value `query` answers (a SHOW, a count)."""
    row = db.execute(query).fetchone()
    assert row is not None, f"no row for {query}"
    return row[0]


def connector(url: str):
    """A zero-argument function that opens connections in the benchmark's schema, as a Worker takes."""
    return lambda: connected(url, autocommit=False)


def made(url: str) -> None:
    """Makes the schema afresh, with jobs' table and the plain-SQL table in it."""
    with connected(url) as db:
        db.execute(sql.SQL("DROP SCHEMA IF EXISTS {0} CASCADE; CREATE SCHEMA {0}").format(sql.Identifier(SCHEMA)))
        jobs.prepared(db)
        db.execute("CREATE TABLE plain_jobs (LIKE jobs INCLUDING ALL)")


def described(url: str) -> str:
    """The server and the settings a figure depends on, in a few words."""
    with connected(url) as db:
        version = scalar(db, "SHOW server_version")
        commit = scalar(db, "SHOW synchronous_commit")
        # The embedded server is built without JIT; Debian's and most managed services' have it on.
        jit = scalar(
            db, "SELECT CASE WHEN NOT pg_jit_available() THEN 'no JIT' ELSE 'jit ' || current_setting('jit') END"
        )
    return f"PostgreSQL {version.split()[0]}, synchronous_commit {commit}, {jit}"


def dropped(url: str) -> None:
    """Drops the schema and everything the run left in it."""
    with connected(url) as db:
        db.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(SCHEMA)))


def emptied(db, table: str) -> None:
    """Empties `table` and analyzes it afresh, so a measurement starts from a clean table."""
    db.execute(sql.SQL("TRUNCATE {} RESTART IDENTITY").format(sql.Identifier(table)))
    db.execute(sql.SQL("VACUUM ANALYZE {}").format(sql.Identifier(table)))


def filled(db, table: str, rows) -> None:
    """Empties `table`, copies `rows` into it and vacuums it (the filling is never what is timed).

    Each row is (run_at, attempts, max_attempts) of a job named NAME on QUEUE; one
    due in the future is scheduled, as `jobs.later` would write it.
    """
    emptied(db, table)
    statement = sql.SQL("COPY {} (queue, name, args, run_at, scheduled, attempts, max_attempts) FROM STDIN")
    now = jobs.now_ms()
    with db.transaction(), db.cursor().copy(statement.format(sql.Identifier(table))) as copy:
        for n, (run_at, attempts, max_attempts) in enumerate(rows):
            copy.write_row((QUEUE, NAME, json.dumps({"n": n}), run_at, run_at > now, attempts, max_attempts))
    db.execute(sql.SQL("VACUUM ANALYZE {}").format(sql.Identifier(table)))


def due(count: int):
    """Rows for `filled`: `count` jobs due now, none tried yet."""
    moment = jobs.now_ms() - PAST
    return ((moment, 0, jobs.ATTEMPTS) for _ in range(count))


def count(db, table: str) -> int:
    """How many rows `table` holds."""
    return db.execute(sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table))).fetchone()[0]
