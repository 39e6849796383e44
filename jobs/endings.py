"""Settlements made off a work thread: a job past its timeout, and jobs whose worker died.

The listener's chores (chores.py) and the worker's watch (workers.py) call these on the
listener's connection, for jobs no work thread will settle: each is fenced by its claim
token and tells the job's chain or batch, as the runner's own settlements do.
"""

import logging
from collections.abc import Mapping
from typing import Any

import psycopg

from . import store
from .job import Job, Performer
from .outcomes import Outcome, moved_flows_on, recorded_failure
from .policies import policy_of
from .runner import Counts

log = logging.getLogger("jobs")
LOST = Outcome("failed", "lost", logging.ERROR, "its worker stopped during the last attempt", final=True)


def timed_out(
    db: psycopg.Connection[Any], job: Job, performers: Mapping[str, Performer], limit: float, counts: Counts
) -> None:
    """Records that `job` ran past its timeout of `limit` seconds, on `db` (not its own thread's connection).

    The attempt fails with a TimeoutError, retried or ended by the job's policy as any
    failure is, and its chain or batch hears of an end. The claim token fences it: if
    the job settled meanwhile, nothing is written.
    """
    error = TimeoutError(f"timed out after {limit:g} s")
    outcome = recorded_failure(db, job, policy_of(performers.get(job.name)), error, str(error), "", None)
    if outcome.kind != "lease_lost":
        counts.add(outcome.kind)
        counts.timed_out += 1
        log.log(outcome.level, "job %s (%s on %s) %s", job.id, job.name, job.queue, outcome.message)


def reaped(db: psycopg.Connection[Any], now: int | None = None) -> list[Job]:
    """Fails for good the jobs whose worker died on their last attempt, and settles their flows.

    One transaction: the jobs leave the queue and their chains and batches hear of it
    together, as they do of any failure the runner records.
    """
    with db.transaction():
        lost = store.reaped(db, now)
        moved_flows_on(db, [(job, LOST) for job in lost])
    for job in lost:
        log.error(
            "job %s (%s on %s) failed for good: its worker stopped during the last attempt", job.id, job.name, job.queue
        )
    return lost
