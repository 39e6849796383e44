"""The settlement of jobs whose worker died on their last attempt, made by the reaper off any work thread.

The listener's reaper (maintenance.py) calls it on the listener's connection, for jobs no
work thread will settle: it tells their chains and batches, as the runner's own
settlements do.
"""

import logging
from typing import Any

import psycopg

from ..core.job import Job
from ..store import claims
from .settling import Outcome, moved_flows_on

log = logging.getLogger("jobs")
LOST = Outcome("failed", "lost", logging.ERROR, "its worker stopped during the last attempt", final=True)


def reaped(db: psycopg.Connection[Any], now: int | None = None) -> list[Job]:
    """Fails for good the jobs whose worker died on their last attempt, and settles their flows.

    One transaction: the jobs leave the queue and their chains and batches hear of it
    together, as they do of any failure the runner records.
    """
    with db.transaction():
        lost = claims.reaped(db, now)
        moved_flows_on(db, [(job, LOST) for job in lost])
    for job in lost:
        log.error(
            "job %s (%s on %s) failed for good: its worker stopped during the last attempt", job.id, job.name, job.queue
        )
    return lost
