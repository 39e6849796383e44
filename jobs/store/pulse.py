"""The queue's pulse: what each worker counts per queue and minute, added to job_pulse every PULSE_EVERY seconds.

A work thread tells its worker's Pulse of each claim (how long each job had been due,
and which were first attempts), the keeper of each job it gave back unstarted (whose
claim is then taken back), and the runner of each settlement; nothing is written
then, so a claim and a settlement pay a count in memory and no statement. The listener's
"pulse" chore (maintenance.py) adds the counts to the table in one statement, and its last
ones when the worker stops; the dashboard draws them (web/chart.py).
"""

import bisect
import threading
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import psycopg
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from ..core.job import Job
from .claims import now_ms
from .schema import load

queries = load(Path(__file__).with_name("pulse.sql"))  # the statements of this module

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

    queued: int = 0  # first attempts claimed, less those given back unstarted
    finished: int = 0  # successes settled
    retried: int = 0  # failed attempts to be tried again
    failed: int = 0  # failures for good
    waits: list[int] = field(default_factory=no_waits)  # claims kept, by wait from due, per bucket of WAIT_BUCKETS

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


RETRIED = frozenset({"rescheduled", "dropped"})  # the outcomes (runner.Counts) of a failed attempt tried again


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
        """Counts a claim's jobs: each one's wait from due to the claim, and the first attempts among them.

        The jobs of one claim share its queue and its moment (one statement on one queue:
        store.claimed), so the claim's minute and queue are looked up once, not per job.
        """
        if not jobs:
            return
        here = now_ms()
        moment, queue = jobs[0].claimed_at, jobs[0].queue
        waited = [max(0, moment - job.due_at) for job in jobs]
        buckets = [bucket_of(wait) for wait in waited]
        first = sum(job.attempt == 1 for job in jobs)
        with self._lock:
            self._ahead = moment - here
            tally = self._tally(moment, queue)
            waits = self.waits.get(queue)
            if waits is None:
                waits = self.waits[queue] = Waits()
            for bucket in buckets:
                tally.waits[bucket] += 1
                waits.buckets[bucket] += 1
            tally.queued += first
            waits.total += sum(waited)

    def given_back(self, jobs: list[Job]) -> None:
        """Takes back what the claims of `jobs`, given back unstarted, counted in their minute: their waits, and
        the first attempts among them, as `release` takes back their attempts.

        Their next claim counts them again, as first attempts still, and their wait from
        the moment they were due. The metrics' histogram (`waits`) keeps their claims: a
        counter it reads never goes down.
        """
        with self._lock:
            for job in jobs:
                tally = self._tally(job.claimed_at, job.queue)
                tally.waits[bucket_of(max(0, job.claimed_at - job.due_at))] -= 1
                tally.queued -= job.attempt == 1

    def settled(self, outcomes: Iterable[tuple[str, str, bool]]) -> None:
        """Counts settlements, each (queue, kind, final): its job's queue, its outcome's kind (a field of
        runner.Counts) and whether it was a failure for good.

        A success counts as finished, a failure for good as failed, a failed attempt tried
        again as retried; a cancel or a lost lease counts nowhere. The quiet successes a
        runner deletes together are counted together, under one look at the clock and the lock.
        """
        moment = now_ms() + self._ahead
        with self._lock:
            tallies: dict[str, Tally] = {}
            for queue, kind, final in outcomes:
                tally = tallies.get(queue)
                if tally is None:
                    tally = tallies[queue] = self._tally(moment, queue)
                if kind == "processed":
                    tally.finished += 1
                elif final:
                    tally.failed += 1
                elif kind in RETRIED:
                    tally.retried += 1

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
        """Whether some counts wait to be written: the worker's stop then writes them (maintenance.py)."""
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
