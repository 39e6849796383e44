"""Limits on a queue, decided in its claim: a rate (jobs started per window) and a concurrency (jobs in work).

A limit is a row of job_limits, set by `limited` and removed by `unlimited`. A worker
reads which of its queues have one every POLL_INTERVAL (`Limits.read`, a chore) and
claims their jobs with `claimed`, which takes the queue's row lock first, so that
claims of a limited queue are taken one after another across every worker.
"""

import functools
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql
from psycopg.cursor import BaseCursor
from psycopg.rows import RowMaker, class_row

from ..core.job import Job, job_row
from . import claims
from .control import queue_named
from .schema import read_once

queries = read_once(Path(__file__).with_name("queries.sql"))  # store/'s statements, by name

PER_KEY_MAX = 1000  # jobs of one key a limit per key may let be in work at once: each is a slot the claim looks through
CONCURRENCY_MAX = 2**31 - 1  # jobs a concurrency may let be in work at once: job_limits keeps it as an integer
RATE_MAX = 100_000  # jobs a rate may start in its window: the queue's row keeps each start's moment until it leaves
WINDOW_MAX = 366 * 86_400  # seconds a rate's window may last, a year: starts are kept that long

log = logging.getLogger("jobs")


@dataclass(frozen=True)
class Limit:
    """A queue's limit, as `limited` sets it and a worker reads it (what is used of it is in jobs.status)."""

    queue: str
    rate: int | None  # jobs a window of `per_ms` may start; None: no rate
    per_ms: int | None  # the rate's window, ms
    concurrency: int | None  # jobs in work at once at the most; None: any number
    per_key: int | None = None  # jobs of one concurrency key in work at once at the most; None: 1, as in any queue

    def said(self) -> str:
        """The limit in words: "14 a 1 s, 4 at once, 2 a key"."""
        parts = []
        if self.rate is not None and self.per_ms is not None:
            parts.append(f"{self.rate} a {self.per_ms / 1000:g} s")
        if self.concurrency is not None:
            parts.append(f"{self.concurrency} at once")
        if self.per_key is not None:
            parts.append(f"{self.per_key} a key")
        return ", ".join(parts)


def limited(
    db: psycopg.Connection[Any],
    queue: str,
    *,
    rate: tuple[int, float] | None = None,
    concurrency: int | None = None,
    per_key: int | None = None,
    now: int | None = None,
) -> Limit:
    """Limits `queue` to `rate` (jobs, seconds) started per window, `concurrency` jobs in work at once, and
    `per_key` jobs of one concurrency key in work at once (where any queue lets one).

    Written on db's current transaction, it holds from the next claim that begins after
    it commits, on every worker, with no restart. A start is a claim's commit: see
    "Limits" in the manual for what is exact. Setting it again replaces it.
    """
    queue_named(queue)
    per_ms = None if rate is None else window_ms(rate)
    if concurrency is not None and not within(concurrency, CONCURRENCY_MAX):
        raise ValueError(f"a concurrency is 1 to {CONCURRENCY_MAX} jobs at once, not {concurrency!r}")
    if per_key is not None and not within(per_key, PER_KEY_MAX):
        raise ValueError(f"a limit per key is 1 to {PER_KEY_MAX} jobs of a key at once, not {per_key!r}")
    if rate is None and concurrency is None and per_key is None:
        raise ValueError(
            f"limit {queue!r} by a rate, a concurrency, a number per key or several (to remove its limit: unlimited)"
        )
    limit = Limit(queue, rate and rate[0], per_ms, concurrency, per_key)
    params = {
        "queue": queue,
        "rate": limit.rate,
        "per_ms": per_ms,
        "concurrency": concurrency,
        "per_key": per_key,
        "now": now,
    }
    db.execute(queries["limit_set"], params)
    log.info("queue %s is limited to %s", queue, limit.said())
    return limit


def window_ms(rate: object) -> int:
    """The window of a rate (jobs, seconds) in ms, once its jobs and its seconds are found within their bounds."""
    count, seconds = rate if isinstance(rate, tuple) and len(rate) == 2 else (None, None)
    if not within(count, RATE_MAX) or not isinstance(seconds, int | float) or not 0 < seconds <= WINDOW_MAX:
        raise ValueError(
            f"a rate is (jobs, seconds) with 1 to {RATE_MAX} jobs in more than 0 s and {WINDOW_MAX} s "
            f"at the most, not {rate!r}"
        )
    return max(1, round(seconds * 1000))


def within(value: object, most: int) -> bool:
    """Whether `value` is a whole number from 1 to `most` (and not a bool, which Python counts as one)."""
    return isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= most


def unlimited(db: psycopg.Connection[Any], queue: str) -> bool:
    """Removes `queue`'s limit, from the next claim after the commit; True if it had one."""
    queue_named(queue)
    removed = db.execute(queries["limit_removed"], {"queue": queue}).fetchone() is not None
    if removed:
        log.info("queue %s is no longer limited", queue)
    return removed


@dataclass
class Claimed:
    """What a limited claim took, and when the rate's window has room again if it is full (seconds from now)."""

    jobs: list[Job]
    room_in: float | None = None


def claimed(
    db: psycopg.Connection[Any],
    queue: str,
    now: int | None = None,
    *,
    after: tuple[int, int] | None = None,
    known: Limit | None = None,
    hold: claims.Hold = claims.UNHELD,
) -> Claimed:
    """Claims one due job of `queue` within its limit, and commits; the arguments are claims.claimed's.

    One job a claim: each start is counted, so none is taken ahead of the room. A queue
    found with no limit (it was removed since the worker read it) is claimed by
    claims.claimed, at once. `known` is the queue's limit as the caller last read it:
    without a limit per key there, the claim takes one job of a key at a time, as if
    none were set, and skips the work of looking through a key's slots (None: unknown).
    """
    params = claims.claim_params(queue, now, after, hold)
    per_key = known is None or known.per_key is not None
    try:
        answer = claims.claim_answer(db, limited_statement(after is not None, per_key), params, answer_row)
    except psycopg.errors.UniqueViolation:
        return Claimed([])  # two jobs of one concurrency key side by side: nothing taken (see claims.claimed)
    if not answer:  # no limit now: it was lifted since the worker read it
        return Claimed(claims.claimed(db, queue, now, after=after, hold=replace(hold, claim=params["claim"])))
    jobs = [job for job, _ in answer if job is not None]
    room_ms = answer[0][1]
    return Claimed(jobs, room_ms / 1000 if not jobs and room_ms is not None and room_ms > 0 else None)


def answer_row(cursor: BaseCursor[Any, Any]) -> RowMaker[tuple[Job | None, int | None]]:
    """A row factory for claim_limited's answer: the Job taken (None in the row that says none was), and room_ms."""
    make = job_row(cursor)
    result = cursor.pgresult
    assert result is not None, "psycopg asks for a row maker once a statement has a result"
    names = [result.fname(n) for n in range(result.nfields)]
    taken, room = names.index(b"id"), names.index(b"room_ms")
    return lambda values: (None if values[taken] is None else make(values), values[room])


@functools.cache
def limited_statement(bounded: bool, per_key: bool) -> sql.Composed:
    """claim_limited with its BOUND written in, as claims.claim_statement writes the claim's, and with the
    statements of a limit per key (per_key_full, per_key_slot) or without."""
    return sql.SQL(queries["claim_limited"]).format(
        bound=sql.SQL(claims.BOUND if bounded else ""),
        full=sql.SQL(" " + queries["per_key_full"] if per_key else ""),
        slot=sql.SQL(queries["per_key_slot"] if per_key else "0"),
    )


class Limits:
    """The limited queues of a worker, as last read, and the ring that wakes a thread when a window has room."""

    def __init__(self, queues: list[str], ring: Callable[[], None]) -> None:
        self.queues, self._ring = queues, ring
        self.known: dict[str, Limit] = {}  # the worker's limited queues when last read
        self._lock = threading.Lock()
        self._ring_at: float | None = None  # time.monotonic() moment a ring is set for; None: none

    def read(self, db: psycopg.Connection[Any]) -> None:
        """Reads which of the worker's queues are limited now, and logs each limit that changed."""
        with db.cursor(row_factory=class_row(Limit)) as cursor:
            rows = cursor.execute(queries["limited_queues"], {"queues": self.queues}).fetchall()
        now = {limit.queue: limit for limit in rows}
        for queue in sorted(set(now) | set(self.known)):
            before, after = self.known.get(queue), now.get(queue)
            if before != after:
                said = f"limited to {after.said()}" if after else "no limit"
                was = before.said() if before else "no limit"
                log.info("queue %s: %s from now, for this worker's claims (was %s)", queue, said, was)
                if after is None:
                    self._ring()  # a queue whose limit held its jobs back may have many due
        self.known = now

    def claimed(
        self, db: psycopg.Connection[Any], queue: str, after: tuple[int, int] | None, hold: claims.Hold
    ) -> Claimed:
        """Claims within `queue`'s limit as last read (`claimed`), and rings once when a full window has room."""
        within = claimed(db, queue, after=after, known=self.known.get(queue), hold=hold)
        if within.room_in is not None:
            self.has_room_in(within.room_in)  # one thread is woken then, not every idle one
        return within

    def has_room_in(self, seconds: float) -> None:
        """Rings once when a full window has room again, unless a ring is set for sooner already."""
        at = time.monotonic() + seconds
        with self._lock:
            if self._ring_at is not None and time.monotonic() < self._ring_at <= at:
                return
            self._ring_at = at
        timer = threading.Timer(seconds, self._rung, args=(at,))
        timer.daemon = True
        timer.start()

    def _rung(self, at: float) -> None:
        with self._lock:
            if self._ring_at == at:
                self._ring_at = None
        self._ring()
