"""The worker, and the ways an app runs its jobs: `worker` starts a Worker, `beside` one next to a
web server, `beside_asgi` one within an ASGI app's lifespan. A Worker's work threads, started and
replaced by its supervisor, its listener and its heartbeat are each given its Settings and the Parts
they use, never the Worker; store/'s parts a copy may leave out are looked for once, here.
"""

import asyncio
import functools
import logging
import secrets
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, MutableMapping
from typing import TYPE_CHECKING, Any, TypeVar

from ..core.job import LEASE, Job, Performer
from ..store import claims, schema
from ..store.frontier import Frontiers
from .connections import SILENT_AFTER, Connect
from .holdings import Holdings
from .maintenance import POLL_INTERVAL, Listener, timetable
from .refusals import Refusals
from .running import current
from .settling import Counts, Tally
from .supervisor import LetGo, Supervisor
from .watchdog import Heartbeat, Watchdog
from .work_thread import Doorbell, Gate, Parts, Settings

if TYPE_CHECKING:  # a copy may leave store/schedules.py out
    from ..store.schedules import Schedule

T = TypeVar("T")  # what `beside`'s serve() answers
# The ASGI callable's shape (the asgiref spec), spelled out: jobs imports no ASGI package.
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Message, Receive, Send], Awaitable[None]]

log = logging.getLogger("jobs")


class Worker:
    """Works `queues` with `performers` on connections from `connect` until stopped.

    threads: jobs run at once (it holds threads + 2 connections). lease: seconds it may fall silent
    before another worker takes it for gone and its jobs come back. listen=False: it polls every
    `poll` seconds (behind PgBouncer in transaction mode, where LISTEN does not work). timeout:
    seconds a job may run when its policy names none (None: no limit). schedules: Schedules
    (jobs.every) whose due ticks it queues. silent_after: seconds its own statements may wait for
    an answer before the watchdog cuts their connection.
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
        schedules: Iterable["Schedule"] = (),
        silent_after: float = SILENT_AFTER,
    ) -> None:
        queues = [queues] if isinstance(queues, str) else list(queues)
        if not queues or threads < 1 or lease <= 0 or (timeout is not None and not timeout > 0):
            raise ValueError(
                "a worker needs a queue, one thread or more, a lease of more than 0 s, "
                "and a timeout of more than 0 s if any"
            )
        self.watchdog = Watchdog(silent_after, exempt=lambda: current.get(None) is not None)  # not a performer's waits
        watched, worker_id = self.watchdog.connecting(connect), secrets.randbits(63)
        settings = Settings(worker_id, watched, queues, performers, threads, lease, poll, listen, timeout)
        self.settings, self.id, self.queues, self.counts = settings, worker_id, queues, Counts()
        limits, scheduling, pulse = (schema.optional(part) for part in ("limits", "schedules", "pulse"))
        self.pulse = pulse.Pulse() if pulse is not None else None
        self.gate = Gate(queues, doorbell := Doorbell(threads))
        limited = limits.Limits(queues, doorbell.ring) if limits is not None else None
        tally = Tally(self.counts, self.pulse)
        self.parts = parts = Parts(Holdings(), doorbell, self.gate, tally, Refusals(), Frontiers(), limited)
        self.frontiers = parts.frontiers
        self.ended = threading.Event()  # set when the last work thread has ended: the listener and heartbeat end too
        self.supervisor = Supervisor(settings, parts, LetGo(), over=self._over)
        held = scheduling.held(schedules) if scheduling is not None else ()  # none in a copy without them
        fired = functools.partial(scheduling.fired, schedules=held) if scheduling and held else None
        chores = timetable(settings, parts, self.supervisor, fired, pulse)
        self._listener = Listener(watched, self.gate, chores, parts.refusals, listen=listen, stopping=self.ended)
        self._heartbeat = Heartbeat(settings, self.ended, parts.refusals, on_registered=self.gate.registered)
        self._threads_beside = [
            threading.Thread(target=self._heartbeat.run, name="jobs-heartbeat", daemon=True),
            threading.Thread(target=self._listener.run, name="jobs-listener", daemon=True),
        ]
        self._said_stopped = False  # join() logs what the worker did once, when it has ended

    def start(self) -> "Worker":
        """Starts the threads and returns the worker; the work threads claim once it is registered."""
        for thread in self._threads_beside:
            thread.start()
        self.supervisor.start()
        return self

    def stop(self, drain: bool = False, grace: float | None = None) -> None:
        """Asks the worker to stop: nothing new is claimed, and the jobs in hand finish and settle.

        With drain=True it first works on until nothing is due on its queues. With `grace` (seconds),
        jobs still running when it has passed are given back at once, their settlement fenced off and
        their threads let go (grace=0: now). Not from a signal handler: it takes the lock join holds.
        """
        gate = self.gate
        if grace is not None:
            self.supervisor.grace_ends = time.monotonic() + grace
        if drain:
            gate.drain = True  # each work thread ends when it finds nothing due, once it may claim
            self.frontiers.drained()  # due means due: a drain's claims start at the front
            if gate.ready.is_set():
                gate.doorbell.ring_everyone()  # else the gate does, once the threads may claim
        else:
            gate.stopped.set()
            for work in self.supervisor.threads():
                work.ending.set()
            gate.doorbell.ring_everyone()

    def join(self, timeout: float | None = None) -> bool:
        """Waits for the threads to end; True when they all have, and then logs (once) what the worker did."""
        deadline = None if timeout is None else time.monotonic() + timeout
        threads: list[threading.Thread] = []
        while threads != (threads := self._threads()):  # until no thread was replaced meanwhile
            for thread in threads:
                thread.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
        if any(thread.is_alive() for thread in threads):
            return False
        self._listener.closed()
        self.watchdog.stop()
        if not self._said_stopped:
            self._said_stopped = True
            log.info("the worker stopped: %s", self.counts.said())
        return True

    def wait_until_empty(self, timeout: float) -> bool:
        """For tests: waits until no job is due or in work on its queues, the last one committed; True if in time."""
        deadline, holdings = time.monotonic() + timeout, self.parts.holdings
        with self.settings.connect() as db:
            db.autocommit = True
            while time.monotonic() < deadline:
                if not self.batches_held() and not holdings.letting_go() and not claims.outstanding(db, self.queues):
                    return True
                self.ended.wait(0.01)
        return False

    def _threads(self) -> list[threading.Thread]:  # every thread of the worker's, the work threads not let go
        return [work.thread for work in self.supervisor.threads()] + self._threads_beside

    def _over(self) -> None:  # the supervisor's word that the last work thread ended: the others end too
        self.ended.set()
        self._listener.interrupted()
        self._heartbeat.interrupted()

    @property
    def paused(self) -> set[str]:
        """The worker's queues paused when last read."""
        return self.gate.paused

    def batches_held(self) -> list[list[Job]]:
        """The jobs each work thread holds now (claimed, not yet settled or let go)."""
        return [held for held in (hand.held() for hand in self.parts.holdings.hands()) if held]


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

    The worker makes the tables first when they are missing, and works on connections of its own;
    `on_start(worker)` hears of it before `serve()` (to hand it to a dashboard, say). When `serve`
    returns or raises, the worker stops (the job in hand finishes) and `beside` does as `serve` did.
    """
    running = prepared_worker(connect, queue, performers, options)
    try:
        if on_start is not None:
            on_start(running)
        return serve()
    finally:
        stopped(running)


def beside_asgi(
    app: ASGIApp, connect: Connect, queue: str, performers: Mapping[str, Performer], **options: Any
) -> ASGIApp:
    """`app`, an ASGI app, with a worker on `queue` in threads beside it for as long as its server runs it.

    The worker starts once `app`'s lifespan startup is complete; at `lifespan.shutdown` it stops and
    the job in hand finishes before `app` is told, so a performer may use what its startup made (should
    `app` end first, the worker stops then). Its waits run off the event loop (requests are answered
    meanwhile). `app` must speak the lifespan protocol, as Starlette, FastAPI, Litestar and Quart apps do.
    """
    running: list[Worker] = []

    async def served(scope: Message, receive: Receive, send: Send) -> None:
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
                running.append(await asyncio.to_thread(prepared_worker, connect, queue, performers, options))
            await send(message)

        try:
            await app(scope, received, sent)
        finally:
            if running:  # the app ended its lifespan before the server said to shut down
                await asyncio.to_thread(stopped, running.pop())

    return served


def prepared_worker(
    connect: Connect, queue: str, performers: Mapping[str, Performer], options: dict[str, Any]
) -> Worker:
    """Makes the tables when they are missing, then starts a worker on `queue`."""
    with connect() as db:
        schema.prepared(db)
    return worker(connect, [queue], performers, **options)


def stopped(running: Worker) -> None:
    """Stops `running` and waits for the jobs in its hands to finish."""
    running.stop()
    running.join()
