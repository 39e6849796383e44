"""The worker: threads that claim due jobs, run them and wait for more.

A Worker runs `threads` work threads, each on a connection of its own, and beside them
one listener thread (listener.py) that wakes them when jobs come and keeps the leases
of the jobs in hand. A work thread claims a batch, hands it to the runner (runner.py)
and waits when nothing is due; it never dies of a job's failure or of a lost
connection (connections.py). `worked` is the same step, once, for a caller's own loop.
"""

import threading
import time

import psycopg

from . import store
from .connections import kept_running
from .listener import POLL_INTERVAL, Listener
from .pace import Pace
from .runner import Counts, performed

BATCH_MAX = 100  # jobs one claim may take at the most
BATCH_TIME = 0.02  # seconds a batch may take before the next claim takes one job again
UNWATCHED_LEASE = 300.0  # seconds `worked` leases a job for: no heartbeat renews that lease


def worked(db, queue: str, performers: dict, now: int | None = None, *, lease: float = UNWATCHED_LEASE) -> str | None:
    """Claims one job of `queue` due at `now` (ms; the database's clock when None), runs it and settles it.

    Answers what happened, as one line: "ran NAME", or "failed NAME on attempt N:
    REASON"; None when nothing was due. `db` must not be inside a transaction: the
    claim commits before the job runs, and the settlement commits after. No heartbeat
    runs here, so the lease is UNWATCHED_LEASE unless `lease` says otherwise.
    """
    if db.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
        raise ValueError("worked() commits its claim: call it on a connection outside a transaction")
    with db.transaction():
        store.promoted(db, now)
    claimed = store.claimed(db, queue, now, limit=1, lease=lease)
    if not claimed:
        return None
    return performed(db, claimed, performers, now=now)[0]


class Worker:
    """Works `queues` with `performers` on connections from `connect` until stopped.

    connect: a callable that returns a new psycopg connection.
    threads: how many jobs run at once; the worker holds threads + 1 connections.
    lease: seconds a claim holds a job; the heartbeat renews it every half lease.
    listen: False for a polling worker (behind PgBouncer in transaction mode, where
    LISTEN does not work): it looks for due jobs every `poll` seconds.
    """

    def __init__(self, connect, queues, performers, *, threads=1, lease=store.LEASE, poll=POLL_INTERVAL, listen=True):
        if isinstance(queues, str):
            queues = [queues]
        if not queues or threads < 1 or lease <= 0:
            raise ValueError("a worker needs a queue, one thread or more, and a lease of more than 0 s")
        self.connect, self.queues, self.performers = connect, list(queues), performers
        self.threads, self.lease, self.poll = threads, lease, poll
        self.counts = Counts()
        self._pace = Pace()  # which job names are quick enough to share a settlement transaction
        self._stopping = threading.Event()
        self._draining = False
        self._wake = threading.Event()
        self._held: dict[int, list[store.Job]] = {}  # the jobs each work thread holds now
        self._held_lock = threading.Lock()
        self._limits: dict[int, int] = {}  # how many jobs each work thread's next claim may take
        self._working = threads  # work threads not yet ended
        self._listener = Listener(connect, self.queues, poll=poll, lease=lease, listen=listen,
                                  held=self._batches_held, stopping=self._stopping, wake=self._wake)
        self._threads: list[threading.Thread] = []

    def start(self) -> "Worker":
        """Starts the threads and returns the worker."""
        self._threads = [threading.Thread(target=self._listener.run, name="jobs-listener", daemon=True)]
        for n in range(self.threads):
            self._threads.append(threading.Thread(target=self._work_thread, args=(n,), name=f"jobs-worker-{n}", daemon=True))
        for thread in self._threads:
            thread.start()
        return self

    def stop(self, drain: bool = False) -> None:
        """Asks the worker to stop: the jobs in hand finish and settle, nothing new is claimed.

        With drain=True it first works on until nothing is due on its queues.
        """
        if drain:
            self._draining = True  # each work thread ends when it finds nothing due
            self._wake.set()
        else:
            self._stopped()

    def _stopped(self) -> None:
        """Tells every thread to end after what it holds."""
        self._stopping.set()
        self._wake.set()
        self._listener.interrupted()

    def join(self, timeout: float | None = None) -> bool:
        """Waits for the threads to end; True when they all have."""
        deadline = None if timeout is None else time.monotonic() + timeout
        for thread in self._threads:
            thread.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
        if any(thread.is_alive() for thread in self._threads):
            return False
        self._listener.closed()
        return True

    def wait_until_empty(self, timeout: float) -> bool:
        """Waits until no job is due or in work on the worker's queues; True if that happened in time.

        For tests: what the last job did is committed when this returns.
        """
        deadline = time.monotonic() + timeout
        with self.connect() as db:
            db.autocommit = True
            while time.monotonic() < deadline:
                if not self._batches_held() and store.outstanding(db, self.queues) == 0:
                    return True
                self._stopping.wait(0.01)
        return False

    def _batches_held(self) -> list[list[store.Job]]:
        with self._held_lock:
            return [jobs for jobs in self._held.values() if jobs]

    def _hold(self, n: int, jobs: list) -> None:
        with self._held_lock:
            self._held[n] = jobs

    def _work_thread(self, n: int) -> None:
        """Work thread `n`: claims and runs until stopped; when the last one ends, so does the listener."""
        try:
            kept_running(self.connect, self._stopping, lambda db: self._claimed_and_ran(db, n),
                         who="worker", on_lost=lambda: self._hold(n, []))
        finally:
            with self._held_lock:
                self._working -= 1
                last = self._working == 0
            if last:
                self._stopped()

    def _claimed_and_ran(self, db, n: int) -> bool:
        """One pass over the queues: claim, run, settle; waits when nothing was due. False ends the thread."""
        self._wake.clear()
        busy = False
        for queue in self.queues:
            jobs = store.claimed(db, queue, limit=self._limits.get(n, 1), lease=self.lease)
            if jobs:
                busy = True
                self._limits[n] = self._ran_batch(db, n, jobs)
        if not busy:
            if self._draining:
                return False
            self._wake.wait(self.poll)
        return True

    def _ran_batch(self, db, n: int, jobs: list) -> int:
        """Runs a claimed batch and returns how many jobs the next claim may take.

        Batches grow while they are quick, and fall back to one job as soon as one
        takes longer than BATCH_TIME, so slow jobs are shared among workers, not
        hoarded by the first to claim them.
        """
        self._hold(n, jobs)
        started = time.monotonic()
        try:
            performed(db, jobs, self.performers, counts=self.counts, stopping=self._stopping.is_set, pace=self._pace)
        finally:
            self._hold(n, [])
        if time.monotonic() - started > BATCH_TIME:
            return 1
        return min(BATCH_MAX, len(jobs) * 2)


def worker(connect, queues, performers, **options) -> Worker:
    """Starts a worker on `queues` (see Worker for the options) and returns it; call .stop() to end it."""
    return Worker(connect, queues, performers, **options).start()


def beside(connect, queue: str, performers: dict, serve, **options):
    """Runs `serve()` (a web server, say) with a worker on `queue` in threads beside it.

    The worker makes the jobs table first when it is missing, and works on
    connections of its own. When `serve` returns or raises, the worker stops (the job
    in hand finishes) and `beside` returns or raises what `serve` did.
    """
    with connect() as db:
        store.prepared(db)
    running = worker(connect, [queue], performers, **options)
    try:
        return serve()
    finally:
        running.stop()
        running.join()
