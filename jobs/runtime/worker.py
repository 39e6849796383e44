"""The worker, and the ways an app runs its jobs.

A Worker runs `threads` work threads, each on a connection of its own, and beside them
the listener that wakes them and does the maintenance, the supervisor among it, and a
heartbeat that records the worker as alive in job_workers and does nothing else. Every
row its claims hold is its ledger's until settled. A work thread never dies of a job's
failure or of a lost connection, and one that ends anyway is replaced.

`worker` starts a Worker for a process of its own, `beside` one next to a web server,
`beside_asgi` one within an ASGI app's lifespan; `beside` and `beside_asgi` make the
tables first and stop the worker when the server is done. `worked` is what a work
thread does in one pass, for a script, a test or a loop of the caller's: it claims at
most one job, with no thread and no heartbeat, and returns a line that says what became of it.
"""

import asyncio
import logging
import secrets
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, MutableMapping
from typing import Any, TypeVar

import psycopg

from ..core.job import LEASE, Job, Performer
from ..store import claims, limits, schema, workers_table
from ..store.frontier import Frontiers
from ..store.limits import Limits
from ..store.pulse import Pulse
from ..store.schedules import Schedule, held
from . import maintenance
from .connections import SILENT_AFTER, Connect
from .holdings import Ledger, LetGo
from .maintenance import POLL_INTERVAL, Heartbeat, Listener
from .refusals import Complaints
from .running import Counts, current, performed
from .supervisor import Keeper
from .watchdog import Watchdog
from .work_thread import Doorbell, WorkThread

UNWATCHED_LEASE = 300.0  # seconds `worked` leases a job for: no worker beats to keep it
T = TypeVar("T")  # what `beside`'s serve() answers
# The ASGI callable's shape (the asgiref spec), spelled out: jobs imports no ASGI package.
Message = MutableMapping[str, Any]
ASGIApp = Callable[
    [MutableMapping[str, Any], Callable[[], Awaitable[Message]], Callable[[Message], Awaitable[None]]], Awaitable[None]
]

log = logging.getLogger("jobs")


class Worker:
    """Works `queues` with `performers` on connections from `connect` until stopped.

    connect: a callable that returns a new psycopg connection.
    threads: how many jobs run at once; the worker holds threads + 2 connections.
    lease: how long the worker may fall silent (seconds) before another worker takes it for
    gone and its jobs come back; its heartbeat beats every lease / workers_table.BEATS.
    listen: False for a polling worker (behind PgBouncer in transaction mode, where
    LISTEN does not work): it looks for due jobs every `poll` seconds.
    timeout: seconds a job may run when its policy names no timeout (None: no limit).
    schedules: Schedules (jobs.every) whose due ticks the listener queues every `poll` seconds.
    silent_after: seconds the worker's own statements may wait for an answer before the
    watchdog cuts their connection (SILENT_AFTER; a job's timeout bounds a performer's).
    """

    def __init__(
        self,
        connect: Connect,
        queues: str | Iterable[str],
        performers: Mapping[str, Performer],
        *,
        threads: int = 1,
        lease: float = LEASE,
        poll: float = POLL_INTERVAL,
        listen: bool = True,
        timeout: float | None = None,
        schedules: Iterable[Schedule] = (),
        silent_after: float = SILENT_AFTER,
    ) -> None:
        if isinstance(queues, str):
            queues = [queues]
        if not queues or threads < 1 or lease <= 0 or (timeout is not None and not timeout > 0):
            raise ValueError(
                "a worker needs a queue, one thread or more, a lease of more than 0 s, "
                "and a timeout of more than 0 s if any"
            )
        # Every connection the worker opens is watched, but not while a performer waits on it.
        self.watchdog = Watchdog(silent_after, exempt=lambda: current.get(None) is not None)
        self.connect, self.queues, self.performers = self.watchdog.connecting(connect), list(queues), performers
        self.threads, self.lease, self.poll, self.timeout, self.listen = threads, lease, poll, timeout, listen
        self.id = secrets.randbits(63)  # its row in job_workers, and the mark its claims leave on the jobs they hold
        self.version = schema.VERSION
        self.counts = Counts()
        self.pulse = Pulse()  # its counts per queue and minute, until the listener adds them to job_pulse
        self.complaints = Complaints()  # each refusal of the database logged once, for all its threads
        self.budgets = claims.budgets_of(performers)  # the attempts each policy allows, for the claim
        self.frontiers = Frontiers()  # where each queue's claims start (frontier.py)
        self.ledger = Ledger()  # every row its claims hold, until settled (holdings.py)
        self.let_go = LetGo()  # its performers that run on after their jobs were settled without them (holdings.py)
        self.doorbell = Doorbell(threads)  # how the listener, and busy threads, wake idle threads
        self._drain = False  # stop(drain=True) asked
        self.ended = threading.Event()  # set when the last work thread has ended: the listener and heartbeat end too
        self._stopping = threading.Event()  # nothing new is claimed once it is set
        self._ready = threading.Event()  # set once the worker is registered and has read the paused queues
        self._registered = self._paused_read = False
        self._grace_ends: float | None = None  # when a stop's grace period runs out (time.monotonic())
        self._said_stopped = False  # join() logs what the worker did once, when it has ended
        self._lock = threading.Lock()
        self._work: list[WorkThread] = []  # the work threads not abandoned
        self.schedules = held(schedules)
        self.paused: set[str] = set()  # the worker's queues paused when last read
        self.limits = Limits(self.queues, self.doorbell.ring)  # its limited queues, read every poll (limits.py)
        self.keeper = Keeper(
            self, reconcile_every=lease / workers_table.BEATS
        )  # settles what no thread will (supervisor.py)
        timetable = maintenance.timetable(
            queues=self.queues,
            poll=poll,
            lease=lease,
            keeper=self.keeper,
            ledger=self.ledger,
            let_go=self.let_go,
            doorbell=self.doorbell,
            frontiers=self.frontiers,
            schedules=self.schedules,
            paused_now=self.paused_now,
            limits=self.limits,
            counted=self.pulse,
        )
        self._listener = Listener(
            self.connect,
            self.queues,
            listen=listen,
            chores=timetable,
            stopping=self.ended,
            doorbell=self.doorbell,
            complaints=self.complaints,
        )
        self._listener_thread = threading.Thread(target=self._listener.run, name="jobs-listener", daemon=True)
        registration = workers_table.Registration(self.id, self.queues, threads, lease, self.version)
        self._heartbeat = Heartbeat(
            self.connect, registration, ended=self.ended, complaints=self.complaints, on_registered=self.registered
        )
        self._heartbeat_thread = threading.Thread(target=self._heartbeat.run, name="jobs-heartbeat", daemon=True)

    def start(self) -> "Worker":
        """Starts the threads and returns the worker; the work threads claim once it is registered."""
        self._heartbeat_thread.start()
        self._listener_thread.start()
        with self._lock:
            self._work = [WorkThread(self, n).start() for n in range(self.threads)]
        return self

    def stop(self, drain: bool = False, grace: float | None = None) -> None:
        """Asks the worker to stop: nothing new is claimed, and the jobs in hand finish and settle.

        With drain=True it first works on until nothing is due on its queues. With
        `grace` (seconds), jobs still running when it has passed are given back to
        the queue at once, their settlement fenced off, and their threads let go (a second
        stop with grace=0 gives everything back now). Not from a signal handler: it takes the lock join holds.
        """
        if grace is not None:
            self._grace_ends = time.monotonic() + grace
        if drain:
            self._drain = True  # each work thread ends when it finds nothing due, once it may claim
            self.frontiers.drained()  # due means due: a drain's claims start at the front
            if self._ready.is_set():
                self.doorbell.ring_everyone()  # else registered() does, once the threads may claim
        else:
            self._stopping.set()
            for work in self._work_threads():
                work.ending.set()
            self.doorbell.ring_everyone()

    def join(self, timeout: float | None = None) -> bool:
        """Waits for the threads to end; True when they all have, and then logs (once) what the worker did."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            threads = self._threads()
            for thread in threads:
                thread.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
            if threads == self._threads():
                break  # no thread was replaced meanwhile
        if any(thread.is_alive() for thread in threads):
            return False
        self._listener.closed()
        self.watchdog.stop()
        if not self._said_stopped:
            self._said_stopped = True
            log.info("the worker stopped: %s", self.counts.said())
        return True

    def wait_until_empty(self, timeout: float) -> bool:
        """Waits until no job is due or in work on the worker's queues; True if that happened in time.

        For tests: what the last job did is committed when this returns.
        """
        deadline = time.monotonic() + timeout
        with self.connect() as db:
            db.autocommit = True
            while time.monotonic() < deadline:
                if (
                    not self.batches_held()
                    and not self.ledger.letting_go()
                    and claims.outstanding(db, self.queues) == 0
                ):
                    return True
                self.ended.wait(0.01)
        return False

    @property
    def draining(self) -> bool:
        """Whether a work thread that found nothing due ends: a drain was asked, and the worker may claim."""
        return self._drain and self._ready.is_set()

    def _threads(self) -> list[threading.Thread]:
        return [work.thread for work in self._work_threads()] + [self._listener_thread, self._heartbeat_thread]

    def claimable(self) -> list[str]:
        """The queues a work thread may claim from now: those not paused; none before the worker is registered,
        and none once it stops."""
        if self._stopping.is_set() or not self._ready.is_set():
            return []
        return [queue for queue in self.queues if queue not in self.paused]

    def registered(self) -> None:
        """Hears that the worker's row is written: once the paused queues are read too, it claims."""
        self._registered = True
        self._readied()

    def _readied(self) -> None:
        """Lets the threads claim, and wakes them, once the worker is registered and knows the paused queues."""
        if self._registered and self._paused_read and not self._ready.is_set():
            self._ready.set()
            for _ in range(self.threads):
                self.doorbell.ring()
            if self._drain:
                self.doorbell.ring_everyone()

    def paused_now(self, paused: set[str]) -> None:
        """Hears which queues are paused now (maintenance.py, every POLL_INTERVAL); a resumed one wakes a thread."""
        mine = paused & set(self.queues)
        resumed = self.paused - mine
        self.paused = mine
        if resumed:
            self.doorbell.ring()
        self._paused_read = True
        self._readied()

    def thread_ended(self, work: WorkThread) -> None:
        """Hears that a work thread ended; when the last has, the listener ends too."""
        with self._lock:
            if work in self._work:
                self._work.remove(work)
            last = not self._work
        if last:
            self.ended.set()
            self._listener.interrupted()
            self._heartbeat.interrupted()

    def _work_threads(self) -> list[WorkThread]:
        with self._lock:
            return list(self._work)

    def work_threads(self) -> list[WorkThread]:
        """The work threads not let go."""
        return self._work_threads()

    def batches_held(self) -> list[list[Job]]:
        """The jobs each work thread holds now (claimed, not yet settled or let go)."""
        return [held for held in (hand.held() for hand in self.ledger.hands()) if held]

    def thread_died(self, work: WorkThread, error: BaseException) -> None:
        """Hears that a work thread ended of `error`: it says so, and another takes its place unless stopping."""
        log.error("a work thread ended of %r; another takes its place", error, exc_info=error)
        if self.replaced(work):
            self.thread_ended(work)

    def stopping(self) -> bool:
        """Whether the worker claims nothing new any more."""
        return self._stopping.is_set()

    def replaced(self, work: WorkThread) -> bool | None:
        """Takes thread `work` out and, unless stopping, starts a thread in its place at once (the keeper lets it go).

        Answers whether it was the last one (the worker then ends once its jobs are
        let go), or None when it was taken out already.
        """
        with self._lock:
            if work not in self._work:
                return None
            self._work.remove(work)
            if not self._stopping.is_set():
                self._work.append(WorkThread(self, work.n).start())
            return not self._work

    def grace_over(self, now: float) -> bool:
        """Whether a stop's grace period has run out at `now` (time.monotonic())."""
        return self._grace_ends is not None and now >= self._grace_ends


def worker(
    connect: Connect, queues: str | Iterable[str], performers: Mapping[str, Performer], **options: Any
) -> Worker:
    """Starts a worker on `queues` (see Worker for the options) and returns it; call .stop() to end it."""
    return Worker(connect, queues, performers, **options).start()


def beside(
    connect: Connect,
    queue: str,
    performers: Mapping[str, Performer],
    serve: Callable[[], T],
    *,
    on_start: Callable[[Worker], object] | None = None,
    **options: Any,
) -> T:
    """Runs `serve()` (a web server, say) with a worker on `queue` in threads beside it.

    The worker makes the jobs table first when it is missing, and works on
    connections of its own. `on_start(worker)`, when given, is called with the running
    worker before `serve()` (to hand it to a dashboard, say). When `serve` returns or
    raises, the worker stops (the job in hand finishes) and `beside` returns or raises
    what `serve` did.
    """
    with connect() as db:
        schema.prepared(db)
    running = worker(connect, [queue], performers, **options)
    try:
        if on_start is not None:
            on_start(running)
        return serve()
    finally:
        running.stop()
        running.join()


def beside_asgi(
    app: ASGIApp, connect: Connect, queue: str, performers: Mapping[str, Performer], **options: Any
) -> ASGIApp:
    """`app`, an ASGI app, with a worker on `queue` in threads beside it for as long as its server runs it.

    The worker starts once `app` has started (its lifespan's startup is complete). When
    the server says to shut down (`lifespan.shutdown`), the worker stops claiming and
    the job in hand finishes before `app` is told, so a performer may use what the app's
    startup made until its shutdown begins; should `app` end without it, the worker
    stops then. The waits on the database and on the threads run off the event loop
    (asyncio.to_thread), so requests still in flight are answered meanwhile. `app`
    must speak the lifespan protocol, as Starlette, FastAPI, Litestar and Quart apps do.
    """
    running: list[Worker] = []

    def started() -> Worker:
        with connect() as db:
            schema.prepared(db)
        return worker(connect, [queue], performers, **options)

    def stopped(done: Worker) -> None:
        done.stop()
        done.join()

    async def served(
        scope: MutableMapping[str, Any],
        receive: Callable[[], Awaitable[Message]],
        send: Callable[[Message], Awaitable[None]],
    ) -> None:
        if scope["type"] != "lifespan":
            await app(scope, receive, send)
            return

        async def received() -> Message:
            message = await receive()
            if message["type"] == "lifespan.shutdown" and running:
                await asyncio.to_thread(stopped, running.pop())
            return message

        async def sent(message: Message) -> None:
            if message["type"] == "lifespan.startup.complete":
                running.append(await asyncio.to_thread(started))
            await send(message)

        try:
            await app(scope, received, sent)
        finally:
            if running:  # the app ended its lifespan before the server said to shut down
                await asyncio.to_thread(stopped, running.pop())

    return served


def worked(
    db: psycopg.Connection[Any],
    queue: str,
    performers: Mapping[str, Performer],
    now: int | None = None,
    *,
    lease: float = UNWATCHED_LEASE,
) -> str | None:
    """Claims one job of `queue` due at `now` (ms; the database's clock when None), runs it and settles it.

    Answers what happened, as one line: "ran NAME", or "failed NAME on attempt N:
    REASON"; None when nothing was due. `db` must not be inside a transaction: the
    claim commits before the job runs, and the settlement commits after. No heartbeat
    runs here, so the lease is UNWATCHED_LEASE unless `lease` says otherwise.
    """
    if db.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
        raise ValueError("worked() commits its claim: call it on a connection outside a transaction")
    with db.transaction():
        claims.promoted(db, now)
    # A limited queue's claim (limits.py) within its limit; any other's, after one read of job_limits.
    claimed = limits.claimed(db, queue, now, lease=lease, budgets=claims.budgets_of(performers)).jobs
    if not claimed:
        return None
    return performed(db, claimed, performers, now=now)[0]
