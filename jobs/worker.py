"""The worker: the loop that claims due jobs, runs them and waits for more.

A Worker runs `threads` work threads, each on a connection of its own, and one
listener thread on one more connection: it LISTENs for the notification `later`
sends on commit and wakes the work threads at once, and it extends the leases of the
jobs in hand every half lease (the heartbeat). A work thread never dies of a job's
failure or of a lost connection: it logs, reconnects with backoff and carries on.
"""

import logging
import os
import selectors
import threading
import time

import psycopg

from . import flows, store
from .runner import Counts, performed

POLL_INTERVAL = 1.0  # seconds an idle worker waits before it looks again without being woken
BATCH_MAX = 100  # jobs one claim may take at the most
BATCH_TIME = 0.02  # seconds a batch may take before the next claim takes one job again
RECONNECT_FIRST = 0.1  # seconds before the first reconnection; doubles up to RECONNECT_MAX
RECONNECT_MAX = 5.0
UNWATCHED_LEASE = 300.0  # seconds `worked` leases a job for: no heartbeat renews that lease

log = logging.getLogger("jobs")


def worked(db, queue: str, performers: dict, now: int | None = None, *, lease: float = UNWATCHED_LEASE) -> str | None:
    """Claims one job of `queue` due at `now` (ms; the clock when None), runs it and settles it.

    Answers what happened, as one line: "ran NAME", or "failed NAME on attempt N:
    REASON"; None when nothing was due. `db` must not be inside a transaction: the
    claim commits before the job runs, and the settlement commits after. No heartbeat
    runs here, so the lease is UNWATCHED_LEASE unless `lease` says otherwise.
    """
    if db.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
        raise ValueError("worked() commits its claim: call it on a connection outside a transaction")
    moment = store.now_ms() if now is None else now
    with db.transaction():
        store.promoted(db, moment)
    claimed = store.claimed(db, queue, moment, limit=1, lease=lease)
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
        self.threads, self.lease, self.poll, self.listen = threads, lease, poll, listen
        self.counts = Counts()
        self._stopping = threading.Event()
        self._draining = False
        self._wake = threading.Event()
        self._held: dict[int, list[store.Job]] = {}  # the jobs each work thread holds now
        self._held_lock = threading.Lock()
        self._working = threads  # work threads not yet ended
        self._wakeup_r, self._wakeup_w = os.pipe()
        self._threads: list[threading.Thread] = []

    def start(self) -> "Worker":
        """Starts the threads and returns the worker."""
        self._threads = [threading.Thread(target=self._listened, name="jobs-listener", daemon=True)]
        for n in range(self.threads):
            self._threads.append(threading.Thread(target=self._worked, args=(n,), name=f"jobs-worker-{n}", daemon=True))
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
        if self._wakeup_w is not None:
            os.write(self._wakeup_w, b"x")  # ends the listener's wait at once

    def join(self, timeout: float | None = None) -> bool:
        """Waits for the threads to end; True when they all have."""
        deadline = None if timeout is None else time.monotonic() + timeout
        for thread in self._threads:
            thread.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
        if any(thread.is_alive() for thread in self._threads):
            return False
        if self._wakeup_w is not None:
            os.close(self._wakeup_r)
            os.close(self._wakeup_w)
            self._wakeup_r = self._wakeup_w = None
        return True

    def wait_until_empty(self, timeout: float) -> bool:
        """Waits until no job is due or in work on the worker's queues; True if that happened in time.

        For tests: what the last job did is committed when this returns.
        """
        deadline = time.monotonic() + timeout
        with self.connect() as db:
            db.autocommit = True
            while time.monotonic() < deadline:
                if not self._holding() and store.outstanding(db, self.queues, store.now_ms()) == 0:
                    return True
                self._stopping.wait(0.01)
        return False

    def _holding(self) -> bool:
        with self._held_lock:
            return any(self._held.values())

    def _hold(self, n: int, jobs: list) -> None:
        with self._held_lock:
            self._held[n] = jobs

    def _let_go(self, n: int, settled: list | None = None) -> list:
        """Stops holding `settled` (all when None) for thread n; answers the jobs it held before."""
        ids = None if settled is None else {job.id for job in settled}
        with self._held_lock:
            held = self._held.get(n, [])
            self._held[n] = [] if ids is None else [job for job in held if job.id not in ids]
        return held

    @staticmethod
    def _given_back(db, abandoned: list) -> list:
        """Ends at once the leases of jobs a work thread held when its connection dropped; answers []."""
        if abandoned:
            back = store.given_back(db, abandoned)
            log.warning("worker reconnected: %d job(s) it held when cut off are due again at once", back)
        return []

    def _worked(self, n: int) -> None:
        """A work thread; when the last one ends, so does the listener."""
        try:
            self._work_loop(n)
        finally:
            with self._held_lock:
                self._working -= 1
                last = self._working == 0
            if last:
                self._stopped()

    def _work_loop(self, n: int) -> None:
        """Claim, run, settle; wait when nothing is due; reconnect when cut off."""
        db, pause, limit, abandoned = None, RECONNECT_FIRST, 1, []
        while not self._stopping.is_set():
            try:
                if db is None:
                    db = self._connected()
                    abandoned = self._given_back(db, abandoned)
                self._wake.clear()
                busy = False
                for queue in self.queues:
                    jobs = store.claimed(db, queue, None, limit=limit, lease=self.lease)  # the database's clock
                    if jobs:
                        busy = True
                        limit = self._ran(db, n, jobs)
                pause = RECONNECT_FIRST
                if not busy:
                    if self._draining:
                        break
                    self._wake.wait(self.poll)
            except Exception as error:
                # Don't let a lost connection, or a bug in a policy or a hook, end the work
                # loop. The jobs in hand no longer run: given back once reconnected (13.7).
                abandoned = abandoned or self._let_go(n)
                if isinstance(error, psycopg.Error):
                    log.warning("worker lost its database connection (%s); reconnecting in %.1f s", error, pause)
                else:
                    log.exception("worker hit an error outside any job; reconnecting in %.1f s", pause)
                db = self._closed(db)
                self._stopping.wait(pause)
                pause = min(pause * 2, RECONNECT_MAX)
        self._closed(db)

    def _ran(self, db, n: int, jobs: list) -> int:
        """Runs a claimed batch and returns how many jobs the next claim may take.

        Batches grow while they are quick, and fall back to one job as soon as one
        takes longer than BATCH_TIME, so slow jobs are shared among workers, not
        hoarded by the first to claim them.
        """
        self._hold(n, jobs)
        started = time.monotonic()
        performed(db, jobs, self.performers, counts=self.counts, stopping=self._stopping.is_set,
                  settled=lambda group: self._let_go(n, group))
        self._hold(n, [])  # on an error, the work loop lets go of them itself
        if time.monotonic() - started > BATCH_TIME:
            return 1
        return min(BATCH_MAX, len(jobs) * 2)

    def _listened(self) -> None:
        """The listener thread: wakes the work threads, promotes scheduled jobs, beats the heartbeat."""
        db, fd, pause = None, None, RECONNECT_FIRST
        next_promotion, next_beat = time.monotonic(), time.monotonic() + self.lease / 2
        with selectors.DefaultSelector() as selector:
            selector.register(self._wakeup_r, selectors.EVENT_READ)
            while not self._stopping.is_set():
                try:
                    if db is None:
                        db = self._connected()
                        if self.listen:
                            db.execute("LISTEN jobs")
                            fd = db.fileno()
                            selector.register(fd, selectors.EVENT_READ)
                            self._wake.set()  # a job may have come while nobody listened
                    timeout = max(0.0, min(next_beat, next_promotion) - time.monotonic())
                    for key, _ in selector.select(timeout):
                        if key.fd == self._wakeup_r:
                            os.read(self._wakeup_r, 64)  # stop() asked: the loop's test decides
                    if self.listen:
                        for notice in db.notifies(timeout=0):
                            if notice.payload in self.queues:
                                self._wake.set()
                    if time.monotonic() >= next_promotion:
                        if set(store.promoted(db, store.now_ms())) & set(self.queues):
                            self._wake.set()  # not only by the notification, which a polling worker misses
                        next_promotion = time.monotonic() + self.poll
                    if time.monotonic() >= next_beat:
                        self._beat(db)
                        next_beat = time.monotonic() + self.lease / 2
                    pause = RECONNECT_FIRST
                except Exception as error:
                    log.warning("worker's listener lost its connection (%s); reconnecting in %.1f s", error, pause)
                    if fd is not None:
                        selector.unregister(fd)
                        fd = None
                    db = self._closed(db)
                    self._stopping.wait(pause)
                    pause = min(pause * 2, RECONNECT_MAX)
        self._closed(db)

    def _beat(self, db) -> None:
        """Extends the leases of every job the work threads hold, and reaps jobs lost in crashes."""
        with self._held_lock:
            batches = [jobs for jobs in self._held.values() if jobs]
        for jobs in batches:
            kept = store.extended(db, jobs, store.now_ms(), self.lease)
            # A job missing from `kept` may just have been settled by its thread since the
            # list was read: only one whose row another claim holds is a lost lease.
            for job in store.taken(db, [job for job in jobs if job.id not in kept]):
                log.warning("lease lost: job %s (%s on %s) is held by another worker", job.id, job.name, job.queue)
        store.expired(db, store.now_ms())
        with db.transaction():
            lost = store.reaped(db, store.now_ms())
            flows.settled(db, [], lost)
        for job in lost:
            log.error("job %s (%s on %s) failed for good: its worker stopped during the last attempt", job.id, job.name, job.queue)

    def _connected(self):
        db = self.connect()
        db.autocommit = True
        return db

    @staticmethod
    def _closed(db) -> None:
        if db is not None:
            try:
                db.close()
            except psycopg.Error:
                pass
        return None


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
