"""The statements of a job's own life: queueing, claiming and settling (schema.py makes the tables).

`later` writes a job as a row; a work thread (worker.py) calls `claimed` to take due
rows under a lease, and the runner settles each with `finished` or `attempt_failed`.
It speaks SQL only (queries.sql); nothing here loops, sleeps or runs a job. Chains and
batches (flows.py) and the failed shelf (shelf.py) keep their own statements beside it.
"""

import contextlib
import functools
import json
import secrets
import time
from collections.abc import Collection, Iterable, Mapping
from typing import Any, TypeVar

import psycopg
from psycopg import sql
from psycopg.rows import RowFactory, dict_row

from ..core import redaction
from ..core.job import ATTEMPTS, LEASE, ArgsLoader, Job, Performer, job_row
from ..core.sql import one
from . import queries
from .arguments import encoded, encoded_args, named

RAN_MAX = 2**31 - 1  # ms of an attempt's run kept at most (24 days): the integer ran holds for it
R = TypeVar("R")  # a row of a claim's answer, as its row factory makes it
# Statement later for a job without a unique key and for one with (queries.sql says why they differ).
LATER = {
    unique: queries["later"].replace("{unique}", "\n    " + queries["later_unique"] if unique else "")
    for unique in (False, True)
}
HELD = 2**63 - 1  # run_at of a job a Worker holds: the largest bigint, a lease that runs out only when the worker goes


def now_ms() -> int:
    """This machine's moment, in integer milliseconds since the epoch.

    The queue's own statements read the database's clock instead (sql.py), so that
    workers on machines whose clocks disagree agree on leases; this is for callers
    that fix a moment of their own (`at=`, `now=`).
    """
    return time.time_ns() // 1_000_000


def later(
    db: psycopg.Connection[Any],
    queue: str,
    name: str,
    args: dict[str, Any],
    at: int | None = None,
    *,
    priority: int = 0,
    unique: str | None = None,
    key: str | None = None,
    batch: int | None = None,
    flow: dict[str, Any] | None = None,
    secret: Collection[str] | None = None,
) -> int | None:
    """Queues job `name` with `args` on `queue` to run at `at` (ms since the epoch) or after.

    With `at` None it is due at once, by the database's clock; a later `at` waits
    out of the claim's index until a worker promotes it.

    The row is written on `db`'s current transaction: if it rolls back, the job never
    existed, and the transaction that saves a record can be the one that queues its
    job. A worker listening for jobs is woken when that transaction commits. Returns
    the job's id. Refuses an empty queue or name and arguments that are not plain JSON
    (see `encoded`) with a ValueError or TypeError, writing nothing.

    priority: among due jobs, a lower number runs first (default 0).
    unique: at most one job per unique key waits or runs; when one already does,
    nothing is queued and the answer is None.
    key: a concurrency key; jobs sharing one run one at a time across all workers.
    secret: the names of the arguments that are secrets (a token, a letter's body with
    its links): no viewer shows them, and a failure's reason and traceback are written
    without their values (redaction.py). A name that is not an argument is a ValueError.
    batch and flow are written by `flows` for the jobs of batches and chains.
    """
    params = later_params(
        queue, name, args, at, priority=priority, unique=unique, key=key, batch=batch, flow=flow, secret=secret
    )
    row = db.execute(LATER[params["unique"] is not None], params).fetchone()
    return None if row is None else row[0]


def later_params(
    queue: str,
    name: str,
    args: dict[str, Any],
    at: int | None = None,
    *,
    priority: int = 0,
    unique: str | None = None,
    key: str | None = None,
    batch: int | None = None,
    flow: dict[str, Any] | None = None,
    secret: Collection[str] | None = None,
) -> dict[str, Any]:
    """The parameters of statement `later` for one job (`later`'s own), checked (ValueError, TypeError) before
    anything is sent."""
    return {
        "queue": queue,
        "name": name,
        "args": encoded(queue, name, args),
        "run_at": at,
        "now": None,
        "priority": priority,
        "max_attempts": ATTEMPTS,
        "key": key,
        "unique": unique,
        "batch": batch,
        "flow": None if flow is None else json.dumps(flow),
        "secret": redaction.declared(name, args, secret),
    }


def later_many(
    db: psycopg.Connection[Any],
    queue: str,
    name: str,
    many_args: Iterable[dict[str, Any]],
    at: int | None = None,
    *,
    priority: int = 0,
    secret: Collection[str] | None = None,
) -> int:
    """Queues job `name` once for each dict in `many_args`, in one COPY; returns how many.

    Every argument is checked before anything is written, so one bad dict refuses
    them all; `secret` names the secret arguments of every one of them, as `later`'s
    does. Written on `db`'s current transaction (one of its own on an autocommit
    connection), with one notification for all of them.
    """
    checked = many_checked(queue, name, many_args, secret)
    with db.transaction() if db.autocommit else contextlib.nullcontext(), db.cursor() as cursor:
        now = one(cursor.execute(queries["now"], {"now": None}))[0]
        with cursor.copy(queries["later_many"]) as copy:
            for row in many_rows(queue, name, checked, at, now, priority):
                copy.write_row(row)
        cursor.execute(queries["notify"], {"queue": queue})
    return len(checked)


def many_checked(
    queue: str, name: str, many_args: Iterable[dict[str, Any]], secret: Collection[str] | None
) -> list[tuple[str, list[str] | None]]:
    """Each job's arguments as JSON text, with its secret names: all checked before any is written."""
    named(queue, name)
    return [(encoded_args(name, args), redaction.declared(name, args, secret)) for args in list(many_args)]


def many_rows(
    queue: str, name: str, checked: list[tuple[str, list[str] | None]], at: int | None, now: int, priority: int
) -> Iterable[tuple[Any, ...]]:
    """The rows of statement `later_many`'s COPY, due at `at` or, when None, at the database's `now`."""
    run_at, later_on = (now, False) if at is None else (at, at > now)
    for text, hidden in checked:
        yield (queue, name, text, run_at, later_on, priority, ATTEMPTS, hidden, now)


def promoted(db: psycopg.Connection[Any], now: int | None = None) -> list[str]:
    """Lets jobs scheduled for `now` or before be claimed; returns the queues that got some."""
    return [row[0] for row in db.execute(queries["promote"], {"now": now})]


def claimed(
    db: psycopg.Connection[Any],
    queue: str,
    now: int | None = None,
    *,
    limit: int = 1,
    lease: float = LEASE,
    after: tuple[int, int] | None = None,
    worker: int | None = None,
    budgets: str = "{}",
    claim: int | None = None,
) -> list[Job]:
    """Claims up to `limit` jobs of `queue` due at `now` (the database's clock when None), in claim order, and commits.

    Each claimed row has its attempt counted and is held under a new claim token; see
    the claim in queries.sql. With `worker` (a Worker's id in job_workers) the job is
    held while that worker beats; without, for `lease` seconds. `after` (priority,
    run_at) is where the claim starts in that order, from frontier.py; None: at the front.
    `budgets` is the attempts each performer's policy allows, from `budgets_of`: the
    claim writes them on the rows, so a job's last attempt is known wherever its fate
    is decided. `claim` is the token to hold them under (new_claim()), made by the
    caller when it must be able to give back a claim whose answer it never heard.
    """
    params = claim_params(queue, now, after, lease=lease, worker=worker, budgets=budgets, claim=claim)
    claim = params["claim"]
    try:
        jobs = claim_rows(db, claim_statement(limit, after is not None), params)
    except psycopg.errors.UniqueViolation:
        # Two jobs of one concurrency key: twice in this batch, or taken side by side
        # by two claims. The index refused it and nothing was claimed; one job at a
        # time cannot clash with itself, and the next claim sees the key in work.
        return (
            []
            if limit == 1
            else claimed(db, queue, now, limit=1, lease=lease, after=after, worker=worker, budgets=budgets, claim=claim)
        )  # the refused claim took nothing
    return jobs


def claim_rows(db: psycopg.Connection[Any], statement: sql.Composed, params: dict[str, Any]) -> list[Job]:
    """Sends a claim's statement, committed alone, and answers its rows as Jobs in claim order."""
    jobs = claim_answer(db, statement, params, job_row)
    jobs.sort(key=lambda job: (job.priority, job.due_at, job.id))
    return jobs


def claim_answer(
    db: psycopg.Connection[Any], statement: sql.Composed, params: dict[str, Any], row: RowFactory[R]
) -> list[R]:
    """Sends a claim's statement, committed alone, and answers its rows as `row` makes them.

    Its jsonb columns are read with ArgsLoader (job.py). Shared by `claimed` and a
    limited queue's claim (limits.py), whose answer says more than its jobs.
    """
    with contextlib.nullcontext() if db.autocommit else db.transaction():  # one statement commits alone
        with db.cursor(row_factory=row) as cursor:
            cursor.adapters.register_loader("jsonb", ArgsLoader)
            return cursor.execute(statement, params).fetchall()


def claim_params(
    queue: str,
    now: int | None,
    after: tuple[int, int] | None,
    *,
    lease: float = LEASE,
    worker: int | None = None,
    budgets: str = "{}",
    claim: int | None = None,
) -> dict[str, Any]:
    """The parameters of a claim (`claimed`'s, and a limited queue's in limits.py); a new token when `claim` is None."""
    params = {
        "queue": queue,
        "now": now,
        "lease": int(lease * 1000),
        "claim": new_claim() if claim is None else claim,
        "worker": worker,
        "held": None if worker is None else HELD,
        "budgets": budgets,
    }
    if after is not None:
        params["after_priority"], params["after_run_at"] = after
    return params


def budgets_of(performers: Mapping[str, Performer]) -> str:
    """The attempts each performer's own policy allows, as the claim reads them: a JSON object by job name.

    Performers without a policy of their own are left out: their rows keep the
    max_attempts they were queued with (ATTEMPTS, or what `retried` gave them).
    """
    return json.dumps(
        {
            name: policy.attempts
            for name, perform in performers.items()
            if (policy := getattr(perform, "policy", None)) is not None
        }
    )


BOUND = " AND (priority, run_at, id) >= (%(after_priority)s, %(after_run_at)s, 0)"  # a claim's start (frontier.py)


@functools.cache
def claim_statement(limit: int, bounded: bool = False) -> sql.Composed:
    """The claim with its LIMIT written in (see the claim in queries.sql for why), and its BOUND when `bounded`."""
    if not isinstance(limit, int) or limit < 1:
        raise ValueError(f"a claim takes one job or more, not {limit!r}")
    return sql.SQL(queries["claim"]).format(limit=sql.Literal(limit), bound=sql.SQL(BOUND if bounded else ""))


def finished(db: psycopg.Connection[Any], jobs: list[Job]) -> set[int]:
    """Deletes the rows of jobs that succeeded, on db's transaction; returns the ids still ours.

    A row an operator cancelled meanwhile is kept for the shelf, but for a job past its point of no return.
    """
    if not jobs:
        return set()
    params = {
        "ids": [job.id for job in jobs],
        "claim": jobs[0].claim,
        "irrevocable": [job.id for job in jobs if job.irrevocable],
    }
    return {row[0] for row in db.execute(queries["finish"], params)}


def finished_one(db: psycopg.Connection[Any] | psycopg.Cursor[Any], job: Job) -> bool:
    """Deletes one succeeded job's row on the transaction of `db` (a connection or cursor); False if not ours.

    As `finished` does, it keeps a row an operator cancelled, but for a job past its point of no return.
    """
    params = {"id": job.id, "claim": job.claim, "irrevocable": job.irrevocable}
    return db.execute(queries["finish_one"], params).rowcount == 1


def attempt_failed(
    db: psycopg.Connection[Any],
    job: Job,
    reason: str,
    traceback: str,
    wait: int,
    max_attempts: int,
    now: int | None = None,
    ran: float | None = None,
) -> bool:
    """Records a failed attempt, due again `wait` ms after `now`, on db's transaction; False when the claim was
    no longer ours. `ran`: the seconds the attempt ran, kept beside its reason (None: not known)."""
    params = {
        "id": job.id,
        "claim": job.claim,
        "reason": reason,
        "traceback": traceback,
        "wait": wait,
        "now": now,
        "max_attempts": max_attempts,
        "ran": None if ran is None else min(round(ran * 1000), RAN_MAX),
    }
    return db.execute(queries["fail"], params).rowcount == 1


def secret_of(db: psycopg.Connection[Any], job: Job) -> list[str] | None:
    """The names of `job`'s secret arguments, as its caller gave them to `later`; None when it has none."""
    row = db.execute(queries["secret_of"], {"id": job.id}).fetchone()
    return row[0] if row else None


def released(db: psycopg.Connection[Any], given: list[tuple[int, int, int]], now: int | None = None) -> list[Any]:
    """Gives claimed jobs that never started back to the queue, due again as they were before the claim.

    `given` is (id, claim, due_at) for each, HELD for a due_at the worker never learnt.
    Answers (id, queue, batch, callback) for each row given back.
    """
    if not given:
        return []
    ids, claims, due_ats = (list(column) for column in zip(*given, strict=True))
    params = {"ids": ids, "due_ats": due_ats, "claims": claims, "now": now}
    return db.execute(queries["release"], params).fetchall()


def lapsed(db: psycopg.Connection[Any], given: list[tuple[int, int]], now: int | None = None) -> None:
    """Lets the leases of (id, claim) rows a worker was cut off from while they ran run out now (see lapse)."""
    if given:
        ids, claims = (list(column) for column in zip(*given, strict=True))
        db.execute(queries["lapse"], {"ids": ids, "claims": claims, "now": now})


def held_by(db: psycopg.Connection[Any], worker: int) -> list[tuple[int, int]]:
    """The (id, claim) of every row the database says `worker` holds now."""
    return db.execute(queries["held_by"], {"held": HELD, "worker": worker}).fetchall()


def announced(db: psycopg.Connection[Any], queues: Iterable[str]) -> None:
    """Wakes the workers of `queues`, as `later` does: jobs are due on them again."""
    for queue in sorted(queues):
        db.execute(queries["notify"], {"queue": queue})


def new_claim() -> int:
    """A new claim token: random, so no two claims share one."""
    return secrets.randbits(63)


def listed(db: psycopg.Connection[Any], queue: str | None = None) -> list[dict[str, Any]]:
    """Every job still in the table (waiting, leased or failed for good), in the order queued.

    Each is a dict with id, queue, name, args, priority, run_at, scheduled, attempts,
    max_attempts, failure ("" when none), traceback and reasons (one per failure).
    """
    with db.cursor(row_factory=dict_row) as cursor:
        return cursor.execute(queries["listed"], {"queue": queue}).fetchall()


def outstanding(db: psycopg.Connection[Any], queues: list[str], now: int | None = None) -> int:
    """How many jobs of `queues` are due at `now` or held under a lease that has not run out."""
    count: int = one(db.execute(queries["outstanding"], {"queues": queues, "now": now}))[0]
    return count


def keys_freed(db: psycopg.Connection[Any], now: int | None = None) -> int:
    """Frees the concurrency keys of keyed jobs whose lease ran out; returns how many."""
    return db.execute(queries["expire"], {"now": now}).rowcount


def reaped(db: psycopg.Connection[Any], now: int | None = None) -> list[Job]:
    """Marks jobs whose worker died on their last attempt as failed for good; returns them.

    Call it through `settling.reaped_settled` (runtime/), which lets their chains and batches hear of it
    on the same transaction.
    """
    with db.cursor(row_factory=job_row) as cursor:
        return cursor.execute(queries["reap"], {"now": now}).fetchall()
