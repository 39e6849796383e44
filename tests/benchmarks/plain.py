"""The plain-SQL limits: what the database allows with the statements a queue cannot do without.

Each function here measures one baseline of issue 7's table on the table plain_jobs,
the way the matching function of queue.py measures jobs, so the two can be divided.
The statements are in plain.sql, read with jobs' own loader.
"""

import json
import secrets
import threading
import time
from pathlib import Path

from psycopg import sql

import jobs
from jobs.store.schema import load

from . import database, timing

statements = load(Path(__file__).with_name("plain.sql"))
TABLE = "plain_jobs"
LEASE = round(jobs.LEASE * 1000)  # ms a plain claim holds its rows, as jobs' default lease
STOP_CHECK = 0.1  # seconds the plain LISTEN loop waits for a notification before it checks for the end


def drain_rate(url: str, count: int, batch: int, connections: int) -> float:
    """Jobs a second that `connections` processes settle, claiming `batch` rows at a time and deleting them."""
    with database.connected(url) as db:
        database.filled(db, TABLE, database.due(count))
    seconds, settled = timing.together(drained, [(url, batch)] * connections)
    if sum(settled) != count:
        raise RuntimeError(f"plain drain settled {sum(settled)} of {count} rows")
    return count / seconds


def drained(url: str, batch: int, gate) -> int:
    """One process's part of a plain drain: claim, delete, until nothing is due; returns the rows it settled."""
    settled = 0
    with database.connected(url) as db:
        gate.wait()
        while True:
            claim, rows = claimed(db, batch)
            if not rows:
                return settled
            deleted(db, claim, rows)
            settled += len(rows)


def claimed(db, limit: int) -> tuple[int, list[tuple]]:
    """Claims up to `limit` due rows in one autocommitted statement; returns the claim's token and the rows."""
    claim = secrets.randbits(63)
    params = {"queue": database.QUEUE, "now": jobs.now_ms(), "lease": LEASE, "claim": claim}
    statement = sql.SQL(statements["claim"]).format(limit=sql.Literal(limit))
    return claim, db.execute(statement, params).fetchall()


def deleted(db, claim: int, rows: list[tuple]) -> None:
    """Deletes claimed rows in one autocommitted statement."""
    db.execute(statements["delete"], {"ids": [row[0] for row in rows], "claim": claim})


def enqueue_rate(url: str, count: int, *, notify: bool) -> float:
    """Jobs a second inserted one per transaction (autocommit), with a notification each when `notify`."""
    statement = statements["insert_notify" if notify else "insert"]
    with database.connected(url) as db:
        database.emptied(db, TABLE)
        started = time.perf_counter()
        for n in range(count):
            db.execute(statement, row_params(n))
        return count / (time.perf_counter() - started)


def row_params(n: int) -> dict:
    """The parameters of one inserted row, the job jobs' `later` would write."""
    return {"queue": database.QUEUE, "name": database.NAME, "args": json.dumps({"n": n}), "run_at": jobs.now_ms()}


def copy_rate(url: str, count: int) -> float:
    """Jobs a second written by one COPY in one transaction, each one's arguments encoded on the way."""
    with database.connected(url) as db:
        database.emptied(db, TABLE)
        args = [{"n": n} for n in range(count)]
        started = time.perf_counter()
        with db.transaction(), db.cursor().copy(statements["copy"]) as copy:
            moment = jobs.now_ms()
            for one in args:
                copy.write_row((database.QUEUE, database.NAME, json.dumps(one), moment))
        return count / (time.perf_counter() - started)


def latencies(url: str, samples: int) -> list[float]:
    """Seconds from an INSERT + pg_notify's commit to the claim's answer in a loop that LISTENs, then claims."""
    starts, listening, stopping = timing.Starts(), threading.Event(), threading.Event()
    with database.connected(url) as db:
        database.emptied(db, TABLE)
        listener = threading.Thread(target=listened, args=(url, starts, listening, stopping), daemon=True)
        listener.start()
        try:
            if not listening.wait(timing.LATENCY_TIMEOUT):
                raise RuntimeError("the plain LISTEN loop did not start listening")
            return timing.latencies(lambda: db.execute(statements["insert_notify"], row_params(0)), starts, samples)
        finally:
            stopping.set()
            listener.join()


def listened(url: str, starts: timing.Starts, listening: threading.Event, stopping: threading.Event) -> None:
    """The plain worker: on one connection, wait for a notification, claim one row, note the moment, delete it."""
    with database.connected(url) as db:
        db.execute(statements["listen"])
        listening.set()
        while not stopping.is_set():
            if not list(db.notifies(timeout=STOP_CHECK, stop_after=1)):
                continue  # the generator holds the connection: leave it before claiming on it
            claim, rows = claimed(db, 1)
            if rows:
                starts.begun()
                deleted(db, claim, rows)
