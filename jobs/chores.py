"""The chores of a worker's listener, done on its timers on the listener's own connection.

Every POLL_INTERVAL (`polled`): promote the scheduled jobs whose moment has come (and
wake a thread for them), queue the job of each due tick of the worker's schedules, read
which queues are paused, look for where each queue's claims should start (frontier.py),
and hear which jobs in hand an operator cancelled. Every half lease (`beaten`): extend
the leases of the jobs in hand, free the concurrency keys of leases that ran out, and
reap the jobs whose worker died on their last attempt.
"""

import logging

from . import control, endings, store
from .schedules import fired

log = logging.getLogger("jobs")


def polled(db, worker) -> None:
    """The chores of each POLL_INTERVAL, for `worker` (a Worker)."""
    if set(store.promoted(db)) & set(worker.queues):
        worker.doorbell.ring()  # not only by the notification, which a polling worker misses
    fired(db, worker.schedules)  # the jobs of due ticks, once across all workers
    worker.paused_now(control.paused_queues(db))
    if worker.frontiers.looked(db, worker.queues):  # where the claims start, past dead index entries
        worker.doorbell.ring()  # a job the claims passed over is due
    for jobs in worker.batches_held():
        heard_cancelled(db, jobs)


def heard_cancelled(db, jobs: list[store.Job]) -> None:
    """Settles at once, as cancelled, the jobs of one claim an operator cancelled while held, and tells them.

    Their performer may run on (it sees `current_job().cancelled`), but whatever it
    does, the job stays on the shelf as cancelled: the runner knows by `cancelling`.
    """
    cancelled = control.cancelled_among(db, jobs)
    for job in jobs:
        if job.id in cancelled and not job.cancelling:
            job.cancelling = True
            job.cancelled.set()
            with db.transaction():
                control.cancellation_settled(db, job)
            log.warning("job %s (%s on %s) was cancelled while in hand: it is on the shelf, and not retried",
                        job.id, job.name, job.queue)


def beaten(db, worker, lease: float) -> None:
    """The chores of each half lease: the heartbeat, freeing keys, reaping lost jobs."""
    for jobs in worker.batches_held():
        taken = store.extended(db, jobs, lease=lease)
        for job in jobs:
            if job.id in taken:
                log.warning("lease lost: job %s (%s on %s) is held by another worker", job.id, job.name, job.queue)
    store.keys_freed(db)
    with db.transaction():
        control.cancelled_reaped(db)  # before the reaper, so a cancelled job is shelved, never run again
    endings.reaped(db)
