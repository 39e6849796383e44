"""The heartbeat: the thread that says a worker is alive, and watches its jobs' timeouts.

On a connection of its own, apart from the listener's chores, so that no chore's
statement can hold it up. When it connects it registers the worker in job_workers and
reads the paused queues (roster.py, control.py); only then do the work threads claim.
Every lease / BEATS it beats the worker's row, which no job's statement locks; every
WATCH_INTERVAL it looks for a thread whose job ran past its timeout or grace, and
lets it go (watch.py). When the worker has stopped it marks the row stopped.
"""

import logging
import threading
import time
from typing import TYPE_CHECKING, Any

import psycopg

from . import control, roster
from .connections import closed, kept_running, opened

if TYPE_CHECKING:  # workers.py imports this module
    from .workers import Worker

WATCH_INTERVAL = 0.1  # seconds between looks at the jobs in hand for one past its timeout or grace
WATCH_LOCK_WAIT = 1.0  # seconds a statement of the watch may wait on a lock before it gives up, to try again later

log = logging.getLogger("jobs")


class Heartbeat:
    """Beats the row of `worker` (a Worker) and runs its watch until the worker has ended; `run` is the thread's
    body."""

    def __init__(self, worker: "Worker") -> None:
        self.worker = worker
        self._nudged = threading.Event()  # set to end a wait at once: a stop's grace began, or the worker ended
        self._next_beat = 0.0

    def run(self) -> None:
        worker = self.worker
        kept_running(
            worker.connect,
            worker.ended,
            self._step,
            who="worker's heartbeat",
            complaints=worker.complaints,
            on_open=self._registered,
        )
        self._signed_off()

    def interrupted(self) -> None:
        """Ends the heartbeat's wait at once."""
        self._nudged.set()

    def _registered(self, db: psycopg.Connection[Any]) -> None:
        """On a new connection: records the worker (or takes its row back), reads the paused queues, lets it claim."""
        worker = self.worker
        if worker.listen:  # not behind PgBouncer in transaction mode, where a session's setting reaches others
            db.execute("SELECT set_config('lock_timeout', %s, false)", [f"{round(WATCH_LOCK_WAIT * 1000)}ms"])
        ended = roster.registered(db, worker)
        if ended is not None:
            log.warning(
                "this worker was taken for gone (%s) while it lived: jobs it held may have gone to other "
                "workers, and their settlement here will be refused",
                ended,
            )
        worker.paused_now(control.paused_queues(db))  # before the first claim, so a paused queue is never claimed from
        worker.registered()
        self._next_beat = time.monotonic() + worker.lease / roster.BEATS

    def _step(self, db: psycopg.Connection[Any]) -> None:
        """Waits for the next beat (or look of the watch), then beats when due and watches."""
        worker = self.worker
        # Every WATCH_INTERVAL, held jobs or not: a thread may claim one now, and the look
        # itself sends nothing unless a job is overdue.
        self._nudged.wait(max(0.0, min(self._next_beat - time.monotonic(), WATCH_INTERVAL)))
        self._nudged.clear()
        if time.monotonic() >= self._next_beat:
            self._beat(db)
        worker.watch.watched(db)

    def _beat(self, db: psycopg.Connection[Any]) -> None:
        worker = self.worker
        if not roster.beaten(db, worker.id):
            self._registered(db)  # a reaper took this worker for gone while it lived: it says so, and is back
        self._next_beat = time.monotonic() + worker.lease / roster.BEATS
        held = worker.batches_held()
        taken = roster.taken(db, held)
        for job in (job for jobs in held for job in jobs if job.id in taken):
            log.warning("lease lost: job %s (%s on %s) is held by another worker", job.id, job.name, job.queue)

    def _signed_off(self) -> None:
        """Marks the worker's row stopped, on a connection of its own (the heartbeat's may be gone)."""
        db: psycopg.Connection[Any] | None = None
        try:
            db = opened(self.worker.connect)
            roster.signed_off(db, self.worker.id)
        except Exception as error:  # its row then falls silent, and another worker's reaper marks it gone
            log.warning("the worker could not mark its row stopped (%s); it will be taken for gone", error)
        finally:
            closed(db)
