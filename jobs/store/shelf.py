"""The failed shelf and each queue's figures: where people look once the worker has given up.

A job that failed for good stays in the table, out of the claim's index, with its last
reason, its traceback and every attempt's reason. `failed` reads that shelf a page at a
time, `retried` puts jobs from it back in the queue and `discarded` deletes them;
`status` counts each queue's jobs by state, and `limit_said`, `age` and `runs` say its
figures as the command line and the dashboard both show them (`python -m jobs status |
failed | retry | discard`). All of it stays quick beside a million failed or waiting jobs.
"""

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql
from psycopg.rows import dict_row

from ..core.job import ATTEMPTS
from .schema import read_once

queries = read_once(Path(__file__).with_name("queries.sql"))  # store/'s statements, by name

PAGE = 50  # jobs a page of the shelf holds unless `limit` says otherwise
SHELF_BATCH = 1000  # jobs each transaction of retried(every=True) or discarded(every=True) changes
STATUS_EXACT = 10_000  # jobs of a state a queue's status counts one by one; past it, an estimate
MINUTE, HOUR, DAY = 60, 3600, 86400  # seconds, the units `age` says a duration in
ESTIMATED_FROM = {"due": "jobs_ready", "scheduled": "jobs_scheduled", "failed": "jobs_shelf"}  # index per state


def failed(
    db: psycopg.Connection[Any], queue: str | None = None, *, limit: int = PAGE, after: int | None = None
) -> list[dict[str, Any]]:
    """A page of the jobs that failed for good, on every queue or on `queue`, newest first.

    `limit` jobs at most (PAGE, 50, by default); for the next page, pass the id of the
    last job of this one as `after`: the page goes on with the jobs that failed before
    it (an id keyset: each page costs the same however deep the shelf is, and no job is
    skipped or shown twice as jobs join the shelf). Newest first: the last deploy's.

    Each is a dict with id, queue, name, args, attempts, failed_at (ms since the epoch),
    failure (the last reason), traceback (the last failure's), reasons (every
    failure's, first to last) and retries (how many reasons it held at each retry from
    the shelf, so `runs` tells which run each reason belongs to; None: never
    retried). A job whose worker died on its last attempt joins them when a worker's
    heartbeat reaps it, within half a LEASE.
    """
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
        raise ValueError(f"a page holds one job or more, not {limit!r}")
    if after is not None:
        job_id(after)
    name = "shelf_page" if queue is None else "shelf_page_of_queue"
    statement = sql.SQL(queries[name]).format(limit=sql.Literal(limit))
    with db.cursor(row_factory=dict_row) as cursor:
        return cursor.execute(statement, {"queue": queue, "before": after}).fetchall()


def listed(db: psycopg.Connection[Any], queue: str | None = None) -> list[dict[str, Any]]:
    """Every job still in the table (waiting, leased or failed for good), in the order queued.

    Each is a dict with id, queue, name, args, priority, run_at, scheduled, attempts,
    max_attempts, failure ("" when none), traceback and reasons (one per failure).
    """
    with db.cursor(row_factory=dict_row) as cursor:
        return cursor.execute(queries["listed"], {"queue": queue}).fetchall()


def retried(db: psycopg.Connection[Any], *ids: int, every: bool = False, now: int | None = None) -> int:
    """Puts jobs from the shelf back in the queue, due at `now` (ms; the database's clock when None).

    Name the jobs by id, `retried(db, 7)` or `retried(db, 7, 9)`, or take the whole shelf
    with `retried(db, every=True)`; naming neither or both is a ValueError, so a missing
    id never means "all". Returns how many jobs went back; ids not on the shelf are
    left alone. A job comes back with its attempts counted from 0 and ATTEMPTS as its
    limit until its policy says otherwise; its reasons stay, and new ones follow them
    (its `retries` records where this run's begin).
    Like `later`, it writes on db's current transaction (in a savepoint of its own) and
    wakes the workers of the jobs' queues when that commits.

    `every=True` goes through the shelf oldest first, SHELF_BATCH jobs per transaction,
    each committed before the next begins on a connection outside a transaction (inside
    one, each is a savepoint of it, and the caller holds every row until it commits).

    A job with a unique key stays on the shelf while another job with that key waits or
    runs, since queueing it would break the key's promise; of shelved jobs sharing a
    key, only the oldest comes back. A job of a batch comes back on its own (its batch
    counted its failure already); a step of a chain carries the chain on if it succeeds.
    """
    return sum(
        put_back(db, {"ids": some, "now": now, "attempts": ATTEMPTS}) for some in batches(db, chosen(ids, every))
    )


def put_back(db: psycopg.Connection[Any], params: dict[str, Any]) -> int:
    """Runs the retry statement on a transaction (or savepoint) of its own; returns how many went back."""
    try:
        with db.transaction():
            return len(db.execute(queries["retry"], params).fetchall())
    except psycopg.errors.UniqueViolation:
        # A job with one of their unique keys was queued while this ran, and
        # job_unique_keys refused the second; a second look sees it and leaves that job on the shelf.
        with db.transaction():
            return len(db.execute(queries["retry"], params).fetchall())


def discarded(db: psycopg.Connection[Any], *ids: int, every: bool = False) -> int:
    """Deletes jobs from the shelf for good and returns how many; name them as for `retried`.

    `every=True` deletes SHELF_BATCH jobs per transaction, as `retried` puts them back.
    """
    total = 0
    for some in batches(db, chosen(ids, every)):
        with db.transaction():
            total += db.execute(queries["discard"], {"ids": some}).rowcount
    return total


def chosen(ids: tuple[int, ...], every: bool) -> list[int] | None:
    """The ids a shelf operation names, or None for the whole shelf; refuses anything unclear."""
    if every == bool(ids):
        raise ValueError("name the jobs by id, or pass every=True for the whole shelf (not both)")
    return None if every else [job_id(id) for id in ids]


def job_id(id: object) -> int:
    """`id` when it is a job's id (an int, not a bool); a TypeError naming it otherwise."""
    if not isinstance(id, int) or isinstance(id, bool):
        raise TypeError(f"job ids are integers, got {id!r}")
    return id


def batches(db: psycopg.Connection[Any], ids: list[int] | None) -> Iterator[list[int]]:
    """The named ids as one batch, or the whole shelf's ids SHELF_BATCH at a time, oldest first.

    Each batch is read after the one before was changed, so the shelf is walked by
    its id keyset once, and jobs a retry left on the shelf are passed, not read again.
    """
    if ids is not None:
        yield ids
        return
    after = 0
    while some := [row[0] for row in db.execute(queries["shelf_batch"], {"after": after, "limit": SHELF_BATCH})]:
        yield some
        after = some[-1]


def status(db: psycopg.Connection[Any], now: int | None = None) -> list[dict[str, Any]]:
    """Each queue's jobs counted by state at `now` (ms; the database's clock when None), by queue name.

    One dict per queue that has any job, is paused or is limited: queue; due (may run now, including
    jobs whose lease ran out); scheduled (waiting for a later moment: retries, jobs
    queued with `at`); in_work (held by a live claim, or by the claim of a worker that
    died on the job's last attempt until it is reaped); failed (on the shelf);
    oldest_due_age (seconds since the longest-due job became due, None when nothing is
    due); paused (see control.paused); limit_rate, limit_per_ms, limit_concurrency,
    limit_per_key (its limit, see limits.limited; None where not set), limit_used (the
    claims of the rate's window that ends now) and held_back (due jobs that wait for the
    room of its rate or concurrency, 0 with neither; a job waiting for its key's room is
    due); and estimated, the states whose count is an estimate (an empty list
    when every count is exact).

    Counts up to STATUS_EXACT (10,000) are exact. Past it, counting one by one would
    take longer than a glance may, and the count is an estimate: the entries of the
    state's partial index at the last VACUUM or ANALYZE, less the exact counts of the
    other queues, shared evenly among the queues past STATUS_EXACT; never less than
    the STATUS_EXACT + 1 jobs that were counted.
    """
    statement = sql.SQL(queries["status"]).format(over=sql.Literal(STATUS_EXACT + 1))
    with planned_without_jit(db), db.cursor(row_factory=dict_row) as cursor:
        figures = cursor.execute(statement, {"now": now}).fetchall()
        for queue in figures:
            queue["estimated"] = [state for state in ESTIMATED_FROM if queue[state] > STATUS_EXACT]
            queue["held_back"] = held_back(queue)
        if any(queue["estimated"] for queue in figures):
            estimated(db, figures)
    return figures


def held_back(queue: dict[str, Any]) -> int:
    """How many of a queue's due jobs wait for room under its limit now: those past the room left."""
    rooms = []
    if queue["limit_rate"] is not None:
        rooms.append(queue["limit_rate"] - queue["limit_used"])
    if queue["limit_concurrency"] is not None:
        rooms.append(queue["limit_concurrency"] - queue["in_work"])
    return max(0, queue["due"] - max(0, min(rooms))) if rooms else 0


def has_limit(queue: dict[str, Any]) -> bool:
    """Whether a queue of `status` has a limit."""
    return any(queue[limit] is not None for limit in ("limit_rate", "limit_concurrency", "limit_per_key"))


def limit_said(queue: dict[str, Any]) -> str:
    """A queue's limit as `status` found it, and what is used of it: "14 a 1 s (3 used), 2 at once (2 in work)"."""
    parts = []
    if queue["limit_rate"] is not None:
        parts.append(f"{queue['limit_rate']} a {queue['limit_per_ms'] / 1000:g} s ({queue['limit_used']} used)")
    if queue["limit_concurrency"] is not None:
        parts.append(f"{queue['limit_concurrency']} at once ({queue['in_work']} in work)")
    if queue["limit_per_key"] is not None:
        parts.append(f"{queue['limit_per_key']} a key")
    return ", ".join(parts) or "-"


def age(seconds: float | None) -> str:
    """A duration as people read it (42 s, 7 min, 3 h, 2 d), or "-" for none: `status`'s oldest_due_age, a beat's."""
    if seconds is None:
        return "-"
    for unit, size in (("d", DAY), ("h", HOUR), ("min", MINUTE)):
        if seconds >= size:
            return f"{seconds // size:.0f} {unit}"
    return f"{seconds:.0f} s"


def runs(reasons: list[str], retries: list[int]) -> list[list[str]]:
    """A shelved job's reasons split by run: `retries` holds how many reasons it had at each retry from the shelf."""
    starts = [0, *retries, len(reasons)]
    return [reasons[begin:end] for begin, end in zip(starts, starts[1:], strict=False)]


@contextmanager
def planned_without_jit(db: psycopg.Connection[Any]) -> Iterator[None]:
    """A transaction of its own (a savepoint inside the caller's), with JIT off, rolled back at the end.

    For reads the planner prices far above what they cost: status's per-queue counts
    are priced by how many queues it guesses it will find (thousands: a hundred for each
    recursive scan, more for job_paused_queues, never analysed, and the claimed rows),
    not by the handful there are. On a server with `jit = on` (Debian's, Ubuntu's, most
    managed services') that price passes jit_above_cost, and compiling the plan takes
    half a second where running it takes milliseconds. SET LOCAL ends with the transaction, so it holds behind
    PgBouncer in transaction mode too, and rolling back leaves the caller's settings as they were.
    """
    with db.transaction(force_rollback=True):
        db.execute("SET LOCAL jit = off")
        yield


def estimated(db: psycopg.Connection[Any], figures: list[dict[str, Any]]) -> None:
    """Replaces each count past STATUS_EXACT with its estimate from the index's size (see `status`)."""
    entries = dict(db.execute(queries["index_sizes"]).fetchall())
    for state, index in ESTIMATED_FROM.items():
        over = [queue for queue in figures if state in queue["estimated"]]
        if not over:
            continue
        exact = sum(queue[state] for queue in figures if state not in queue["estimated"])
        share = (entries.get(index, -1) - exact) // len(over)
        for queue in over:
            queue[state] = max(queue[state], share)
