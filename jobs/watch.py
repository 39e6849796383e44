"""The worker's watch over its threads' hands, every WATCH_INTERVAL on the listener's connection.

A thread holds no claimed job it cannot start now: when the job it runs has run longer
than BATCH_TIME, or its claim is older than that while another thread of the worker
waits with nothing to do, or the worker stops, the jobs it claimed after the running
one go back to the queue at once, for any thread of any worker to start (`given_back`). A thread whose
job ran past its timeout, or past a stop's grace, is let go and replaced (`abandoned`).
"""

import logging
import time

from . import flows, store
from .backends import ended
from .endings import timed_out
from .policies import policy_of
from .runner import settled_quietly
from .threads import BATCH_TIME

TERMINATE_WAIT = 1.0  # seconds the listener waits for the server to end a let-go thread's connection

log = logging.getLogger("jobs")


def watched(worker, db) -> None:
    """Looks at each work thread of `worker` once: gives back what it cannot start, lets go of it if stuck."""
    now = time.monotonic()
    for work in worker._work_threads():
        job = work.overdue(now)
        if job is not None:
            abandoned(worker, db, work, job)
        elif worker.grace_over(now) and work.held():
            abandoned(worker, db, work, None)
        elif worker.stopping() or work.hand.running_past(BATCH_TIME) is not None or (
                worker.doorbell.idle() and now - work.hand.claimed_at > BATCH_TIME):
            given_back(worker, db, work.hand)


def given_back(worker, db, hand) -> None:
    """Gives back the jobs of `hand` not yet started, and deletes the quiet successes that ran before.

    Those successes wrote nothing: deleting them now, not after the slow job, means a
    crash meanwhile cannot run them (and send their letters) again.
    """
    settled_quietly(db, hand.quiet(), worker.counts)
    waiting = hand.waiting()
    if waiting:
        flows.given_back(db, waiting)
        store.announced(db, {job.queue for job in waiting})  # for idle workers elsewhere too
        log.info("jobs %s, claimed behind one still running, are given back for another thread to start",
                 [job.id for job in waiting])
        worker.doorbell.ring()


def abandoned(worker, db, work, overdue: store.Job | None) -> None:
    """Ends thread `work`'s transaction, gives its jobs back, and starts a thread in its place.

    The thread's connection is ended from the server side, so whatever its stuck
    performer wrote is rolled back and nothing of it can commit later. The overdue job
    fails with its timeout; the quiet successes before it are deleted, as they are done;
    the other jobs it held go back at once.
    """
    replacement = worker.replaced(work)
    if replacement is False:
        return
    hand = work.abandon()
    held = hand.held()
    # Gone before the performer is told, so it finds nothing to commit on.
    if work.backend is not None and not ended(db, work.backend, round(TERMINATE_WAIT * 1000)):
        log.warning("the server process of a let-go thread did not end within %g s; its jobs go back anyway",
                    TERMINATE_WAIT)
    for job in held:
        job.cancelled.set()
    settled_quietly(db, hand.quiet(), worker.counts)
    if overdue is not None:
        limit = limit_of(worker, overdue)
        log.warning("job %s (%s on %s) ran past its timeout of %g s; its thread is let go and replaced",
                    overdue.id, overdue.name, overdue.queue, limit)
        timed_out(db, overdue, worker.performers, limit, worker.counts)
    else:
        log.warning("jobs %s were still in hand when the grace period ended; they go back to the queue",
                    [job.id for job in held])
    flows.given_back(db, [job for job in hand.waiting() + [hand.running] if job is not None and job is not overdue])
    if replacement is not None:
        replacement.start()
    elif not worker._work_threads():
        worker.thread_ended(work)


def limit_of(worker, job: store.Job) -> float:
    """The timeout that applies to `job`: its policy's, or the worker's."""
    limit = policy_of(worker.performers.get(job.name)).timeout
    return limit if limit is not None else worker.timeout
