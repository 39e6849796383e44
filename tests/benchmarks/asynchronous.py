"""The async column: `await jobs.later` beside a plain INSERT on an AsyncConnection, and the drain
of `async def` performers beside the same drain of plain ones, each pair in one run.

The drains are queue.py's (one worker process of one work thread); only the performer
differs, so the ratio is what running a coroutine on the thread's loop costs a job.
"""

import asyncio
import time

import psycopg

import jobs

from . import database, plain, queue, timing

ENQUEUE_SHARE = 0.9  # `await jobs.later`, one per transaction, as a share of a plain INSERT on an AsyncConnection
DRAIN_SHARE = 0.8  # the drain of async no-op performers, as a share of the drain of sync ones


async def noop(db, args) -> None:
    """The async performer of the async drain: it does nothing, so the queue and the loop are all that is timed."""


ASYNC_PERFORMERS = {database.NAME: noop}


def enqueue_rate(url: str, count: int) -> float:
    """Jobs a second queued with `await jobs.later` on an autocommit AsyncConnection, one per transaction."""

    async def queued(aconn, n: int) -> None:
        await jobs.later(aconn, database.QUEUE, database.NAME, {"n": n})

    return inserts_rate(url, count, queue.TABLE, queued)


def plain_enqueue_rate(url: str, count: int, *, notify: bool = False) -> float:
    """Rows a second inserted one per transaction on an autocommit AsyncConnection: plain.py's INSERT, with a
    notification each when `notify` (plain.py's INSERT + pg_notify, what `later` sends besides its checks)."""
    statement = plain.statements["insert_notify" if notify else "insert"]

    async def inserted(aconn, n: int) -> None:
        await aconn.execute(statement, plain.row_params(n))

    return inserts_rate(url, count, plain.TABLE, inserted)


def inserts_rate(url: str, count: int, table: str, insert) -> float:
    """Rows a second that `await insert(aconn, n)` writes, `count` times on one autocommit AsyncConnection,
    into `table` emptied first."""
    with database.connected(url) as db:
        database.emptied(db, table)

    async def timed() -> float:
        async with await psycopg.AsyncConnection.connect(url, autocommit=True, **options()) as aconn:
            started = time.perf_counter()
            for n in range(count):
                await insert(aconn, n)
            return count / (time.perf_counter() - started)

    return asyncio.run(timed())


def options() -> dict:
    """What database.connected gives a connection: the benchmark's schema, and its name."""
    return {"options": f"-c search_path={database.SCHEMA}", "application_name": "jobs benchmark"}


def drain_rate(url: str, count: int) -> float:
    """Jobs a second one worker process of one work thread runs with async no-op performers, and settles."""
    with database.connected(url) as db:
        database.filled(db, queue.TABLE, database.due(count))
    seconds, processed = timing.together(drained, [(url,)])
    if sum(processed) != count:
        raise RuntimeError(f"the async drain processed {sum(processed)} of {count} jobs")
    return count / seconds


def drained(url: str, gate) -> int:
    """queue.drained, with the async performers."""
    worker = jobs.Worker(queue.connected_ahead(url, queue.WORKER_CONNECTIONS), [database.QUEUE], ASYNC_PERFORMERS)
    gate.wait()
    queue.worked_out(worker.start())
    return worker.counts.processed


def rows(figures: dict, rate, ratio) -> list[list[str]]:
    """The report's rows of the column, with report.py's `rate` and `ratio`."""
    if "async enqueue" not in figures:
        return []
    own, limit = figures["async enqueue"], figures["async plain insert"]
    drain, sync = figures["async drain"], figures["sync drain"]
    return [
        [
            "await jobs.later, one per transaction",
            rate(own),
            rate(limit),
            "INSERT on an AsyncConnection",
            ratio(own, limit),
        ],
        [
            "",
            "",
            rate(figures["async plain notify"]),
            "INSERT + pg_notify, async",
            ratio(own, figures["async plain notify"]),
        ],
        ["drain of async performers", rate(drain), rate(sync), "the same drain, sync performers", ratio(drain, sync)],
    ]


def goals(figures: dict, verdict) -> list[list[str]]:
    """The column's goals, with report.py's `verdict`."""
    if "async enqueue" not in figures:
        return []
    enqueue = figures["async enqueue"] / figures["async plain insert"]
    drain = figures["async drain"] / figures["sync drain"]
    return [
        [
            f"await jobs.later >= {ENQUEUE_SHARE:g} x plain INSERT, async",
            f"{enqueue:.2f}",
            verdict(enqueue >= ENQUEUE_SHARE),
        ],
        [f"drain of async performers >= {DRAIN_SHARE:g} x sync ones", f"{drain:.2f}", verdict(drain >= DRAIN_SHARE)],
    ]
