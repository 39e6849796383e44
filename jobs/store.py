"""The queue's side that only speaks SQL: making the table, queueing, claiming and settling.

`later` writes a job as a row; a worker (worker.py) calls `claimed` to take due rows
under a lease, runs them, and settles each with `finished` or `failed`. Nothing here
loops, sleeps or runs a job.
"""

import contextlib
import functools
import json
import math
import secrets
import time
from dataclasses import dataclass, field
from types import SimpleNamespace

import psycopg
from psycopg import sql

from .sql import queries

LEASE = 30.0  # seconds a claim holds a job before another worker may take it again
ATTEMPTS = 5  # attempts a job gets unless its performer's policy says otherwise


def now_ms() -> int:
    """The moment, in integer milliseconds since the epoch."""
    return time.time_ns() // 1_000_000


@dataclass
class Job:
    """A claimed job as the worker holds it while it runs."""

    id: int
    queue: str
    name: str
    args: dict = field(repr=False)  # may hold secrets: left out of the job's repr, and so of logs
    priority: int
    due_at: int  # when it was due, before the claim moved run_at on
    attempt: int  # this attempt, counted from 1
    max_attempts: int
    key: str | None  # its concurrency key: one job of a key runs at a time
    batch: int | None  # the batch it belongs to, or whose callback it is
    flow: dict | None = field(repr=False)  # for a chain's step, the steps after it; for a callback, its batch
    claim: int  # the token of the claim that holds it
    final: bool = field(default=False)  # set by the worker: a failure now ends the job


def prepared(db):
    """Creates the jobs table and its indexes when they are missing, and returns `db`.

    The columns, each with what it holds, are in the `prepare` statement of
    queries.sql (and in the README's table).

    Safe to call from many processes at once and on every start; it commits on a
    connection that is not in a transaction, and joins the caller's otherwise.
    """
    with db.transaction():
        db.execute(queries["prepare"])
    return db


def later(db, queue: str, name: str, args: dict, at: int | None = None, *, priority: int = 0,
          unique: str | None = None, key: str | None = None, batch: int | None = None,
          flow: dict | None = None) -> int | None:
    """Queues job `name` with `args` on `queue` to run at `at` (ms since the epoch) or after.

    The row is written on `db`'s current transaction: if it rolls back, the job never
    existed, and the transaction that saves a record can be the one that queues its
    job. A worker listening for jobs is woken when that transaction commits. Returns
    the job's id. Refuses an empty queue or name and arguments that are not plain JSON
    (see `encoded`) with a ValueError or TypeError, writing nothing.

    priority: among due jobs, a lower number runs first (default 0).
    unique: at most one job per unique key waits or runs; when one already does,
    nothing is queued and the answer is None.
    key: a concurrency key; jobs sharing one run one at a time across all workers.
    batch and flow are written by `flows` for the jobs of batches and chains.
    """
    text = encoded(queue, name, args)
    run_at = now_ms() if at is None else at
    params = {
        "queue": queue, "name": name, "args": text, "run_at": run_at, "scheduled": scheduled(run_at),
        "priority": priority,
        "key": key, "unique": unique, "batch": batch, "flow": None if flow is None else json.dumps(flow),
    }
    row = db.execute(queries["later"], params).fetchone()
    return None if row is None else row[0]


def later_many(db, queue: str, name: str, many_args, at: int | None = None, *, priority: int = 0) -> int:
    """Queues job `name` once for each dict in `many_args`, in one COPY; returns how many.

    Every argument is checked before anything is written, so one bad dict refuses
    them all. Written on `db`'s current transaction (one of its own on an autocommit
    connection), with one notification for all of them.
    """
    run_at = now_ms() if at is None else at
    later_on = scheduled(run_at)
    named(queue, name)
    texts = [encoded_args(name, args) for args in many_args]
    with db.transaction() if db.autocommit else contextlib.nullcontext(), db.cursor() as cursor:
        with cursor.copy(queries["later_many"]) as copy:
            for text in texts:
                copy.write_row((queue, name, text, run_at, later_on, priority))
        cursor.execute(queries["notify"], {"queue": queue})
    return len(texts)


def scheduled(run_at: int) -> bool:
    """Whether a job due at `run_at` waits for a later moment, out of the claim's index until promoted."""
    return run_at > now_ms()


def promoted(db, now: int) -> list[str]:
    """Lets jobs scheduled for `now` or before be claimed; returns the queues that got some."""
    return [row[0] for row in db.execute(queries["promote"], {"now": now})]


def encoded(queue, name, args) -> str:
    """The JSON text of a job's arguments, or a clear error naming the job.

    Arguments must survive the trip through the table unchanged: a dict with string
    keys whose values are JSON (None, bools, finite numbers, strings without NUL,
    lists and dicts of the same). Anything else is refused rather than silently
    converted (json.dumps would turn 1 into "1" as a key, and a tuple into a list).
    """
    named(queue, name)
    return encoded_args(name, args)


def named(queue, name) -> None:
    """Refuses an empty queue or name, or one holding a NUL character."""
    for what, value in (("queue", queue), ("name", name)):
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f"a job needs a {what}: got {value!r}")
        if "\x00" in value:
            raise ValueError(f"a job's {what} cannot hold a NUL character: {value!r}")


def encoded_args(name, args) -> str:
    """The JSON text of job `name`'s arguments (see `encoded`)."""
    if not isinstance(args, dict):
        raise TypeError(f"job {name!r}: args must be a dict, not {type(args).__name__}")
    if not plain(args):
        check_json(name, args, "args")  # finds what is wrong and says where, or lets it pass
    return json.dumps(args, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def plain(value) -> bool:
    """Whether `value` is plain JSON of the exact built-in types: the quick test every job passes."""
    kind = type(value)
    if kind is str:
        return "\x00" not in value
    if kind is int or kind is bool or value is None:
        return True
    if kind is float:
        return math.isfinite(value)
    if kind is dict:
        for key, item in value.items():
            if type(key) is not str or "\x00" in key or not plain(item):
                return False
        return True
    if kind is list:
        for item in value:
            if not plain(item):
                return False
        return True
    return False


def check_json(name: str, value, where: str) -> None:
    """Raises TypeError or ValueError when `value` is not plain JSON, naming where."""
    if value is None or isinstance(value, bool | int):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"job {name!r}: {where} is {value}, which JSON cannot hold")
    elif isinstance(value, str):
        if "\x00" in value:
            raise ValueError(f"job {name!r}: {where} holds a NUL character")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            check_json(name, item, f"{where}[{i}]")
    elif isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError(f"job {name!r}: {where} has a key {key!r} that is not a string")
            check_json(name, key, f"{where} key {key!r}")
            check_json(name, item, f"{where}[{key!r}]")
    else:
        raise TypeError(f"job {name!r}: {where} is a {type(value).__name__}, which is not JSON")


def claimed(db, queue: str, now: int | None, *, limit: int = 1, lease: float = LEASE) -> list[Job]:
    """Claims up to `limit` jobs of `queue` due at `now` (None: the database's clock), in claim order, and commits.

    Each claimed row has its attempt counted and is held for `lease` seconds under a
    new claim token; see the claim in queries.sql.
    """
    claim = secrets.randbits(63)
    params = {"queue": queue, "now": now, "lease": int(lease * 1000), "claim": claim}
    try:
        with contextlib.nullcontext() if db.autocommit else db.transaction():  # one statement commits alone
            rows = db.execute(claim_statement(limit), params).fetchall()
    except psycopg.errors.UniqueViolation:
        # Two jobs of one concurrency key: twice in this batch, or taken side by side
        # by two claims. The index refused it and nothing was claimed; one job at a
        # time cannot clash with itself, and the next claim sees the key in work.
        return [] if limit == 1 else claimed(db, queue, now, limit=1, lease=lease)
    jobs = [Job(*row, claim=claim) for row in rows]
    jobs.sort(key=lambda job: (job.priority, job.due_at, job.id))
    return jobs


@functools.cache
def claim_statement(limit: int) -> sql.Composed:
    """The claim with its LIMIT written in (see the claim in queries.sql for why)."""
    if not isinstance(limit, int) or limit < 1:
        raise ValueError(f"a claim takes one job or more, not {limit!r}")
    return sql.SQL(queries["claim"]).format(limit=sql.Literal(limit))


def finished(db, jobs: list[Job]) -> set[int]:
    """Deletes the rows of jobs that succeeded, on db's transaction; returns the ids still ours."""
    if not jobs:
        return set()
    rows = db.execute(queries["finish"], {"ids": [job.id for job in jobs], "claim": jobs[0].claim})
    return {row[0] for row in rows}


def failed(db, job: Job, reason: str, traceback: str, run_at: int, max_attempts: int) -> bool:
    """Records a failed attempt on db's transaction; False when the claim was no longer ours."""
    params = {
        "id": job.id, "claim": job.claim, "reason": reason, "traceback": traceback,
        "run_at": run_at, "scheduled": scheduled(run_at), "max_attempts": max_attempts,
    }
    return db.execute(queries["fail"], params).rowcount == 1


def released(db, jobs: list[Job], now: int) -> None:
    """Gives claimed jobs that never started back to the queue, due at once."""
    if jobs:
        db.execute(queries["release"], {"ids": [job.id for job in jobs], "claim": jobs[0].claim, "now": now})


def extended(db, jobs: list[Job], now: int, lease: float = LEASE) -> set[int]:
    """Moves the leases of held jobs one lease on from `now`; returns the ids still ours."""
    if not jobs:
        return set()
    params = {"ids": [job.id for job in jobs], "claim": jobs[0].claim, "now": now, "lease": int(lease * 1000)}
    return {row[0] for row in db.execute(queries["extend"], params)}


def given_back(db, jobs: list[Job]) -> int:
    """Ends now the leases of held jobs whose worker no longer runs them; returns how many were still ours."""
    return db.execute(queries["give_back"], {"ids": [job.id for job in jobs], "claim": jobs[0].claim}).rowcount


def taken(db, jobs: list[Job]) -> list[Job]:
    """Those of `jobs` whose row another claim holds now."""
    if not jobs:
        return []
    ids = {row[0] for row in db.execute(queries["taken"], {"ids": [job.id for job in jobs], "claim": jobs[0].claim})}
    return [job for job in jobs if job.id in ids]


def listed(db, queue: str | None = None) -> list[dict]:
    """Every job still in the table (waiting, leased or failed for good), in the order queued.

    Each is a dict with id, queue, name, args, priority, run_at, scheduled, attempts,
    max_attempts, failure ("" when none), traceback and reasons (one per failure).
    """
    cursor = db.execute(queries["listed"], {"queue": queue})
    names = [column.name for column in cursor.description]
    return [dict(zip(names, row)) for row in cursor]


def outstanding(db, queues: list[str], now: int) -> int:
    """How many jobs of `queues` are due at `now` or held under a lease that has not run out."""
    return db.execute(queries["outstanding"], {"queues": queues, "now": now}).fetchone()[0]


def expired(db, now: int) -> int:
    """Frees the keys of keyed jobs whose lease ran out; returns how many."""
    return db.execute(queries["expire"], {"now": now}).rowcount


def reaped(db, now: int) -> list[SimpleNamespace]:
    """Marks jobs whose worker died on their last attempt as failed for good; returns them.

    Each has the id, name, queue, batch and flow that chains and batches need to hear of it.
    """
    cursor = db.execute(queries["reap"], {"now": now})
    names = [column.name for column in cursor.description]
    return [SimpleNamespace(**dict(zip(names, row))) for row in cursor]
