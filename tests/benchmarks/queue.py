"""jobs' own figures: the measurements of plain.py made again through the queue's public API.

Every job is a no-op named NAME on QUEUE, so what is timed is the queue: claiming,
running a performer that does nothing, settling, queueing and waking.
"""

import threading
import time

import jobs

from . import database, timing

TABLE = "jobs"
WORK_THREAD = "jobs-worker-"  # how a Worker names its work threads, followed by their number
WORKER_CONNECTIONS = 2  # a Worker of one work thread holds two: the work thread's and its listener's


def noop(db, args) -> None:
    """The performer of every drained job: it does nothing, so the queue is all that is timed."""


PERFORMERS = {database.NAME: noop}


def drain_rate(url: str, count: int, processes: int) -> float:
    """Jobs a second that `processes` worker processes of one work thread each run and settle."""
    with database.connected(url) as db:
        database.filled(db, TABLE, database.due(count))
    seconds, processed = timing.together(drained, [(url,)] * processes)
    if sum(processed) != count:
        raise RuntimeError(f"jobs drain processed {sum(processed)} of {count} jobs")
    return count / seconds


def drained(url: str, gate) -> int:
    """One process's part of a drain: a Worker that stops once nothing is due; returns the jobs it ran."""
    worker = jobs.Worker(connected_ahead(url, WORKER_CONNECTIONS), [database.QUEUE], PERFORMERS, threads=1)
    gate.wait()
    worked_out(worker.start())
    return worker.counts.processed


def connected_ahead(url: str, count: int):
    """A connect function for a Worker that hands out `count` connections opened now, then new ones.

    The plain drains connect before the clock starts; so do the workers, this way.
    """
    ready = [database.connected(url, autocommit=False) for _ in range(count)]
    return lambda: ready.pop() if ready else database.connected(url, autocommit=False)


def worked_out(worker: jobs.Worker) -> None:
    """Lets a started worker run until nothing is due, and returns as soon as its work threads end.

    With stop(drain=True) the work threads end when they find nothing due, but the
    listener thread only notices at its next look, up to the worker's poll interval
    later; so this joins the work threads (named "jobs-worker-N") first, then stops
    the listener at once, and that wait stays out of the figures.
    """
    worker.stop(drain=True)
    work_threads = [thread for thread in threading.enumerate() if thread.name.startswith(WORK_THREAD)]
    if not work_threads:
        raise RuntimeError(f"no thread named {WORK_THREAD}N: the benchmark must learn how a Worker names them now")
    for thread in work_threads:
        thread.join()
    worker.stop()
    worker.join()


def enqueue_rate(url: str, count: int) -> float:
    """Jobs a second queued with `jobs.later`, one per transaction (autocommit)."""
    with database.connected(url) as db:
        database.emptied(db, TABLE)
        started = time.perf_counter()
        for n in range(count):
            jobs.later(db, database.QUEUE, database.NAME, {"n": n})
        return count / (time.perf_counter() - started)


def bulk_rate(url: str, count: int) -> float | None:
    """Jobs a second queued by one `jobs.later_many` in one transaction; None while jobs has no bulk API."""
    if not hasattr(jobs, "later_many"):
        return None
    with database.connected(url) as db:
        database.emptied(db, TABLE)
        args = [{"n": n} for n in range(count)]
        started = time.perf_counter()
        with db.transaction():
            jobs.later_many(db, database.QUEUE, database.NAME, args)
        seconds = time.perf_counter() - started
        queued = database.count(db, TABLE)
    if queued != count:
        raise RuntimeError(f"jobs.later_many queued {queued} of {count} jobs")
    return count / seconds


def latencies(url: str, samples: int) -> list[float]:
    """Seconds from a `jobs.later` commit to its performer's first line, an idle Worker in a thread beside."""
    starts = timing.Starts()
    with database.connected(url) as db:
        database.emptied(db, TABLE)
        worker = jobs.worker(database.connector(url), [database.QUEUE], {database.NAME: starts.begun})
        try:
            return timing.latencies(lambda: jobs.later(db, database.QUEUE, database.NAME, {}), starts, samples)
        finally:
            worker.stop()
            worker.join()
