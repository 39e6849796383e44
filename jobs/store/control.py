"""An operator's hand on the queue: pausing a queue, running a job for later now, cancelling jobs that wait or run.

A paused queue is a row of job_paused_queues; each worker reads `paused_queues` once per
POLL_INTERVAL and claims nothing from those queues, while the jobs in hand finish. A
cancelled job that waits goes on the failed shelf (shelf.py) with the reason
"cancelled"; one that runs is marked, its worker hears of it within a POLL_INTERVAL
(`cancelled_among`) and settles it with `cancellation_settled`, onto the same shelf; a
settlement of the job that comes first finds the mark and does the same (settling.py).
A job past its point of no return (Job.point_of_no_return) is the exception: it ends as
its performer ends it, and a success is deleted, so no retry does it twice.
"""

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
from psycopg.rows import namedtuple_row

from ..core.job import Job
from ..core.sql import read_once
from . import flows
from .shelf import job_id

queries = read_once(Path(__file__).with_name("queries.sql"))  # store/'s statements, by name

CANCELLED = "cancelled"  # the reason a cancelled job carries on the shelf
# What a cancel does to a job that runs, as the command line and the dashboard say it.
RUNNING_CANCELLED = (
    "its worker shelves it as cancelled within a poll interval, its writes undone, unless it is past its point "
    "of no return (a letter handed to its mail server): then it ends as it would have, a success done, not shelved"
)


def paused(db: psycopg.Connection[Any], queue: str, now: int | None = None) -> bool:
    """Pauses `queue`: workers claim none of its jobs until it is resumed; True if it was running.

    Jobs already claimed finish and settle as usual; jobs keep being queued on it.
    Workers see the pause within one POLL_INTERVAL. Written on db's current transaction.
    """
    queue_named(queue)
    return db.execute(queries["pause"], {"queue": queue, "now": now}).fetchone() is not None


def resumed(db: psycopg.Connection[Any], queue: str) -> bool:
    """Lets workers claim from `queue` again; True if it was paused."""
    queue_named(queue)
    return db.execute(queries["resume"], {"queue": queue}).fetchone() is not None


def paused_queues(db: psycopg.Connection[Any]) -> set[str]:
    """The names of the paused queues, for a worker to read once per POLL_INTERVAL."""
    return {row[0] for row in db.execute(queries["paused_queues"])}


def paused_holding(db: psycopg.Connection[Any], ids: list[int] | None = None) -> list[str]:
    """The paused queues holding any of the jobs `ids` (None: any job waiting to run), by name.

    For a retry, whose jobs are due at once but run only once their queue is resumed.
    """
    ids = None if ids is None else [job_id(id) for id in ids]
    return [row[0] for row in db.execute(queries["paused_holding"], {"ids": ids})]


def hastened(db: psycopg.Connection[Any], id: int, now: int | None = None) -> str | None:
    """Makes a job that waits for a later moment due at `now` (the database's clock when None): run now.

    A job queued with `at`, or a retry waiting out its backoff. It joins the claim's
    index at once and its queue's workers are woken when db's transaction commits.
    Answers the job's queue, or None when the job waits for no later moment: due
    already, in work, on the shelf (its way back is `retried`), or no such job.
    """
    return next((row[0] for row in db.execute(queries["hasten"], {"id": job_id(id), "now": now})), None)


def queue_named(queue: object) -> None:
    """Refuses anything but a queue's name: a string with a character other than space, and no NUL."""
    if not isinstance(queue, str) or not queue.strip() or "\x00" in queue:
        raise ValueError(f"name a queue: got {queue!r}")


@dataclass
class Cancellation:
    """What `cancelled` changed, by job id."""

    shelved: list[int] = field(default_factory=list)  # were waiting: on the shelf now, and will not run
    signalled: list[int] = field(default_factory=list)  # were running: their workers hear of it within a POLL_INTERVAL

    def __len__(self) -> int:
        return len(self.shelved) + len(self.signalled)


def cancelled(db: psycopg.Connection[Any], *ids: int, now: int | None = None) -> Cancellation:
    """Cancels the jobs named by id, and says which were waiting and which running.

    A job that waits (due, scheduled, or whose worker's lease ran out) never runs: it
    goes on the failed shelf at once with the reason CANCELLED ("cancelled"), where
    `failed` lists it and `retried` or `discarded` take it, and its chain or batch
    hears that it ended, as after a failure for good. A job that runs is marked; its
    worker hears of it within one POLL_INTERVAL and settles it onto the
    shelf as cancelled, not retried, whatever its performer does, unless the job is
    past its point of no return: then a success is deleted, not shelved. Ids of jobs on the
    shelf already, or of no job, are left alone. One transaction for all of them.
    """
    if not ids:
        raise ValueError("name the jobs to cancel by id")
    params = {"ids": [job_id(id) for id in ids], "now": now}
    # One lock order for every statement that takes a job's row and its batch's: the jobs'
    # rows first (in id order, so two cancels never deadlock either), then the batches.
    # A settlement locks its job's row, then its batch's: the other way round, a cancel of
    # a batch's members deadlocked with the settlement of one of them on the first try.
    with db.transaction(), db.cursor(row_factory=namedtuple_row) as cursor:
        cursor.execute(queries["cancel_locked"], params)
        # namedtuple rows: Any, since psycopg's type for them names no columns
        stopped: list[Any] = cursor.execute(queries["cancel_waiting"], params).fetchall()
        running: list[Any] = cursor.execute(queries["cancel_running"], params).fetchall()
        flows.settled(db, [], stopped)
    return Cancellation(sorted(job.id for job in stopped), sorted(job.id for job in running))


def cancelled_among(db: psycopg.Connection[Any], jobs: list[Job]) -> set[int]:
    """The ids of the held `jobs` (of one claim) that were cancelled while they ran.

    For the cancels chore of the worker's listener (maintenance.py): the worker then tells the job's
    performer and settles the job with `cancellation_settled`.
    """
    if not jobs:
        return set()
    params = {"ids": [job.id for job in jobs], "claim": jobs[0].claim}
    return {row[0] for row in db.execute(queries["cancelled_among"], params)}


def cancellation_settled(db: psycopg.Connection[Any], job: Job, traceback: str = "", now: int | None = None) -> bool:
    """Settles a job cancelled while it ran: onto the shelf as cancelled, on db's transaction.

    The settlement calls it in place of `finished` or `failed` for a job that
    `cancelled_among` named, whatever its performer did; its chain or batch hears
    that it ended. False when the claim was no longer this worker's.
    """
    params = {"id": job.id, "claim": job.claim, "traceback": traceback, "now": now}
    with db.cursor(row_factory=namedtuple_row) as cursor:
        settled: list[Any] = cursor.execute(queries["cancellation_settled"], params).fetchall()  # as in `cancelled`
    flows.settled(db, [], settled)
    return bool(settled)


def cancelled_reaped(db: psycopg.Connection[Any], now: int | None = None) -> list[Any]:
    """Puts cancelled jobs whose worker died before settling them on the shelf; returns them.

    For the reaper, before `store.reaped`, so such a job is not claimed and run again.
    """
    with db.cursor(row_factory=namedtuple_row) as cursor:
        lost: list[Any] = cursor.execute(queries["cancelled_reaped"], {"now": now}).fetchall()  # as in `cancelled`
    flows.settled(db, [], lost)
    return lost
