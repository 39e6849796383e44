"""The ways an app runs its jobs: `worker` starts a worker for a process of its own, `beside` one
next to a web server, `beside_asgi` one within an ASGI app's lifespan; `worked` runs one job
in the caller's own loop, with no thread and no heartbeat.

Each starter takes the Worker's options (worker.py); `beside` and `beside_asgi` make the
tables first and stop the worker when the server is done, so a small app runs its mail and
its pages in one process. `worked` is what a Worker's thread does in one pass, for a
script, a test or a loop of the caller's: it claims at most one job and returns a line
that says what became of it.
"""

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Mapping, MutableMapping
from typing import Any, TypeVar

import psycopg

from ..core.job import Performer
from ..store import claims, limits, schema
from .connections import Connect
from .running import performed
from .worker import Worker

UNWATCHED_LEASE = 300.0  # seconds `worked` leases a job for: no worker beats to keep it
T = TypeVar("T")  # what `beside`'s serve() answers
# The ASGI callable's shape (the asgiref spec), spelled out: jobs imports no ASGI package.
Message = MutableMapping[str, Any]
ASGIApp = Callable[
    [MutableMapping[str, Any], Callable[[], Awaitable[Message]], Callable[[Message], Awaitable[None]]], Awaitable[None]
]


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
