"""Starting a worker: `worker` for a process of its own, `beside` for one next to a web server.

Both take the Worker's options (workers.py); `beside` makes the tables first and stops
the worker when the server returns, so a small app runs its mail and its pages in one
process.
"""

from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from . import schema
from .connections import Connect
from .job import Performer
from .workers import Worker

T = TypeVar("T")  # what `beside`'s serve() answers


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
