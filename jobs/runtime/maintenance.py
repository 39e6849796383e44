"""The chores of a worker's listener, each on a timer of its own, on the listener's connection.

Every WATCH_INTERVAL, the keeper (supervisor.py): let go of what the threads cannot settle
now, settle what the ledger holds loose, and every lease / BEATS compare the rows the
database says the worker holds with the ledger. Every POLL_INTERVAL: promote the
scheduled jobs whose moment has come (and wake a thread for them), queue the job of
each due tick of the worker's schedules, read which queues are paused and which are
limited (limits.py), look for where each queue's claims should start (frontier.py), and
hear which jobs in hand an operator cancelled. Every PULSE_EVERY, add the worker's counts
per minute to job_pulse (pulse.py), and once more when it stops. Every lease / BEATS, the
reaper: take silent workers for gone and let their jobs' leases run out (workers_table.py), free
the concurrency keys of leases that ran out, shelve the cancelled and the lost, and prune
the rows of workers long gone and the pulse's minutes past PULSE_KEPT; its statements
skip rows locked at that instant, so a frozen worker costs only its own jobs. The listener
runs each alone (listener.py): one that fails or is slow is logged and holds up none of
the others' timers. The heartbeat is not a chore: it has a thread and a connection of its
own (heartbeat.py).
"""

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import psycopg

from ..core.job import FATE, Job
from ..store import claims, control, pulse, workers_table
from ..store.frontier import Frontiers
from ..store.limits import Limits
from ..store.schedules import Schedule, fired
from . import settling
from .holdings import Ledger, LetGo, gone_pruned
from .supervisor import WATCH_INTERVAL, Keeper
from .work_thread import Doorbell

log = logging.getLogger("jobs")


@dataclass
class Chore:
    """A chore of the listener: its name in the log, how often it runs (seconds), and what it does on a connection.

    at_stop: asked once the worker has stopped; when it answers True, the chore runs once
    more, on a connection of its own (None: never).
    """

    name: str
    every: float
    do: Callable[[psycopg.Connection[Any]], object]
    next_at: float = 0.0  # time.monotonic() moment it is due next; 0: at once
    at_stop: Callable[[], bool] | None = None


def timetable(
    *,
    queues: list[str],
    poll: float,
    lease: float,
    keeper: Keeper,
    ledger: Ledger,
    let_go: LetGo,
    doorbell: Doorbell,
    frontiers: Frontiers,
    schedules: Sequence[Schedule],
    paused_now: Callable[[set[str]], None],
    limits: Limits,
    counted: pulse.Pulse,
) -> list[Chore]:
    """The chores of a worker on `queues`, each due at once when the listener starts."""
    reap = lease / workers_table.BEATS
    return [
        Chore("keeper", WATCH_INTERVAL, keeper.kept),
        Chore("limits", poll, limits.read),  # before the pauses, whose first read lets the threads claim
        Chore("pauses", poll, lambda db: paused_now(control.paused_queues(db))),
        Chore("promotion", poll, lambda db: promoted(db, queues, doorbell)),
        Chore("schedules", poll, lambda db: fired(db, schedules)),  # the jobs of due ticks, once across workers
        Chore("frontier", poll, lambda db: looked(db, queues, frontiers, doorbell)),
        Chore("cancels", poll, lambda db: cancels_heard(db, ledger, let_go)),
        Chore("pulse", pulse.PULSE_EVERY, counted.flushed, at_stop=counted.pending),  # a failed flush keeps its counts
        Chore("reaper", reap, reaped),
    ]


def promoted(db: psycopg.Connection[Any], queues: list[str], doorbell: Doorbell) -> None:
    """Promotes the scheduled jobs whose moment has come, and wakes a thread when `queues` got some."""
    if set(claims.promoted(db)) & set(queues):
        doorbell.ring()  # not only by the notification, which a polling worker misses


def looked(db: psycopg.Connection[Any], queues: list[str], frontiers: Frontiers, doorbell: Doorbell) -> None:
    """Looks where each queue's claims start, past dead index entries (frontier.py)."""
    if frontiers.looked(db, queues):
        doorbell.ring()  # a job the claims passed over is due


def cancels_heard(db: psycopg.Connection[Any], ledger: Ledger, let_go: LetGo) -> None:
    """Hears which jobs in hand an operator cancelled, one claim at a time."""
    for hand in ledger.hands():
        jobs = hand.held()
        if jobs:
            heard_cancelled(db, jobs, let_go)


def heard_cancelled(db: psycopg.Connection[Any], jobs: list[Job], let_go: LetGo | None = None) -> None:
    """Settles at once, as cancelled, the jobs of one claim an operator cancelled while held, and tells them.

    Their performer may run on (it sees `current_job().cancelled`), but whatever it
    does, the job stays on the shelf as cancelled: the runner knows by `cancelling`.
    One that runs is recorded in `let_go` on the same transaction, so it counts against
    its queue's limit and its key until it returns.
    A job past its point of no return (Job.point_of_no_return) is left to end as its
    performer ends it: shelved now, a success already done could be done again by a retry.
    """
    cancelled = control.cancelled_among(db, jobs)
    for job in jobs:
        if job.id in cancelled and not job.cancelling:
            with FATE:
                too_late = job.irrevocable
                job.cancelling = not too_late
            if too_late:
                too_late_told(job)
                continue
            job.cancelled.set()
            with db.transaction():
                if let_go is not None:
                    let_go.recorded(db, [job])
                control.cancellation_settled(db, job)
            log.warning(
                "job %s (%s on %s) was cancelled while in hand: it is on the shelf, and not retried",
                job.id,
                job.name,
                job.queue,
            )


def too_late_told(job: Job) -> None:
    """Logs, once, that a job was cancelled past its point of no return, and so runs on."""
    if not job.cancel_too_late:
        job.cancel_too_late = True
        log.warning(
            "job %s (%s on %s) was cancelled past its point of no return: it runs on, and a success is not shelved",
            job.id,
            job.name,
            job.queue,
        )


def reaped(db: psycopg.Connection[Any]) -> None:
    """The reaper: jobs of workers gone come back, keys of leases that ran out are freed, the lost are shelved."""
    for job, worker_id in workers_table.orphans_lapsed(db):
        log.warning("job %s was held by worker %s, which stopped beating: its lease runs out now", job, worker_id)
    claims.keys_freed(db)
    with db.transaction():
        control.cancelled_reaped(db)  # before the reaper, so a cancelled job is shelved, never run again
    settling.reaped_settled(db)
    workers_table.pruned(db)
    gone_pruned(db)
    pulse.pruned(db)
