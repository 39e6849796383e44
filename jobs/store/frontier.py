"""Where a queue's claim starts reading jobs_ready: past the dead entries a held snapshot keeps.

A claimed job's row is updated, then deleted, and each step leaves an entry in the
claim's index for a row version that is gone. Vacuum removes them, and a scan marks
them dead as it passes, but neither may while any transaction elsewhere still holds
a snapshot older than the deletion: a session left open, a long report, a REPEATABLE
READ reader. Until then every claim walks them all from the front of the queue and
visits each one's row, in order, to find it gone: the longer the snapshot is held and
the busier the queue, the slower every claim.

So a worker looks, once per poll (maintenance.py), whether any transaction of this database
has held a snapshot (or an xid) for longer than OLD_SNAPSHOT, as pg_stat_activity's
backend_xmin, backend_xid and xact_start say (prepared transactions and replication
slots are counted too): dead entries outlive only such a snapshot. With none,
there is no bound and no walk, and the claim is exactly the plain one. With one, it
walks to the first due job of each of its queues (`first_due`), and when that walk was
slower than SLOW_WALK its claims start there, less SLACK: `(priority, run_at, id) >=
bound`, an index condition that seeks straight past the dead entries. The walk may
take LOOK_PATIENCE at most, so the look's cost is bounded however many entries the
snapshot keeps: one cut off looks again from the bound it had, which seeks past the
entries behind it, and moves the bound on to the first due job from there (cut off
again, it keeps the bound). Dead entries pile up gradually, so a look from the front
sets a bound while the snapshot is young, and the bound follows the queue afterwards. A drain
(stop(drain=True)) drops every bound: it ends when nothing is due, and a job behind a bound is due.

A bound is a guess made from one snapshot, so what it can miss is said here; each
miss is found by the next look that walks from the front, within one poll interval
(or, while looks run out of patience, once the snapshot goes), and a look that moves a
bound back wakes a work thread for what it found:
- a job whose transaction queued it more than SLACK before the look and committed
  after it (its run_at is the moment it was queued, behind the bound);
- a job of a more urgent priority than the bound's that becomes due after the look;
- a job whose lease ran out (its run_at is its lease's end, behind newer jobs).
Nothing is ever claimed twice or lost for it: the bound only narrows where a claim
looks, and every row it skips is still in the index for the next look.
"""

import logging
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from .claims import BOUND
from .schema import one, read_once

queries = read_once(Path(__file__).with_name("queries.sql"))  # store/'s statements, by name

OLD_SNAPSHOT = 1.0  # seconds: a snapshot held longer may keep dead entries worth seeking past
SLOW_WALK = 0.002  # seconds: a look at the first due job slower than this bounds the claims that follow
SLACK = 1000  # ms a bound stands before the first due job, for transactions that commit a little late
LOOK_PATIENCE = 0.05  # seconds a look's walk may take; one cut off keeps the bound it had

log = logging.getLogger("jobs")


class Frontiers:
    """The claim bound of each queue of one worker, set by its listener and read by its work threads."""

    def __init__(self) -> None:
        self._bounds: dict[str, tuple[int, int]] = {}  # queue -> (priority, run_at): its claims start there
        self._lock = threading.Lock()
        self._drained = False

    def bound(self, queue: str) -> tuple[int, int] | None:
        """Where claims of `queue` start, as (priority, run_at); None: at the front."""
        return None if self._drained else self._bounds.get(queue)

    def drained(self) -> None:
        """Drops every bound for good: the worker drains, and must see every due job."""
        self._drained = True

    def looked(self, db: psycopg.Connection[Any], queues: Iterable[str]) -> bool:
        """Walks to the first due job of each queue while an old snapshot is held, and bounds the claims of slow walks.

        True when a bound moved back or went: a job the claims passed over is due, and
        a thread should be woken for it now rather than at its next poll.
        """
        if self._drained or one(db.execute(queries["snapshot_held"]))[0] <= OLD_SNAPSHOT:
            with self._lock:
                had, self._bounds = bool(self._bounds), {}
            return had
        back = False
        for queue in queues:
            with self._lock:
                earlier = self._bounds.get(queue)
            now = self._walked(db, queue, earlier)
            with self._lock:
                if now is None:
                    self._bounds.pop(queue, None)
                else:
                    self._bounds[queue] = now
            back = back or (earlier is not None and (now is None or now < earlier))
        return back

    def _walked(
        self, db: psycopg.Connection[Any], queue: str, earlier: tuple[int, int] | None
    ) -> tuple[int, int] | None:
        """The bound of `queue` after a walk to its first due job from the front, or from `earlier` when that
        ran out of patience (`earlier` itself when both did)."""
        try:
            first, slow = patient_walk(db, queue, None)
        except psycopg.errors.QueryCanceled:
            if earlier is None:
                return None
            try:
                first, _ = patient_walk(db, queue, earlier)
            except psycopg.errors.QueryCanceled:
                return earlier
            slow = True  # the walk from the front took all its patience
        if not slow:
            return None
        if first is not None:
            return first[0], first[1] - SLACK
        # nothing due: new jobs come in behind the walk's moment, at the usual priority
        return (earlier[0] if earlier else 0), database_now(db) - SLACK


def patient_walk(
    db: psycopg.Connection[Any], queue: str, bound: tuple[int, int] | None
) -> tuple[tuple[int, int, int] | None, bool]:
    """The first due job of `queue` (from `bound` on, if given), and whether the walk took over SLOW_WALK;
    QueryCanceled when it took over LOOK_PATIENCE."""
    params: dict[str, Any] = {"queue": queue, "now": None}
    if bound is not None:
        params["after_priority"], params["after_run_at"] = bound
    statement = sql.SQL(queries["first_due"]).format(bound=sql.SQL(BOUND if bound is not None else ""))
    with db.transaction():
        db.execute(queries["look_patience"], {"timeout": f"{max(1, round(LOOK_PATIENCE * 1000))}ms"})
        started = time.perf_counter()
        first = db.execute(statement, params).fetchone()
        return first, time.perf_counter() - started > SLOW_WALK


def database_now(db: psycopg.Connection[Any]) -> int:
    """The database's moment, in ms since the epoch."""
    now: int = one(db.execute(queries["now"], {"now": None}))[0]
    return now
