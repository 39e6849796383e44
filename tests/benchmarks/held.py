"""A queue beside a transaction held open elsewhere: does it keep up, and how fast does it claim?

`python -m tests.benchmarks.held` (not part of the tests) works a queue at a steady
RATE jobs a second for `--minutes` (MINUTES) twice: once beside one transaction held
open the whole time (`BEGIN; SELECT txid_current();`, as a forgotten session or a long
report holds one), and once more with READERS overlapping REPEATABLE READ readers of
the jobs table as well. Neither lets vacuum remove the rows the queue deletes, so the
claim walks more and more dead index entries. It prints, per run, the claim's p95 each
minute, the backlog at the start and the end, and the dead rows left; the goal is a
backlog that does not grow and a claim p95 under GOAL_P95 throughout.
"""

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import jobs
from jobs.store import claims as statements

from . import database

RATE = 500  # jobs a second the producer offers
EVERY = 0.02  # seconds between the producer's later_many calls: RATE * EVERY jobs each
MINUTES = 5.0  # minutes each run lasts
READERS = 4  # REPEATABLE READ readers of the jobs table in the second run, overlapping
READ_FOR = 60.0  # seconds each reader holds its snapshot before it takes a new one
GOAL_P95 = 0.010  # seconds: the claim's p95 the queue must stay under


class Claims:
    """Times every claim that found jobs, by the minute of the run it fell in."""

    def __init__(self, began: float):
        self.began, self._real = began, statements.claimed
        self.by_minute: dict[int, list[float]] = {}
        self._lock = threading.Lock()

    def claimed(self, *args, **kwargs):
        started = time.monotonic()
        found = self._real(*args, **kwargs)
        if found:
            with self._lock:
                self.by_minute.setdefault(int((started - self.began) // 60), []).append(time.monotonic() - started)
        return found

    def p95s(self) -> list[float]:
        return [
            statistics.quantiles(times, n=20)[-1] if len(times) > 1 else times[0]
            for _, times in sorted(self.by_minute.items())
        ]


def backlog(db) -> int:
    """The jobs due and waiting on the benchmark's queue."""
    return db.execute(
        "SELECT count(*) FROM jobs WHERE queue = %s AND claim IS NULL AND attempts < max_attempts", (database.QUEUE,)
    ).fetchone()[0]


def produced(url: str, until: float) -> None:
    """Queues RATE jobs a second, in small COPYs, until `until` (time.monotonic())."""
    per_call = max(1, round(RATE * EVERY))
    with database.connected(url) as db:
        next_call = time.monotonic()
        while next_call < until:
            jobs.later_many(db, database.QUEUE, database.NAME, [{}] * per_call)
            next_call += EVERY
            time.sleep(max(0.0, next_call - time.monotonic()))


def read_repeatably(url: str, until: float, offset: float) -> None:
    """A REPEATABLE READ reader of the jobs table, renewing its snapshot every READ_FOR seconds."""
    time.sleep(offset)
    with database.connected(url, autocommit=False) as db:
        while time.monotonic() < until:
            db.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
            db.execute("SELECT count(*) FROM jobs").fetchone()
            time.sleep(min(READ_FOR, max(0.0, until - time.monotonic())))
            db.rollback()


def run(url: str, minutes: float, readers: int) -> dict:
    """One run: a held transaction (and `readers` readers), a producer, a worker of two threads."""
    database.made(url)
    holder = database.connected(url, autocommit=False)
    holder.execute("SELECT txid_current()")  # the transaction stays open until the run ends
    began = time.monotonic()
    until = began + minutes * 60
    claims = Claims(began)
    statements.claimed = claims.claimed
    side = [threading.Thread(target=produced, args=(url, until))]
    side += [
        threading.Thread(target=read_repeatably, args=(url, until, n * READ_FOR / readers)) for n in range(readers)
    ]
    worker = jobs.worker(database.connector(url), database.QUEUE, {database.NAME: lambda db, args: None}, threads=2)
    try:
        with database.connected(url) as db:
            for thread in side:
                thread.start()
            time.sleep(5)
            start_backlog = backlog(db)
            for thread in side:
                thread.join()
            end_backlog = backlog(db)
            dead = database.scalar(
                db,
                "SELECT n_dead_tup FROM pg_stat_user_tables WHERE relname = 'jobs' AND schemaname = current_schema()",
            )
    finally:
        worker.stop()
        worker.join(30)
        statements.claimed = claims._real
        holder.close()
    return {"p95s": claims.p95s(), "start": start_backlog, "end": end_backlog, "dead": dead}


def printed(title: str, figures: dict) -> None:
    p95s = " ".join(f"{p95 * 1000:.2f}" for p95 in figures["p95s"])
    worst = max(figures["p95s"])
    verdict = "PASS" if worst < GOAL_P95 and figures["end"] <= max(figures["start"], RATE) else "MISS"
    print(
        f"{title}\n  claim p95 by minute (ms): {p95s}\n  backlog: {figures['start']} at 5 s, "
        f"{figures['end']} at the end; dead rows left: {figures['dead']}\n  goal: p95 < {GOAL_P95 * 1000:g} ms "
        f"and no growing backlog: {verdict}"
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.benchmarks.held", description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=MINUTES, help=f"minutes per run (default {MINUTES:g})")
    parser.add_argument(
        "--database-url",
        default=os.environ.get("DATABASE_URL"),
        help="the database (default: DATABASE_URL, else a throw-away embedded PostgreSQL)",
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="jobs-held-") as folder:
        url = args.database_url
        if not url:
            from guestbook import embedded

            url = embedded.server(Path(folder) / "pgdata", throwaway=True).get_uri()
        print(
            f"{database.described(url)}, {os.cpu_count()} cores; {RATE} jobs/s offered, {args.minutes:g} min a run",
            file=sys.stderr,
        )
        try:
            printed("one transaction held open", run(url, args.minutes, 0))
            printed(f"the same, and {READERS} REPEATABLE READ readers", run(url, args.minutes, READERS))
        finally:
            database.dropped(url)
    return 0


if __name__ == "__main__":
    sys.exit(main())
