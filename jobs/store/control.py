"""The queue's control room: the workers that serve it, and an operator's hand on it.

Each worker writes its row in job_workers before any of its threads claims (runtime/watchdog.py's
Heartbeat), and moves its beat_at every lease / BEATS, never a job's row; every worker's reaper
takes one silent for SILENT of its lease for gone and lets the leases of its jobs run out, so they
come back within a lease of its last beat. A performer let go runs on in a row of job_let_go.
A paused queue is a row of job_paused_queues, which each worker reads once per POLL_INTERVAL. A
cancelled job that waits goes on the failed shelf (shelf.py) as "cancelled"; one that runs is
marked, and its worker settles it onto that shelf within a POLL_INTERVAL (`cancelled_among`,
`cancellation_settled`; a settlement that comes first finds the mark and does the same), unless
it is past its point of no return: then it ends as its performer ends it, so no retry does it twice.
"""

import os
import socket
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
from psycopg.rows import dict_row, namedtuple_row

from ..core.job import Job
from . import flows
from .schema import one, read_once
from .shelf import job_id

queries = read_once(Path(__file__).with_name("queries.sql"))  # store/'s statements, by name

BEATS = 4  # heartbeats per lease; the reaper of each worker runs as often
SILENT = 0.75  # of its lease: a worker whose last beat is older is taken for gone (three beats missed)
KEPT = 3600.0  # seconds the row of a worker gone stays listed, before the reaper deletes it
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


# The workers' rows (job_workers) and the performers they let go (job_let_go).


@dataclass(frozen=True)
class Registration:
    """What a worker's row in job_workers says of it."""

    id: int  # chosen at random by the worker; its claims mark the jobs they hold with it
    queues: list[str]
    threads: int
    lease: float  # seconds
    version: int  # the schema version its code needs


def registered(db: psycopg.Connection[Any], worker: Registration) -> str | None:
    """Writes `worker`'s row (or takes it back); answers how it had ended, when a reaper had marked it gone."""
    params = {
        "id": worker.id,
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "queues": worker.queues,
        "threads": worker.threads,
        "lease": round(worker.lease * 1000),
        "version": worker.version,
        "now": None,
    }
    ended: str | None = one(db.execute(queries["register"], params))[0]
    return ended


def beaten(db: psycopg.Connection[Any], worker_id: int) -> bool:
    """Moves the worker's last beat to now; False when its row is gone or marked gone (register again)."""
    return db.execute(queries["beat"], {"id": worker_id, "now": None}).fetchone() is not None


def signed_off(db: psycopg.Connection[Any], worker_id: int) -> None:
    """Marks the worker's row stopped: a clean stop, with nothing held."""
    db.execute(queries["sign_off"], {"id": worker_id, "now": None})


def orphans_lapsed(db: psycopg.Connection[Any], now: int | None = None) -> list[tuple[int, int]]:
    """Takes silent workers for gone and lets the leases of jobs held by gone workers run out; answers (job, worker)
    pairs."""
    return db.execute(queries["orphans"], {"silent": SILENT, "now": now}).fetchall()


def workers_pruned(db: psycopg.Connection[Any], now: int | None = None) -> int:
    """Deletes the rows of workers gone for longer than KEPT; answers how many."""
    return db.execute(queries["workers_pruned"], {"kept": round(KEPT * 1000), "now": now}).rowcount


def workers_listed(db: psycopg.Connection[Any], now: int | None = None) -> list[dict[str, Any]]:
    """The workers at work and those gone within KEPT, newest first, as dicts (the columns of job_workers,
    `now` the database's moment, `holding` the jobs each holds, and `state`: working, silent, stopped or gone)."""
    with db.cursor(row_factory=dict_row) as cursor:
        rows = cursor.execute(queries["workers"], {"kept": round(KEPT * 1000), "now": now}).fetchall()
    for row in rows:
        row["state"] = state_of(row)
    return rows


def state_of(row: dict[str, Any]) -> str:
    """How a worker's row reads: "working", "silent" (not beating, not yet taken for gone), "stopped" or "gone"."""
    if row["ending"] == "stopped":
        return "stopped"
    if row["ending"] is not None:
        return "gone"
    return "silent" if row["now"] - row["beat_at"] > row["lease"] * SILENT else "working"


def let_go_recorded(db: psycopg.Connection[Any], rows: list[tuple[int, int]]) -> None:
    """Records in job_let_go the (id, claim) rows whose performer runs on while they are settled without it."""
    db.execute(queries["let_go_recorded"], {"ids": [id for id, _ in rows], "claims": [claim for _, claim in rows]})


def let_go_forgotten(db: psycopg.Connection[Any], rows: list[tuple[int, int]]) -> None:
    """Deletes the job_let_go rows of (id, claim) whose performer has returned: their room is free again."""
    db.execute(queries["let_go_forgotten"], {"ids": [id for id, _ in rows], "claims": [claim for _, claim in rows]})


def let_go_pruned(db: psycopg.Connection[Any]) -> None:
    """Deletes the rows workers gone left in job_let_go, for the reaper."""
    db.execute(queries["let_go_pruned"])
