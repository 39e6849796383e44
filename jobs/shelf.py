"""The failed shelf and each queue's figures: where people look once the worker has given up.

A job that failed for good stays in the table, out of the claim's index, with its last
reason, its traceback and every attempt's reason. `failed` reads that shelf, `retried`
puts jobs from it back in the queue and `discarded` deletes them; `status` counts each
queue's jobs by state. `python -m jobs status | failed | retry | discard` prints them.
The shelf's statements are its own, named in queries.sql.
"""

import psycopg

from . import store
from .sql import queries


def failed(db, queue: str | None = None) -> list[dict]:
    """The jobs that failed for good, on every queue or on `queue`, in the order queued.

    Each is a dict with id, queue, name, args, attempts, failed_at (ms since the epoch),
    failure (the last reason), traceback (the last failure's) and reasons (every
    failure's, first to last). A job whose worker died on its last attempt joins them
    when a worker's heartbeat reaps it, within half a LEASE.
    """
    cursor = db.execute(queries["shelf"], {"queue": queue})
    names = [column.name for column in cursor.description]
    return [dict(zip(names, row)) for row in cursor]


def retried(db, *ids: int, every: bool = False, now: int | None = None) -> int:
    """Puts jobs from the shelf back in the queue, due at `now` (ms; the database's clock when None).

    Name the jobs by id, `retried(db, 7)` or `retried(db, 7, 9)`, or take the whole shelf
    with `retried(db, every=True)`; naming neither or both is a ValueError, so a missing
    id never means "all". Returns how many jobs went back; ids not on the shelf are
    left alone. A job comes back with its attempts counted from 0 and ATTEMPTS as its
    limit until its policy says otherwise; its reasons stay, and new ones follow them.
    Like `later`, it writes on db's current transaction (in a savepoint of its own) and
    wakes the workers of the jobs' queues when that commits.

    A job with a unique key stays on the shelf while another job with that key waits or
    runs, since queueing it would break the key's promise; of shelved jobs sharing a
    key, only the oldest comes back. A job of a batch comes back on its own (its batch
    counted its failure already); a step of a chain carries the chain on if it succeeds.
    """
    params = {"ids": chosen(ids, every), "now": now, "attempts": store.ATTEMPTS}
    try:
        return put_back(db, params)
    except psycopg.errors.UniqueViolation:
        # A job with one of their unique keys was queued while this ran, and the index
        # refused the second; a second look sees it and leaves that job on the shelf.
        return put_back(db, params)


def put_back(db, params: dict) -> int:
    """Runs the retry statement on a transaction (or savepoint) of its own; returns how many went back."""
    with db.transaction():
        return len(db.execute(queries["retry"], params).fetchall())


def discarded(db, *ids: int, every: bool = False) -> int:
    """Deletes jobs from the shelf for good and returns how many; name them as for `retried`."""
    return db.execute(queries["discard"], {"ids": chosen(ids, every)}).rowcount


def chosen(ids: tuple, every: bool) -> list[int] | None:
    """The ids a shelf operation names, or None for the whole shelf; refuses anything unclear."""
    if every == bool(ids):
        raise ValueError("name the jobs by id, or pass every=True for the whole shelf (not both)")
    for id in ids:
        if not isinstance(id, int) or isinstance(id, bool):
            raise TypeError(f"job ids are integers, got {id!r}")
    return None if every else list(ids)


def status(db, now: int | None = None) -> list[dict]:
    """Each queue's jobs counted by state at `now` (ms; the database's clock when None), by queue name.

    One dict per queue that has any job: queue; due (may run now, including jobs whose
    lease ran out); scheduled (waiting for a later moment: retries, jobs queued with
    `at`); in_work (held by a live claim, or by the claim of a worker that died on the
    job's last attempt until it is reaped); failed (on the shelf); oldest_due_age
    (seconds since the longest-due job became due, None when nothing is due).
    """
    cursor = db.execute(queries["status"], {"now": now})
    names = [column.name for column in cursor.description]
    return [dict(zip(names, row)) for row in cursor]
