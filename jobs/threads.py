"""A work thread: the loop that claims a batch of due jobs, hands it to the runner and waits.

A Worker (workers.py) runs several, each on a connection of its own. Each keeps what
it holds in a Hand (hand.py), which the worker's watch reads for the heartbeat and
takes unstarted jobs back out of when the running one is slow, and its connection's
backend, so that the worker can end its transaction when it must abandon it: a job
that ran past its timeout, or a shutdown whose grace period ran out. A thread whose
connection is lost gives back what it held as soon as it has a new one.
"""

import logging
import threading
from typing import TYPE_CHECKING, Any

import psycopg

from . import store
from .backends import Backend, told
from .connections import kept_running
from .hand import Hand
from .job import Job
from .runner import performed

if TYPE_CHECKING:  # workers.py imports this module
    from .workers import Worker

BATCH_MAX = 100  # jobs one claim may take at the most
BATCH_TIME = 0.02  # seconds a job may run before the jobs claimed after it are given back (or a claim
# may be held while another thread idles); a job that ran longer makes the next claim take one

log = logging.getLogger("jobs")


class WorkThread:
    """Work thread `n` of `worker`; `start` runs it, `abandon` lets it go."""

    def __init__(self, worker: "Worker", n: int) -> None:
        self.worker, self.n = worker, n
        self.ending = threading.Event()  # set when the worker stops, or abandons this thread
        self.abandoned = False
        self.hand = Hand([])  # the jobs of its last claim not yet settled or given back
        self.cut_off: list[Job] = []  # what it held when its connection was lost, to give back
        self.unheard: int | None = None  # the token of a claim sent whose answer never came back
        self.backend: Backend | None = None  # the server process of this thread's connection (backends.py)
        self.limit = 1  # how many jobs the next claim may take
        self.thread = threading.Thread(target=self._run, name=f"jobs-worker-{n}", daemon=True)

    def start(self) -> "WorkThread":
        self.thread.start()
        return self

    def abandon(self) -> Hand:
        """Lets the thread go: it claims nothing more and ends when its performer returns. Returns its Hand."""
        self.abandoned = True
        self.ending.set()
        hand, self.hand = self.hand, Hand([])
        return hand

    def held(self) -> list[Job]:
        """The claimed jobs not yet settled or given back, for the heartbeat."""
        return self.hand.held()

    def overdue(self, now: float) -> Job | None:
        """The job whose performer is still running past its deadline (a time.monotonic() moment), if any."""
        job = self.hand.running
        return job if job is not None and job.deadline is not None and job.deadline <= now else None

    def _run(self) -> None:
        try:
            kept_running(
                self.worker.connect,
                self.ending,
                self._claimed_and_ran,
                who="worker",
                complaints=self.worker.complaints,
                on_open=self._opened,
                on_lost=self._lost,
            )
        finally:
            if not self.abandoned:
                self.worker.thread_ended(self)

    def _opened(self, db: psycopg.Connection[Any]) -> None:
        """On a new connection: lets the leases of what the lost one held run out now (none of it runs)."""
        self.backend = Backend(db)
        told(self.worker, self.backend)
        if self.unheard is not None:
            given = store.unheard_given_back(db, self.unheard)
            if given:
                log.info("%d job(s) its claim took as its connection was lost are due again at once", given)
            self.unheard = None
        if self.cut_off:
            store.lapsed(db, self.cut_off)
            log.info(
                "%d job(s) it held when cut off are due again at once: %s",
                len(self.cut_off),
                [job.id for job in self.cut_off],
            )
            self.cut_off = []

    def _lost(self) -> None:
        self.hand = Hand([])

    def _claimed_and_ran(self, db: psycopg.Connection[Any]) -> bool:
        """One pass over the queues: claim, run, settle; waits when nothing was due. False ends the thread."""
        worker = self.worker
        busy = False
        # A drain ends the thread only after a pass that began once the drain was asked:
        # a claim already under way then may still have read the bound the drain drops.
        # Nor while the watch gives jobs back from a hand: they are due once back.
        draining = worker.draining and not worker.watch.owed()
        for queue in worker.claimable():
            self.unheard = claim = store.new_claim()  # until its answer comes: see _opened
            jobs = store.claimed(
                db,
                queue,
                limit=self.limit,
                lease=worker.lease,
                after=worker.frontiers.bound(queue),
                worker=worker.id,
                budgets=worker.budgets,
                claim=claim,
            )
            self.unheard = None
            if len(jobs) == self.limit:
                worker.doorbell.ring()  # a full batch: more may be due, for another thread
            if jobs:
                busy = True
                self.limit = self._ran_batch(db, jobs)
        if not busy:
            if draining:
                return False
            worker.doorbell.wait(worker.poll)
        return not self.abandoned

    def _ran_batch(self, db: psycopg.Connection[Any], jobs: list[Job]) -> int:
        """Runs a claimed batch and returns how many jobs the next claim may take.

        Batches grow while their jobs are quick, and fall back to one job as soon as
        one takes longer than BATCH_TIME: the worker's watch gives back the jobs
        claimed after a job that runs longer than that, or after BATCH_TIME while
        another thread idles (watch.py), and the runner gives them back itself after
        a performer that ran longer (they could have waited that long for any thread),
        so they wait on no slow job and no thread idles beside them, and the next
        claims stay small while jobs are slow.
        """
        hand = self.hand = Hand(jobs)
        try:
            performed(
                db,
                jobs,
                self.worker.performers,
                counts=self.worker.counts,
                stopping=self.ending.is_set,
                timeout=self.worker.timeout,
                hand=hand,
                patience=BATCH_TIME,
                backend=self.backend,
            )
        except Exception:
            if (db.broken or db.closed) and not self.abandoned:
                self.cut_off = hand.held()  # their settlement died with the connection
            raise
        finally:
            if self.hand is hand:
                self.hand = Hand([])
        if hand.longest > BATCH_TIME:
            return 1
        return min(BATCH_MAX, len(jobs) * 2)
