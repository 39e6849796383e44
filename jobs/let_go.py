"""The performers a worker let go of that still run: counted against their queue's limit and key until they return.

A job let go for its timeout or at the end of a stop's grace (keeper.py), or cancelled
while it runs (chores.py), is settled without its performer, which Python cannot stop.
Before that settlement, `recorded` writes a row of job_let_go per such performer (its
queue, key and slot), which the claims count in work; every look of the keeper,
`returned` deletes the rows of those whose performer has returned (Job.performing).
Used on the listener's thread only.
"""

from typing import Any

import psycopg

from .job import Job
from .sql import queries


class LetGo:
    """The performers of one worker that run on after their jobs were settled without them."""

    def __init__(self) -> None:
        self._running: dict[tuple[int, int], Job] = {}  # (id, claim): the job, while its row is in job_let_go

    def recorded(self, db: psycopg.Connection[Any], jobs: list[Job]) -> None:
        """Records, on db's transaction, those of `jobs` whose performer still runs, before they are settled."""
        running = [job for job in jobs if job.performing and job.claim is not None]
        if running:
            params = {"ids": [job.id for job in running], "claims": [job.claim for job in running]}
            db.execute(queries["let_go_recorded"], params)
            self._running.update(((job.id, job.claim), job) for job in running if job.claim is not None)

    def returned(self, db: psycopg.Connection[Any]) -> set[str]:
        """Deletes the rows of the performers that have returned; answers their queues, which have room again."""
        done = [(key, job) for key, job in self._running.items() if not job.performing]
        if not done:
            return set()
        params = {"ids": [id for (id, _), _ in done], "claims": [claim for (_, claim), _ in done]}
        db.execute(queries["let_go_forgotten"], params)
        for key, _ in done:
            del self._running[key]
        return {job.queue for _, job in done}


def gone_pruned(db: psycopg.Connection[Any]) -> None:
    """Deletes the rows workers gone left in job_let_go, for the reaper."""
    db.execute(queries["let_go_pruned"])
