"""The writing-jobs column: every job INSERTs one row of its own, so each settles on a transaction of its own.

jobs drains the queue with one Worker of 1 or WRITING_THREADS work threads; the plain
limit claims 100 rows at a time on as many connections (processes, as every plain
figure) and then, for each row, writes its row and deletes the job in one transaction,
as a queue must for a job whose writes commit with its settlement. The same plain SQL on
WRITING_THREADS threads of one process shows what one interpreter lock costs it, as a
Worker's threads share one.
"""

import threading

import jobs

from . import database, plain, queue, timing

WRITTEN = "CREATE TABLE IF NOT EXISTS written (n bigint NOT NULL)"  # the table each job writes its row into
WRITING_THREADS = 4  # work threads (and plain connections) of the column's second row
BATCH = 100  # rows a plain claim takes, as the plain drains'


def written(db, args) -> None:
    """The performer of every writing job: one INSERT, on the job's own transaction."""
    db.execute(plain.statements["written"], {"n": args["n"]})


def rate(url: str, count: int, threads: int) -> float:
    """Jobs a second that one Worker of `threads` work threads runs and settles, each writing its row."""
    filled(url, count)
    seconds, [processed] = timing.together(drained, [(url, threads)])
    checked(url, processed, count, "jobs")
    return count / seconds


def drained(url: str, threads: int, gate) -> int:
    """The Worker's process: it works until nothing is due; returns the jobs it ran."""
    performers = {database.NAME: written}
    worker = jobs.Worker(queue.connected_ahead(url, threads + 1), [database.QUEUE], performers, threads=threads)
    gate.wait()
    queue.worked_out(worker.start())
    return worker.counts.processed


def plain_rate(url: str, count: int, connections: int) -> float:
    """Jobs a second that `connections` processes settle, each job's row and deletion in a transaction of its own."""
    filled(url, count, plain.TABLE)
    seconds, settled = timing.together(plain_drained, [(url,)] * connections)
    checked(url, sum(settled), count, "plain")
    return count / seconds


def plain_drained(url: str, gate) -> int:
    """One plain process: claim 100, then for each row BEGIN, INSERT its row, DELETE the job, COMMIT."""
    settled = 0
    with database.connected(url) as db:
        gate.wait()
        while True:
            claim, rows = plain.claimed(db, BATCH)
            if not rows:
                return settled
            for row in rows:
                with db.transaction():
                    db.execute(plain.statements["written"], {"n": row[3]["n"]})
                    db.execute(plain.statements["delete_one"], {"id": row[0], "claim": claim})
            settled += len(rows)


def plain_threaded_rate(url: str, count: int, threads: int) -> float:
    """Jobs a second that `threads` threads of one process settle as plain_drained does: what one interpreter
    lock leaves of plain SQL, as a Worker's threads share one."""
    filled(url, count, plain.TABLE)
    seconds, [settled] = timing.together(plain_threads_drained, [(url, threads)])
    checked(url, settled, count, "plain threads")
    return count / seconds


def plain_threads_drained(url: str, threads: int, gate) -> int:
    """One process of `threads` plain threads, each connected before the clock starts; returns what they settled."""
    connected, start, settled = threading.Barrier(threads + 1), threading.Event(), []

    class Gate:
        def wait(self) -> None:
            connected.wait()
            start.wait()

    workers = [threading.Thread(target=lambda: settled.append(plain_drained(url, Gate()))) for _ in range(threads)]
    for thread in workers:
        thread.start()
    connected.wait()
    gate.wait()
    start.set()
    for thread in workers:
        thread.join()
    return sum(settled)


def filled(url: str, count: int, table: str = queue.TABLE) -> None:
    """Fills `table` with `count` due jobs and empties the table they write into."""
    with database.connected(url) as db:
        db.execute(WRITTEN)
        db.execute("TRUNCATE written")
        database.filled(db, table, database.due(count))


def checked(url: str, settled: int, count: int, who: str) -> None:
    """Refuses a run that did not settle every job, or did not write each job's row once."""
    with database.connected(url) as db:
        rows = db.execute("SELECT count(*), count(DISTINCT n) FROM written").fetchone()
    assert rows is not None  # counts answer one row
    if settled != count or rows != (count, count):
        raise RuntimeError(
            f"{who} writing jobs settled {settled} of {count} jobs and wrote {rows[0]} rows ({rows[1]} distinct)"
        )
