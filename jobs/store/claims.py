"""The statements of a job's life once queued: claiming and settling (enqueue.py writes the row).

A work thread (runtime/work_thread.py) calls `claimed` to take due rows under a lease, and the
runner settles each with `finished` or `attempt_failed`; a worker's maintenance promotes scheduled
jobs, gives back what it never started and lets go of the leases of the gone. It speaks SQL only
(queries.sql); chains and batches (flows.py) and the failed shelf (shelf.py) keep their own.
"""

import contextlib
import dataclasses
import functools
import json
import secrets
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import psycopg
from psycopg import sql
from psycopg.rows import RowFactory

from ..core.job import LEASE, ArgsLoader, Job, Performer, job_row
from .schema import one, read_once

queries = read_once(Path(__file__).with_name("queries.sql"))  # store/'s statements, by name

RAN_MAX = 2**31 - 1  # ms of an attempt's run kept at most (24 days): the integer ran holds for it
R = TypeVar("R")  # a row of a claim's answer, as its row factory makes it
HELD = 2**63 - 1  # run_at of a job a Worker holds: the largest bigint, a lease that runs out only when the worker goes


def now_ms() -> int:
    """This machine's moment, in integer milliseconds since the epoch.

    The queue's own statements read the database's clock instead (schema.py), so that
    workers on machines whose clocks disagree agree on leases; this is for callers
    that fix a moment of their own (`at=`, `now=`).
    """
    return time.time_ns() // 1_000_000


@dataclasses.dataclass(frozen=True)
class Hold:
    """How a claim holds the rows it takes: for `lease` seconds, or while `worker` (a Worker's id in job_workers)
    beats; under the token `claim` (None: a new one); writing on each the attempts its performer's policy allows
    (`budgets`, from `budgets_of`), so a job's last attempt is known wherever its fate is decided."""

    lease: float = LEASE
    worker: int | None = None
    budgets: str = "{}"
    claim: int | None = None  # made by a caller that must be able to give back a claim whose answer it never heard


@dataclasses.dataclass(frozen=True)
class FailedAttempt:
    """What a failed attempt leaves on its row: its reason, its traceback, and the seconds it ran (None: unknown)."""

    reason: str
    traceback: str = ""
    ran: float | None = None


UNHELD = Hold()  # a caller's own claim: for LEASE seconds, under a new token


def promoted(db: psycopg.Connection[Any], now: int | None = None) -> list[str]:
    """Lets jobs scheduled for `now` or before be claimed; returns the queues that got some."""
    return [row[0] for row in db.execute(queries["promote"], {"now": now})]


def claimed(
    db: psycopg.Connection[Any],
    queue: str,
    now: int | None = None,
    *,
    limit: int = 1,
    after: tuple[int, int] | None = None,
    hold: Hold = UNHELD,
) -> list[Job]:
    """Claims up to `limit` jobs of `queue` due at `now` (the database's clock when None), in claim order, and commits.

    Each claimed row has its attempt counted and is held as `hold` says; see the claim in
    queries.sql. `after` (priority, run_at) is where the claim starts in that order, from
    frontier.py; None: at the front.
    """
    params = claim_params(queue, now, after, hold)
    try:
        jobs = claim_rows(db, claim_statement(limit, after is not None), params)
    except psycopg.errors.UniqueViolation:
        # Two jobs of one concurrency key: twice in this batch, or taken side by side
        # by two claims. The index refused it and nothing was claimed; one job at a
        # time cannot clash with itself, and the next claim sees the key in work.
        # The refused claim took nothing: try again for one job alone.
        if limit == 1:
            return []
        return claimed(db, queue, now, after=after, hold=dataclasses.replace(hold, claim=params["claim"]))
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


def claim_params(queue: str, now: int | None, after: tuple[int, int] | None, hold: Hold = UNHELD) -> dict[str, Any]:
    """The parameters of a claim (`claimed`'s, and a limited queue's in limits.py); a new token unless `hold` says."""
    token = new_claim() if hold.claim is None else hold.claim
    params = {"queue": queue, "now": now, "lease": int(hold.lease * 1000), "claim": token, "budgets": hold.budgets}
    params |= {"worker": hold.worker, "held": None if hold.worker is None else HELD}
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
    irrevocable = [job.id for job in jobs if job.irrevocable]
    params = {"ids": [job.id for job in jobs], "claim": jobs[0].claim, "irrevocable": irrevocable}
    return {row[0] for row in db.execute(queries["finish"], params)}


def finished_one(db: psycopg.Connection[Any] | psycopg.Cursor[Any], job: Job) -> bool:
    """Deletes one succeeded job's row on the transaction of `db` (a connection or cursor); False if not ours.

    As `finished` does, it keeps a row an operator cancelled, but for a job past its point of no return.
    """
    params = {"id": job.id, "claim": job.claim, "irrevocable": job.irrevocable}
    return db.execute(queries["finish_one"], params).rowcount == 1


def attempt_failed(
    db: psycopg.Connection[Any], job: Job, failed: FailedAttempt, wait: int, max_attempts: int, now: int | None = None
) -> bool:
    """Records a failed attempt, due again `wait` ms after `now`, on db's transaction; False when the claim was
    no longer ours."""
    ran = None if failed.ran is None else min(round(failed.ran * 1000), RAN_MAX)
    params = {"id": job.id, "claim": job.claim, "reason": failed.reason, "traceback": failed.traceback, "wait": wait}
    params |= {"now": now, "max_attempts": max_attempts, "ran": ran}
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
