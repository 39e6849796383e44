"""Where a queue's claim starts reading jobs_ready: past the dead entries a held snapshot keeps.

A claimed job's row is updated, then deleted, and each step leaves an entry in the
claim's index for a row version that is gone. Vacuum removes them, and a scan marks
them dead as it passes, but neither may while any transaction elsewhere still holds
a snapshot older than the deletion: a session left open, a long report, a REPEATABLE
READ reader. Until then every claim walks them all from the front of the queue and
visits each one's row, in order, to find it gone: after five minutes at 500 jobs a
second, 300,000 entries and 100 ms a claim.

So a worker looks, once per poll (chores.py), for the first due job of each of its
queues with the walk itself (`first_due`, timed), and when that walk was slower than
SLOW_WALK its claims start there, less SLACK: `(priority, run_at, id) >= bound`, an
index condition that seeks straight past the dead entries. While walks are quick
there is no bound and the claim is exactly the plain one.

A bound is a guess made from one snapshot, so what it can miss is said here; each
miss is found by the next look, which walks from the front, within one poll interval,
and a look that moves a bound back wakes a work thread for what it found:
- a job whose transaction queued it more than SLACK before the look and committed
  after it (its run_at is the moment it was queued, behind the bound);
- a job of a more urgent priority than the bound's that becomes due after the look;
- a job whose lease ran out (its run_at is its lease's end, behind newer jobs).
Nothing is ever claimed twice or lost for it: the bound only narrows where a claim
looks, and every row it skips is still in the index for the next look.
"""

import threading
import time

from .sql import queries

SLOW_WALK = 0.002  # seconds: a look at the first due job slower than this bounds the claims that follow
SLACK = 1000  # ms a bound stands before the first due job, for transactions that commit a little late


class Frontiers:
    """The claim bound of each queue of one worker, set by its listener and read by its work threads."""

    def __init__(self):
        self._bounds: dict[str, tuple[int, int]] = {}  # queue -> (priority, run_at): its claims start there
        self._lock = threading.Lock()

    def bound(self, queue: str) -> tuple[int, int] | None:
        """Where claims of `queue` start, as (priority, run_at); None: at the front."""
        return self._bounds.get(queue)

    def looked(self, db, queues) -> bool:
        """Walks to the first due job of each queue, and bounds the claims of those whose walk was slow.

        True when a bound moved back or went: a job the claims passed over is due, and
        a thread should be woken for it now rather than at its next poll.
        """
        back = False
        for queue in queues:
            started = time.perf_counter()
            first = db.execute(queries["first_due"], {"queue": queue, "now": None}).fetchone()
            slow = time.perf_counter() - started > SLOW_WALK
            with self._lock:
                earlier = self._bounds.get(queue)
                if not slow:
                    self._bounds.pop(queue, None)
                elif first is not None:
                    self._bounds[queue] = (first[0], first[1] - SLACK)
                else:  # nothing due: new jobs come in behind the walk's moment, at the usual priority
                    self._bounds[queue] = (self._usual_priority(queue), database_now(db) - SLACK)
                now = self._bounds.get(queue)
            back = back or (earlier is not None and (now is None or now < earlier))
        return back

    def _usual_priority(self, queue: str) -> int:
        earlier = self._bounds.get(queue)
        return earlier[0] if earlier else 0


def database_now(db) -> int:
    """The database's moment, in ms since the epoch."""
    return db.execute(queries["now"], {"now": None}).fetchone()[0]
