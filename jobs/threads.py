"""A work thread: the loop that claims a batch of due jobs, hands it to the runner and waits.

A Worker (workers.py) runs several, each on a connection of its own. Each remembers
what it holds (for the heartbeat) and its connection's backend, so that the worker can
take its jobs back and end its transaction when it must abandon it: a job that ran
past its timeout, or a shutdown whose grace period ran out. A thread whose connection
is lost gives back what it held as soon as it has a new one.
"""

import logging
import threading
import time

from . import store
from .backends import Backend, told
from .connections import kept_running
from .runner import performed

BATCH_MAX = 100  # jobs one claim may take at the most
BATCH_TIME = 0.02  # seconds a batch may take before the next claim takes one job again

log = logging.getLogger("jobs")


class WorkThread:
    """Work thread `n` of `worker`; `start` runs it, `abandon` lets it go."""

    def __init__(self, worker, n: int):
        self.worker, self.n = worker, n
        self.ending = threading.Event()  # set when the worker stops, or abandons this thread
        self.abandoned = False
        self.held: list[store.Job] = []  # the claimed jobs not yet settled, for the watch
        self.cut_off: list[store.Job] = []  # what it held when its connection was lost, to give back
        self.backend: Backend | None = None  # the server process of this thread's connection (backends.py)
        self.limit = 1  # how many jobs the next claim may take
        self.thread = threading.Thread(target=self._run, name=f"jobs-worker-{n}", daemon=True)

    def start(self) -> "WorkThread":
        self.thread.start()
        return self

    def abandon(self) -> list[store.Job]:
        """Lets the thread go: it claims nothing more and ends when its performer returns. Returns what it held."""
        self.abandoned = True
        self.ending.set()
        held, self.held = self.held, []
        return held

    def overdue(self, now: float) -> store.Job | None:
        """The job whose performer is still running past its deadline (a time.monotonic() moment), if any."""
        return next((job for job in list(self.held) if job.deadline is not None and job.deadline <= now), None)

    def _run(self) -> None:
        try:
            kept_running(self.worker.connect, self.ending, self._claimed_and_ran, who="worker",
                         complaints=self.worker.complaints, on_open=self._opened, on_lost=self._lost)
        finally:
            if not self.abandoned:
                self.worker.thread_ended(self)

    def _opened(self, db) -> None:
        """On a new connection: lets the leases of what the lost one held run out now (none of it runs)."""
        self.backend = Backend(db)
        told(self.worker, self.backend)
        if self.cut_off:
            store.lapsed(db, self.cut_off)
            log.info("%d job(s) it held when cut off are due again at once: %s", len(self.cut_off),
                     [job.id for job in self.cut_off])
            self.cut_off = []

    def _lost(self) -> None:
        self.held = []

    def _claimed_and_ran(self, db) -> bool:
        """One pass over the queues: claim, run, settle; waits when nothing was due. False ends the thread."""
        worker = self.worker
        busy = False
        for queue in worker.claimable():
            jobs = store.claimed(db, queue, limit=self.limit, lease=worker.lease, after=worker.frontiers.bound(queue),
                                 worker=worker.id)
            if len(jobs) == self.limit:
                worker.doorbell.ring()  # a full batch: more may be due, for another thread
            if jobs:
                busy = True
                self.limit = self._ran_batch(db, jobs)
        if not busy:
            if worker.draining:
                return False
            worker.doorbell.wait(worker.poll)
        return not self.abandoned

    def _ran_batch(self, db, jobs: list) -> int:
        """Runs a claimed batch and returns how many jobs the next claim may take.

        Batches grow while they are quick, and fall back to one job as soon as one
        takes longer than BATCH_TIME, so slow jobs are shared among workers, not
        hoarded by the first to claim them.
        """
        self.held = list(jobs)
        started = time.monotonic()
        try:
            performed(db, jobs, self.worker.performers, counts=self.worker.counts, stopping=self.ending.is_set,
                      pace=self.worker.pace, timeout=self.worker.timeout, settled=self._settled,
                      backend=self.backend)
        except Exception:
            if (db.broken or db.closed) and not self.abandoned:
                self.cut_off = list(self.held)  # their settlement died with the connection
            raise
        finally:
            self.held = []
        if time.monotonic() - started > BATCH_TIME:
            return 1
        return min(BATCH_MAX, len(jobs) * 2)

    def _settled(self, jobs: list) -> None:
        """Drops settled jobs from what the thread holds, so the watch and the cancels no longer look at them."""
        ids = {job.id for job in jobs}
        self.held = [job for job in self.held if job.id not in ids]
