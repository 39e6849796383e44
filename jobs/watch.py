"""The watch over the work threads' hands: giving back what a thread cannot start now, and letting go of stuck threads.

The heartbeat (heartbeat.py) looks every WATCH_INTERVAL while jobs are in hand, on its
own connection. A thread holds no claimed job it cannot start now: when the job it runs
has run longer than BATCH_TIME, or its claim is older than that while another thread of
the worker waits with nothing to do, or the worker stops, the jobs it claimed after the
running one go back to the queue at once, for any thread of any worker to start.
A thread whose job ran past its timeout, or that still works when the grace ends, is
let go: it is replaced at once (Worker.replaced), before any statement; then its
connection is ended from the server side, its overdue job fails with its timeout
(endings.py), the jobs that ran before it and wrote nothing are deleted (they are done)
and the rest of what it held goes back to the queue. That give-back is owed until it is
done: a connection lost midway leaves it for the next look.
"""

import logging
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import psycopg

from . import flows, store
from .backends import Backend, ended
from .endings import timed_out
from .hand import Hand
from .job import Job
from .policies import policy_of
from .runner import settled_quietly
from .threads import BATCH_TIME, WorkThread

if TYPE_CHECKING:  # workers.py imports this module
    from .workers import Worker

TERMINATE_WAIT = 1.0  # seconds the watch waits for the server to end a let-go thread's connection

log = logging.getLogger("jobs")


@dataclass(eq=False)
class GiveBack:
    """What a thread let go owes: its connection ended, its jobs told, the overdue one failed, the rest given back."""

    backend: Backend | None  # the let-go thread's server process, None when it never connected
    held: list[Job]
    quiet: list[Job]  # its jobs that ran, wrote nothing and succeeded: to be deleted, not given back
    overdue: Job | None  # None once its timeout is recorded
    told: bool = False  # its connection ended and its jobs' `cancelled` set
    said: bool = False  # the give-back logged
    failed: list[Job] = field(default_factory=list)  # the overdue job, which is failed rather than given back

    def __post_init__(self) -> None:
        if self.overdue is not None:
            self.failed.append(self.overdue)


class Watch:
    """The watch of `worker` (a Worker): `watched(db)` is one look, on the heartbeat's connection."""

    def __init__(self, worker: "Worker") -> None:
        self.worker = worker
        self._owed: list[GiveBack] = []  # threads let go whose jobs are not all given back yet
        self._taking = False  # jobs are leaving a hand, and are not yet owed

    def owed(self) -> bool:
        """Whether jobs are on their way back to the queue: taken from a hand, or owed (a give-back cut off).

        A drain ends no thread meanwhile (threads.py): those jobs are due once given back.
        """
        return self._taking or bool(self._owed)

    def watched(self, db: psycopg.Connection[Any]) -> None:
        """Lets go of threads whose job ran past its timeout or grace, after finishing what is owed."""
        self._given_back(db)
        now = time.monotonic()
        grace_over = self.worker.grace_over(now)
        for work in self.worker._work_threads():
            job = work.overdue(now)
            if job is not None:
                self._let_go(db, work, job)
            elif grace_over and work.held():
                self._let_go(db, work, None)
            elif (
                self.worker.stopping()
                or work.hand.running_past(BATCH_TIME) is not None
                or (self.worker.doorbell.idle() and now - work.hand.claimed_at > BATCH_TIME)
            ):
                self._handed_on(db, work.hand)

    def _handed_on(self, db: psycopg.Connection[Any], hand: Hand) -> None:
        """Gives back the jobs of `hand` not yet started, and deletes the quiet successes that ran before.

        Those successes wrote nothing: deleting them now, not after the slow job, means a
        crash meanwhile cannot run them (and send their letters) again.
        """
        self._taking = True  # from before the jobs leave the hand until they are owed: see owed()
        try:
            quiet, waiting = hand.quiet(), hand.waiting()
            if not quiet and not waiting:
                return
            # Owed like a let-go thread's jobs: a statement cut off leaves them for the next look.
            self._owed.append(GiveBack(None, waiting, quiet, None, told=True, said=True))
        finally:
            self._taking = False
        self._given_back(db)
        if waiting:
            store.announced(db, {job.queue for job in waiting})  # for idle workers elsewhere too
            log.info(
                "jobs %s, claimed behind one still running, are given back for another thread to start",
                [job.id for job in waiting],
            )
            self.worker.doorbell.ring()

    def _let_go(self, db: psycopg.Connection[Any], work: WorkThread, overdue: Job | None) -> None:
        """Replaces thread `work`, then gives back what it held (failing `overdue` with its timeout)."""
        self._taking = True  # its replacement starts now, and must not take the jobs' way back for a drain's end
        try:
            last = self.worker.replaced(work)
            if last is None:
                return
            hand = work.abandon()
            quiet = hand.quiet()
            self._owed.append(GiveBack(work.backend, hand.held(), quiet, overdue))  # held: waiting and running
        finally:
            self._taking = False
        try:
            self._given_back(db)
        finally:
            if last:
                self.worker.thread_ended(work)

    def _given_back(self, db: psycopg.Connection[Any]) -> None:
        """Does what the threads let go still owe, oldest first; a statement that fails leaves the rest owed."""
        while self._owed:
            owed = self._owed[0]
            if not owed.told:
                # The thread's connection is ended from the server side, so whatever its stuck
                # performer wrote is rolled back and nothing of it can commit later; it is gone
                # before the performer is told, so the performer finds nothing to commit on.
                if owed.backend is not None and not ended(db, owed.backend, round(TERMINATE_WAIT * 1000)):
                    log.warning(
                        "the server process of a let-go thread did not end within %g s; its jobs go back anyway",
                        TERMINATE_WAIT,
                    )
                for job in owed.held + owed.quiet:
                    job.cancelled.set()
                owed.told = True
                if owed.overdue is not None:
                    log.warning(
                        "job %s (%s on %s) ran past its timeout of %g s; its thread is let go",
                        owed.overdue.id,
                        owed.overdue.name,
                        owed.overdue.queue,
                        self._limit_of(owed.overdue),
                    )
            if owed.overdue is not None:
                timed_out(db, owed.overdue, self.worker.performers, self._limit_of(owed.overdue), self.worker.counts)
                owed.overdue = None
            if owed.quiet:
                settled_quietly(db, owed.quiet, self.worker.counts)
                owed.quiet = []
            rest = [job for job in owed.held if job not in owed.failed]
            if rest and not owed.said:
                log.warning(
                    "jobs %s were in hand when their thread was let go; they go back to the queue",
                    [job.id for job in rest],
                )
                owed.said = True
            flows.given_back(db, rest)
            self._owed.pop(0)

    def _limit_of(self, job: Job) -> float:
        """The timeout that applies to `job`: its policy's, or the worker's."""
        limit = policy_of(self.worker.performers.get(job.name)).timeout
        limit = limit if limit is not None else self.worker.timeout
        assert limit is not None, "only a job with a timeout has a deadline to run past"
        return limit
