"""Async performers: an `async def` performer runs on its work thread's own event loop.

The runner (running.py) hands such a performer `AsyncFace`, the job's transaction seen
through awaitable methods: `await db.execute(...)`, `await cursor.fetchall()`, `async
for row in cursor`. Its statements are the sync performer's: the same connection, the
same transaction, committed with the job's settlement, so what it writes commits
exactly once with its job. A statement awaited runs at once on the thread, one at a
time, as a transaction's statements must; the rest of the coroutine (an HTTP call, a
sleep, other tasks it starts) runs on the loop as in any async app.

Each work thread keeps one loop (`loop_of_this_thread`) for all its jobs, and a
coroutine that never waits on it (its only awaits are its statements) never turns it
(`awaited`): it costs its job what a plain performer does. A job ends with every task
it started: those still running when its coroutine returns are awaited, as a TaskGroup
awaits its own, and the first of them to fail fails the job; any left when it ends are
cancelled and awaited, as asyncio.run does. None runs on into a later job's turn of the
loop, through a connection its own job has handed back. When the job must stop (its
timeout passed, an operator cancelled it, or a stop's grace ran out: `job.cancelled` is
set), its coroutine and tasks are cancelled within LOOK seconds, so they end there
(asyncio.CancelledError) instead of running on past their job, as a sync performer
that does not look would.
"""

import asyncio
import functools
import threading
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any

from psycopg.abc import Query

from ..core.job import Job

LOOK = 0.05  # seconds between two looks at whether a running coroutine's job must stop

_local = threading.local()


def loop_of_this_thread() -> asyncio.AbstractEventLoop:
    """The event loop this thread runs its coroutine performers on, made the first time.

    Its task factory (`recorded`) keeps every task made on it in `running_here()` until
    the task is done, for `awaited` to end each job with the tasks it started.
    """
    loop: asyncio.AbstractEventLoop | None = getattr(_local, "loop", None)
    if loop is None or loop.is_closed():
        loop = _local.loop = asyncio.new_event_loop()
        _local.running = set()
        loop.set_task_factory(functools.partial(recorded, _local.running))
    return loop


def running_here() -> "set[asyncio.Task[Any]]":
    """The tasks made on this thread's loop (`loop_of_this_thread`) that are not done."""
    running: set[asyncio.Task[Any]] = _local.running
    return running


def recorded(
    running: "set[asyncio.Task[Any]]", loop: asyncio.AbstractEventLoop, coroutine: Any, **options: Any
) -> "asyncio.Task[Any]":
    """A task factory: makes the task as the loop would, and keeps it in `running` until it is done."""
    task = asyncio.Task(coroutine, loop=loop, **options)
    running.add(task)
    task.add_done_callback(running.discard)
    return task


def awaited(perform: Callable[..., Coroutine[Any, Any, object]], db: Any, args: dict[str, Any], job: Job) -> None:
    """Runs `perform(AsyncFace(db), args)`, then the tasks it left, to their end; cancels them once `job` must stop.

    Its first step is taken at once, with the loop set as this thread's running one
    (asyncio's own `_set_running_loop`, as a loop's run does): a coroutine that never
    waits on the loop, as one whose only awaits are its statements, ends there, with no
    task and no turn of the loop. One that waits goes on in a task (`rest`). The tasks
    it leaves running are then awaited, as a TaskGroup awaits its own (`together`), and
    the first of them to fail fails the job. However the job ends, no task it started
    is left on the loop: any still running is cancelled and awaited, as `asyncio.run`
    does (`cancelled_all`).
    """
    if asyncio._get_running_loop() is not None:
        raise RuntimeError(
            "an async performer runs on its thread's own loop, and this thread runs a loop already: "
            "call jobs.worked from a thread of its own"
        )
    loop = loop_of_this_thread()
    running = running_here()
    try:
        own = first_step(loop, perform(AsyncFace(db), args))
        if own is not None:
            watched(loop, own, job)
        if unfinished(running):
            watched(loop, asyncio.Task(together(running), loop=loop), job)  # not the factory's: none of the job's
    finally:
        if running:
            cancelled_all(loop, running)


def first_step(loop: asyncio.AbstractEventLoop, coroutine: Coroutine[Any, Any, object]) -> "asyncio.Task[Any] | None":
    """Takes `coroutine`'s first step on `loop`; answers the task that runs the rest, or None if it ended there."""
    asyncio._set_running_loop(loop)
    try:
        waited = coroutine.send(None)
    except StopIteration:
        return None
    finally:
        asyncio._set_running_loop(None)
    return loop.create_task(rest(coroutine, waited))


def watched(loop: asyncio.AbstractEventLoop, task: "asyncio.Task[Any]", job: Job) -> None:
    """Runs `loop` until `task` is done, and raises what it raised; cancels it once `job` must stop."""

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
        task.cancel()  # done already, unless a task's SystemExit or KeyboardInterrupt ended the loop's run


async def together(running: "set[asyncio.Task[Any]]") -> None:
    """Waits until the tasks in `running`, which those they start join, have all ended; the first to fail raises."""
    while tasks := unfinished(running):
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
        errors = [task.exception() for task in done if not task.cancelled()]  # each read: none logged as unread
        error = next((error for error in errors if error is not None), None)
        if error is not None:
            raise error


def cancelled_all(loop: asyncio.AbstractEventLoop, running: "set[asyncio.Task[Any]]") -> None:
    """Cancels the tasks in `running` and runs `loop` until they have ended, as asyncio.run does at its end."""
    while tasks := unfinished(running):
        for task in tasks:
            task.cancel()
        loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))  # a future, made by no factory
    running.clear()


def unfinished(running: "set[asyncio.Task[Any]]") -> "list[asyncio.Task[Any]]":
    """The tasks of `running` not done."""
    return [task for task in running if not task.done()]


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
