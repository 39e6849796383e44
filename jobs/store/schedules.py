"""Schedules: jobs the code declares to run on a cron expression or every so often.

`every(...)` declares a Schedule; a worker handed schedules calls `fired` from its
listener once per poll interval. Which tick is due is read from the database's clock,
and the UPDATE of job_schedules that moves the schedule's last tick on runs in the
transaction that queues the tick's job: however many workers hold a schedule, each
tick queues exactly one job, with no leader and nothing kept in memory (schedules.sql).
"""

import hashlib
import json
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, tzinfo
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import psycopg
from psycopg.rows import dict_row

from ..core.arguments import encoded
from ..core.cron import Cron, latest_at, next_after, parsed
from . import enqueue
from .schema import load, one

queries = load(Path(__file__).with_name("schedules.sql"))  # the statements of this module

MISSED = ("one", "skip", "all")  # what a schedule queues for ticks missed while no worker held it
MISSED_ALL_MAX = 100  # jobs missed="all" queues at most at once: one per tick, the latest ticks
ON_TIME = 60.0  # seconds after its moment a tick may fire and not count as missed
SEEN_EVERY = 60.0  # seconds between two notes in job_schedules that a worker still holds a schedule
EVERY_MIN = 1.0  # seconds: the shortest `every`, as workers look once per POLL_INTERVAL (1 s)
PRIORITY = (-32768, 32767)  # the priorities the jobs table's smallint column holds
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)  # `every` ticks fall on whole intervals since it
TINY = timedelta(microseconds=1)

log = logging.getLogger("jobs")


@dataclass(frozen=True)
class Schedule:
    """A job to queue on every tick of a cron expression, or every `interval`; made by `every`."""

    key: str  # names the schedule in job_schedules: keep it when the expression changes
    queue: str
    name: str
    args: dict[str, Any] = field(hash=False)
    cron: Cron | None  # one of cron and interval is set
    interval: timedelta | None
    missed: str  # "one", "skip" or "all" (see MISSED)
    zone: tzinfo  # the cron expression's wall times are in it
    priority: int = 0

    @property
    def definition(self) -> str:
        """When it fires, as people read it: "17 3 * * * (Europe/Berlin)" or "every 30 s"."""
        if self.cron:
            return f"{self.cron.expression} ({self.zone})"
        assert self.interval is not None, "one of cron and interval is set"
        return f"every {self.interval.total_seconds():g} s"

    @property
    def fingerprint(self) -> str:
        """A digest of everything that defines the schedule, to tell one version from another."""
        parts = [self.definition, self.queue, self.name, self.args, self.missed, self.priority]
        return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:16]

    def latest(self, moment: datetime) -> datetime | None:
        """The last tick at or before `moment`, in UTC."""
        if self.interval:
            return EPOCH + (moment - EPOCH) // self.interval * self.interval
        assert self.cron is not None, "one of cron and interval is set"
        return latest_at(self.cron, moment, self.zone)

    def following(self, moment: datetime) -> datetime:
        """The first tick after `moment`, in UTC."""
        if self.interval:
            return EPOCH + ((moment - EPOCH) // self.interval + 1) * self.interval
        assert self.cron is not None, "one of cron and interval is set"
        return next_after(self.cron, moment, self.zone)

    def earlier_than(self, tick: datetime, since: datetime) -> bool:
        """Whether a tick came before `tick` and after `since`."""
        earlier = self.latest(tick - TINY)
        return earlier is not None and earlier > since

    def due(self, since: datetime, now: datetime) -> tuple[list[datetime], datetime] | None:
        """The ticks after `since` to queue a job for at `now`, and the last due; None when none is due.

        The last tick due fires while it is on time (ON_TIME) or under missed="one";
        missed="all" fires every tick due, the latest MISSED_ALL_MAX of them.
        """
        last = self.latest(now)
        if last is None or last <= since:
            return None
        if self.missed == "all":
            ticks = [last]
            while len(ticks) < MISSED_ALL_MAX and self.earlier_than(ticks[-1], since):
                earlier = self.latest(ticks[-1] - TINY)
                assert earlier is not None, "earlier_than found it"
                ticks.append(earlier)
            return ticks[::-1], last
        on_time = now - last <= timedelta(seconds=ON_TIME)
        return ([last] if on_time or self.missed == "one" else []), last


def every(
    key: str,
    *,
    cron: str | None = None,
    every: timedelta | float | None = None,
    queue: str,
    name: str,
    args: dict[str, Any] | None = None,
    missed: str = "one",
    tz: str | tzinfo | None = None,
    priority: int = 0,
) -> Schedule:
    """A schedule that queues job `name` with `args` on `queue` at each tick; hand it to a worker.

    cron: a five-field expression or an alias such as "@daily" (cron.py), in UTC
    unless `tz` (a zoneinfo name or ZoneInfo) says otherwise. every: a timedelta or
    seconds (EVERY_MIN or more): ticks fall on whole intervals since the epoch, so
    every worker agrees on them. missed: after downtime, "one" job for the missed
    ticks, "skip" them, or "all" (one per tick, MISSED_ALL_MAX at most). Refuses a bad
    definition with a ValueError or TypeError naming the schedule.
    """
    if not isinstance(key, str) or not key.strip():
        raise ValueError(f"a schedule needs a key: got {key!r}")
    if (cron is None) == (every is None):
        raise ValueError(f"schedule {key!r}: give either cron= or every=, not {'both' if cron else 'neither'}")
    if missed not in MISSED:
        raise ValueError(f"schedule {key!r}: missed= is one of {', '.join(MISSED)}, not {missed!r}")
    if isinstance(priority, bool) or not isinstance(priority, int) or not PRIORITY[0] <= priority <= PRIORITY[1]:
        raise ValueError(f"schedule {key!r}: priority= is a whole number from {PRIORITY[0]} to {PRIORITY[1]}")
    try:
        text = encoded(queue, name, {} if args is None else args)
    except (TypeError, ValueError) as error:
        raise type(error)(f"schedule {key!r}: {error}") from None
    interval = None if every is None else interval_of(key, every)
    if interval and tz is not None:
        raise ValueError(f"schedule {key!r}: tz= is for cron expressions; every= counts time, not wall clocks")
    try:
        expression = None if cron is None else parsed(cron)
    except (TypeError, ValueError) as error:
        raise type(error)(f"schedule {key!r}: {error}") from None
    return Schedule(key, queue, name, json.loads(text), expression, interval, missed, zone_of(key, tz), priority)


def interval_of(key: str, every: timedelta | float) -> timedelta:
    """`every` (a timedelta or seconds) as a timedelta of at least EVERY_MIN."""
    if isinstance(every, bool) or not isinstance(every, timedelta | int | float):
        raise TypeError(f"schedule {key!r}: every= is a timedelta or seconds, not {type(every).__name__}")
    interval = every if isinstance(every, timedelta) else timedelta(seconds=every)
    if interval < timedelta(seconds=EVERY_MIN):
        shortest = f"{EVERY_MIN:g} s or more, not {interval.total_seconds():g} s"
        raise ValueError(f"schedule {key!r}: every= must be {shortest}")
    return interval


def zone_of(key: str, tz: str | tzinfo | None) -> tzinfo:
    """The tzinfo `tz` names: UTC for None, a ZoneInfo for a name."""
    if tz is None:
        return UTC
    if isinstance(tz, str):
        try:
            return ZoneInfo(tz)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"schedule {key!r}: unknown time zone {tz!r}") from None
    return tz


def held(schedules: Iterable[Schedule] | None) -> tuple[Schedule, ...]:
    """The schedules a worker is handed, checked: Schedules with distinct keys."""
    schedules = tuple(schedules or ())
    keys = [schedule.key for schedule in schedules if isinstance(schedule, Schedule)]
    if len(keys) < len(schedules):
        raise TypeError("a worker's schedules are made by jobs.every(...)")
    for key in keys:
        if keys.count(key) > 1:
            raise ValueError(f"two schedules share the key {key!r}")
    return schedules


def fired(db: psycopg.Connection[Any], schedules: Sequence[Schedule]) -> int:
    """Queues the job of each due tick of `schedules`, once across all workers; returns how many it queued.

    The worker's listener calls it once per poll interval on its autocommit connection.
    """
    if not schedules:
        return 0
    by_key = {schedule.key: schedule for schedule in schedules}
    cursor = db.cursor(row_factory=dict_row)
    queued = 0
    for row in cursor.execute(queries["schedules_read"], {"keys": list(by_key)}).fetchall():
        schedule = by_key[row["key"]]
        try:
            known = row["created_at"] is not None and row["fingerprint"] == schedule.fingerprint
            if not known or row["now"] - row["seen_at"] > timedelta(seconds=SEEN_EVERY):  # new, changed or unseen
                seen = {"key": schedule.key, "fingerprint": schedule.fingerprint, "definition": schedule.definition}
                row = one(cursor.execute(queries["schedule_seen"], seen))
            queued += tick_fired(db, schedule, row)
        except Exception:
            if db.closed or db.broken:
                raise  # the connection is gone: the listener reconnects
            # Don't let one broken schedule (a zone that fails, say) stop the others, or the
            # listener's heartbeat that runs after this call.
            log.exception("schedule %s could not fire; the other schedules carry on", schedule.key)
    return queued


def tick_fired(db: psycopg.Connection[Any], schedule: Schedule, row: dict[str, Any]) -> int:
    """Queues the jobs of the schedule's due ticks, if this worker is the one to; returns how many."""
    since = row["last_tick"] or row["created_at"]
    due = schedule.due(since, row["now"])
    if due is None:
        return 0
    ticks, last = due
    params = {"key": schedule.key, "first": ticks[0] if ticks else last, "last": last}
    with db.transaction():
        if db.execute(queries["schedule_fired"], params).rowcount == 0:
            return 0  # another worker fired this tick first
        for tick in ticks:
            enqueue.later(db, schedule.queue, schedule.name, schedule.args, at=ms(tick), priority=schedule.priority)
    if row["now"] - last > timedelta(seconds=ON_TIME) or schedule.earlier_than(last, since):
        told = (schedule.key, since, last, schedule.missed, len(ticks))
        log.info("schedule %s missed ticks between %s and %s (missed=%s): queued %d job(s)", *told)
    return len(ticks)


def ms(moment: datetime) -> int:
    """A moment as integer milliseconds since the epoch, as the jobs table holds them."""
    return (moment - EPOCH) // timedelta(milliseconds=1)


def recorded(db: psycopg.Connection[Any], schedules: Iterable[Schedule] | None = None) -> list[dict[str, Any]]:
    """Each schedule in job_schedules (and each of `schedules` not yet there), for the command line and dashboard.

    Each dict holds key, definition, last_tick, seen_at, and, for the schedules given,
    next_tick (None for a recorded schedule the code no longer holds).
    """
    cursor = db.cursor(row_factory=dict_row)
    rows = {row["key"]: row for row in cursor.execute(queries["schedules_recorded"])}
    now = one(cursor.execute(queries["database_now"]))["now"]
    for schedule in schedules or ():
        row = rows.setdefault(schedule.key, {"key": schedule.key, "last_tick": None, "seen_at": None})
        row.update(definition=schedule.definition, next_tick=schedule.following(now))
    return [rows[key] for key in sorted(rows)]
