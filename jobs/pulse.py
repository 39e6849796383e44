"""The queue's pulse: what each worker counts per queue and minute, added to job_pulse every PULSE_EVERY seconds.

A work thread tells its worker's Pulse of each claim (how long each job had been due,
and which were first attempts), and the runner of each settlement; nothing is written
then, so a claim and a settlement pay a count in memory and no statement. The listener's
"pulse" chore (chores.py) adds the counts to the table in one statement, and its last
ones when the worker stops; the dashboard draws them (web/chart.py).
"""

import bisect
import threading
from dataclasses import asdict, dataclass, field
from typing import Any

import psycopg
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from .job import Job
from .sql import pulse_queries as queries
from .store import now_ms

MINUTE = 60_000  # ms: the rollup's step
PULSE_EVERY = 5.0  # seconds between two flushes of a worker's counts: a killed worker loses at most these
PULSE_KEPT = 3 * 24 * 60 * MINUTE  # ms a minute's row is kept (3 days) before the reaper deletes it
# ms: the upper bounds of the buckets a claim's wait from due is counted in (one more bucket
# past the last); the chart's median and p95, and the metrics' histogram, read these buckets.
WAIT_BUCKETS = (10, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 30_000, 60_000, 300_000, 1_800_000)


def no_waits() -> list[int]:
    return [0] * (len(WAIT_BUCKETS) + 1)


@dataclass
class Tally:
    """One queue's counts in one minute, as job_pulse keeps them."""

    queued: int = 0  # first attempts claimed
    finished: int = 0  # successes settled
    retried: int = 0  # failed attempts to be tried again
    failed: int = 0  # failures for good
    waits: list[int] = field(default_factory=no_waits)  # claims by wait from due, per bucket of WAIT_BUCKETS

    def add(self, other: "Tally") -> None:
        """Adds `other`'s counts to these."""
        self.queued += other.queued
        self.finished += other.finished
        self.retried += other.retried
        self.failed += other.failed
        self.waits = [mine + theirs for mine, theirs in zip(self.waits, other.waits, strict=True)]


@dataclass
class Waits:
    """A queue's claims by wait since the worker started, never reset: the metrics' histogram."""

    buckets: list[int] = field(default_factory=no_waits)
    total: int = 0  # ms, the sum of every wait counted


def bucket_of(wait: int) -> int:
    """The index of the bucket of WAIT_BUCKETS that a wait of `wait` ms falls in (its bound included)."""
    return bisect.bisect_left(WAIT_BUCKETS, wait)


def settled_column(kind: str, final: bool) -> str | None:
    """Which count a settlement adds to, by its outcome (outcomes.Outcome); None: none (a cancel, a lost lease)."""
    if kind == "processed":
        return "finished"
    if final:
        return "failed"
    return "retried" if kind in ("rescheduled", "dropped") else None


class Pulse:
    """A worker's counts per (minute, queue) not yet added to job_pulse, and its waits since it started.

    Its work threads count into it, and the listener flushes it; one lock guards both.
    Minutes are the database's: a claim's by the moment the claim read (Job.claimed_at),
    a settlement's by this machine's clock moved by how far the database's was ahead of
    it at the last claim.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tallies: dict[tuple[int, str], Tally] = {}
        self._ahead = 0  # ms the database's clock was ahead of this machine's at the last claim
        self.waits: dict[str, Waits] = {}  # by queue; read it with `waited`

    def claimed(self, jobs: list[Job]) -> None:
        """Counts a claim's jobs: each one's wait from due to the claim, and the first attempts among them."""
        if not jobs:
            return
        here = now_ms()
        with self._lock:
            self._ahead = jobs[0].claimed_at - here
            for job in jobs:
                wait = max(0, job.claimed_at - job.due_at)
                bucket = bucket_of(wait)
                tally = self._tally(job.claimed_at, job.queue)
                tally.waits[bucket] += 1
                if job.attempt == 1:
                    tally.queued += 1
                waits = self.waits.setdefault(job.queue, Waits())
                waits.buckets[bucket] += 1
                waits.total += wait

    def settled(self, queue: str, kind: str, final: bool) -> None:
        """Counts a settlement of a job of `queue` whose outcome was `kind` (a field of runner.Counts)."""
        column = settled_column(kind, final)
        if column is None:
            return
        with self._lock:
            tally = self._tally(now_ms() + self._ahead, queue)
            setattr(tally, column, getattr(tally, column) + 1)

    def _tally(self, moment: int, queue: str) -> Tally:
        key = (moment - moment % MINUTE, queue)
        tally = self._tallies.get(key)
        if tally is None:
            tally = self._tallies[key] = Tally()
        return tally

    def flushed(self, db: psycopg.Connection[Any]) -> int:
        """Adds the counts not yet written to job_pulse, in one statement; answers how many rows it sent.

        Whatever stops the statement (a refusal, a lost connection, any exception) puts
        the counts back, added to those counted meanwhile, for the next flush.
        """
        with self._lock:
            tallies, self._tallies = self._tallies, {}
        if not tallies:
            return 0
        rows = [{"minute": minute, "queue": queue, **asdict(tally)} for (minute, queue), tally in tallies.items()]
        try:
            db.execute(queries["pulse_added"], {"rows": Jsonb(rows)})
        except BaseException:
            self._kept(tallies)
            raise
        return len(rows)

    def _kept(self, tallies: dict[tuple[int, str], Tally]) -> None:
        with self._lock:
            for key, tally in tallies.items():
                self._tallies.setdefault(key, Tally()).add(tally)

    def waited(self) -> dict[str, Waits]:
        """A copy of each queue's waits since the worker started, taken under the lock the claims count under."""
        with self._lock:
            return {queue: Waits(list(waits.buckets), waits.total) for queue, waits in self.waits.items()}

    def pending(self) -> bool:
        """Whether some counts wait to be written: the worker's stop then writes them (chores.py)."""
        with self._lock:
            return bool(self._tallies)


def pruned(db: psycopg.Connection[Any]) -> int:
    """Deletes the minutes older than PULSE_KEPT; answers how many rows went."""
    return db.execute(queries["pulse_pruned"], {"kept": PULSE_KEPT, "now": None}).rowcount


def read(db: psycopg.Connection[Any], since: int) -> list[tuple[int, str, Tally]]:
    """Every queue's minutes from `since` (ms) on: (minute, queue, Tally), by queue and minute."""
    with db.cursor(row_factory=dict_row) as cursor:
        rows = cursor.execute(queries["pulse_read"], {"since": since}).fetchall()
    return [(row.pop("minute"), row.pop("queue"), Tally(**row)) for row in rows]


def quantile(waits: list[int], share: float) -> float | None:
    """The wait (ms) below which `share` of the counted claims fell, estimated from their buckets; None if none.

    As Prometheus' histogram_quantile does: the rank is found in its bucket and placed
    by straight line between the bucket's bounds (0 below the first). A rank in the
    bucket past WAIT_BUCKETS answers the last bound: the wait was at least that.
    """
    total = sum(waits)
    if total == 0:
        return None
    rank = share * total
    below = 0
    for index, count in enumerate(waits):
        if count and below + count >= rank:
            if index == len(WAIT_BUCKETS):
                return float(WAIT_BUCKETS[-1])
            low = 0 if index == 0 else WAIT_BUCKETS[index - 1]
            return low + (WAIT_BUCKETS[index] - low) * (rank - below) / count
        below += count
    return float(WAIT_BUCKETS[-1])
