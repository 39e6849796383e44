"""Async performers: an `async def` performer runs on its work thread's own event loop.

The runner (runner.py) hands such a performer `AsyncFace`, the job's transaction seen
through awaitable methods: `await db.execute(...)`, `await cursor.fetchall()`, `async
for row in cursor`. Its statements are the sync performer's: the same connection, the
same transaction, committed with the job's settlement, so what it writes commits
exactly once with its job. A statement awaited runs at once on the thread, one at a
time, as a transaction's statements must; the rest of the coroutine (an HTTP call, a
sleep, other tasks it starts) runs on the loop as in any async app.

Each work thread keeps one loop (`loop_of_this_thread`) for all its jobs, and a
coroutine that never waits on it (its only awaits are its statements) never turns it
(`awaited`): it costs its job what a plain performer does. When the job
must stop (its timeout passed, an operator cancelled it, or a stop's grace ran out:
`job.cancelled` is set), the coroutine is cancelled within LOOK seconds, so it ends
there (asyncio.CancelledError) instead of running on past its job, as a sync performer
that does not look would.
"""

import asyncio
import threading
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any

from psycopg.abc import Query

from .job import Job

LOOK = 0.05  # seconds between two looks at whether a running coroutine's job must stop

_local = threading.local()


def loop_of_this_thread() -> asyncio.AbstractEventLoop:
    """The event loop this thread runs its coroutine performers on, made the first time."""
    loop: asyncio.AbstractEventLoop | None = getattr(_local, "loop", None)
    if loop is None or loop.is_closed():
        loop = _local.loop = asyncio.new_event_loop()
    return loop


def awaited(perform: Callable[..., Coroutine[Any, Any, object]], db: Any, args: dict[str, Any], job: Job) -> None:
    """Runs `perform(AsyncFace(db), args)` to its end on this thread's loop; cancels it once `job` must stop.

    Its first step is taken at once, with the loop set as this thread's running one
    (asyncio's own `_set_running_loop`, as a loop's run does): a coroutine that never
    waits on the loop, as one whose only awaits are its statements, ends there, with no
    task and no turn of the loop. One that waits goes on in a task (`rest`).
    """
    if asyncio._get_running_loop() is not None:
        raise RuntimeError(
            "an async performer runs on its thread's own loop, and this thread runs a loop already: "
            "call jobs.worked from a thread of its own"
        )
    loop = loop_of_this_thread()
    coroutine = perform(AsyncFace(db), args)
    asyncio._set_running_loop(loop)
    try:
        waited = coroutine.send(None)
    except StopIteration:
        return
    finally:
        asyncio._set_running_loop(None)
    task = loop.create_task(rest(coroutine, waited))

    def looked() -> None:
        if job.cancelled.is_set():
            task.cancel()
        elif not task.done():
            handle[0] = loop.call_later(LOOK, looked)

    handle = [loop.call_later(LOOK, looked)]
    try:
        loop.run_until_complete(task)
    finally:
        handle[0].cancel()


async def rest(coroutine: Coroutine[Any, Any, object], waited: Any) -> None:
    """Steps a started `coroutine` on to its end, as a task steps its own: `waited` is what it waits on.

    A Future is waited on until it is done (the coroutine reads its result when it goes
    on); a bare yield (asyncio.sleep(0)) gives the loop one turn. When this task is
    cancelled, the cancel is thrown into the coroutine where it waits, as it would be
    into a task's.
    """
    while True:
        try:
            if waited is None:
                await asyncio.sleep(0)
            else:
                waited._asyncio_future_blocking = False  # taken, as a task takes what its coroutine yields
                await asyncio.wait([waited])
        except asyncio.CancelledError as cancel:
            if waited is not None:
                waited.cancel()
            try:
                waited = coroutine.throw(cancel)
            except StopIteration:
                return
            continue
        try:
            waited = coroutine.send(None)
        except StopIteration:
            return


class AsyncFace:
    """The job's connection (settlement.Touched) with awaitable statements, for an async performer."""

    def __init__(self, db: Any) -> None:
        self._db = db

    async def execute(self, query: Query, *args: Any, **kwargs: Any) -> "AsyncRows":
        return AsyncRows(self._db.execute(query, *args, **kwargs))

    def cursor(self, *args: Any, **kwargs: Any) -> "AsyncRows":
        return AsyncRows(self._db.cursor(*args, **kwargs))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._db, name)  # `connection`, `info`, ...; committing is refused by Touched


class AsyncRows:
    """A cursor of the job's connection whose statements and fetches are awaited."""

    def __init__(self, cursor: Any) -> None:
        self._cursor = cursor

    async def execute(self, query: Query, *args: Any, **kwargs: Any) -> "AsyncRows":
        self._cursor.execute(query, *args, **kwargs)
        return self

    async def fetchone(self) -> Any:
        return self._cursor.fetchone()

    async def fetchmany(self, size: int = 0) -> list[Any]:
        rows: list[Any] = self._cursor.fetchmany(size) if size else self._cursor.fetchmany()
        return rows

    async def fetchall(self) -> list[Any]:
        rows: list[Any] = self._cursor.fetchall()
        return rows

    async def __aiter__(self) -> AsyncIterator[Any]:
        for row in self._cursor:
            yield row

    async def __aenter__(self) -> "AsyncRows":
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._cursor.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cursor, name)  # rowcount, description, statusmessage, ...
