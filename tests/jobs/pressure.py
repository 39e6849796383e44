"""A steady producer and a watcher of the server, for the chaos tests that break the database under load.

The producer queues small batches of `effect` jobs (tests/jobs/performers.py) with
`later_many` every few milliseconds, as an app under steady traffic does, and keeps
offering through outages. The watcher samples pg_stat_activity, so a test (or a
person reading its failure) sees which statements waited, on what, behind whom.
"""

import collections
import random
import threading
import time

import psycopg

import jobs
from jobs.runtime.connections import closed

RATE = 200  # jobs a second the producer offers
EVERY = (0.010, 0.025)  # seconds between two of its batches, drawn at random in this range
JOB_MS = 1  # milliseconds each job works
SAMPLE_EVERY = 0.5  # seconds between two samples of pg_stat_activity


class Background:
    """A thread of the test's own that runs `_run` until `stop`; `start` answers the object itself."""

    def __init__(self, name: str):
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self):
        self._thread.start()
        return self

    def _run(self) -> None:
        """The thread's work, until `_stop` is set: each kind of Background has its own."""
        raise NotImplementedError

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


class Producer(Background):
    """Offers RATE jobs a second on `queue` until stopped, reconnecting through outages.

    `committed` holds the `n` of every job whose batch surely committed; `uncertain`
    those of a batch whose commit was cut off (it may or may not have committed).
    """

    def __init__(self, url: str, queue: str = "default", rate: int = RATE):
        self.url, self.queue, self.rate = url, queue, rate
        self.committed: list[int] = []
        self.uncertain: list[int] = []
        self.failures = 0
        Background.__init__(self, "producer")
        self._next = 0

    def _run(self) -> None:
        chance, db, last = random.Random(13), None, time.monotonic()
        while not self._stop.is_set():
            self._stop.wait(chance.uniform(*EVERY))
            now = time.monotonic()
            count, last = max(1, round((now - last) * self.rate)), now
            batch = list(range(self._next, self._next + count))
            self._next += count
            try:
                if db is None:
                    db = psycopg.connect(self.url, autocommit=True, connect_timeout=2, application_name="producer")
                jobs.later_many(db, self.queue, "effect", [{"n": n, "ms": JOB_MS} for n in batch])
                self.committed += batch
            except psycopg.Error:
                self.failures += 1
                self.uncertain += batch
                closed(db)
                db = None
        closed(db)


class Watcher(Background):
    """Samples what the workers' backends wait on every `every` seconds (SAMPLE_EVERY), until stopped."""

    QUERY = """
        SELECT a.pid, a.state, a.wait_event_type, a.wait_event, left(a.query, 60),
            (SELECT left(b.query, 60) FROM pg_stat_activity b WHERE b.pid = (pg_blocking_pids(a.pid))[1])
        FROM pg_stat_activity a WHERE a.datname = current_database()
            AND a.application_name = 'jobs worker' AND a.pid <> pg_backend_pid()"""

    def __init__(self, url: str, every: float = SAMPLE_EVERY):
        self.url, self.every = url, every
        self.samples: list[tuple[float, list[tuple]]] = []
        Background.__init__(self, "watcher")

    def _run(self) -> None:
        db = None
        while not self._stop.wait(self.every):
            try:
                if db is None:
                    db = psycopg.connect(self.url, autocommit=True, connect_timeout=2, application_name="watcher")
                self.samples.append((time.time(), db.execute(self.QUERY).fetchall()))
            except psycopg.Error:
                closed(db)
                db = None
        closed(db)

    def lock_waits(self) -> collections.Counter:
        """(waiting statement, blocking statement) pairs, counted over every sample of a backend waiting on a lock."""
        return collections.Counter((row[4], row[5]) for _, rows in self.samples for row in rows if row[2] == "Lock")

    def share_waiting_on_locks(self) -> float:
        """The share of backend samples, busy or idle, that waited on a lock."""
        rows = [row for _, rows in self.samples for row in rows]
        return sum(row[2] == "Lock" for row in rows) / max(1, len(rows))


def per_second(db, since: float) -> dict[int, int]:
    """Completions in each whole second since `since` (a time.time()), from the effects' done_at."""
    rows = db.execute(
        "SELECT floor(extract(epoch FROM done_at) - %s)::int AS s, count(*) FROM effects"
        " WHERE extract(epoch FROM done_at) >= %s GROUP BY s ORDER BY s",
        (since, since),
    ).fetchall()
    return dict(rows)
