"""One job, claimed, run and settled in the caller's own loop: no threads, no heartbeat.

`worked` is what a Worker's thread does in one pass (worker.py), for a script, a test
or a loop of the caller's that wants no worker: it claims at most one job and returns
a line that says what became of it.
"""

from collections.abc import Mapping
from typing import Any

import psycopg

from ..core.job import Performer
from ..store import claims, limits
from .running import performed

UNWATCHED_LEASE = 300.0  # seconds `worked` leases a job for: no worker beats to keep it


def worked(
    db: psycopg.Connection[Any],
    queue: str,
    performers: Mapping[str, Performer],
    now: int | None = None,
    *,
    lease: float = UNWATCHED_LEASE,
) -> str | None:
    """Claims one job of `queue` due at `now` (ms; the database's clock when None), runs it and settles it.

    Answers what happened, as one line: "ran NAME", or "failed NAME on attempt N:
    REASON"; None when nothing was due. `db` must not be inside a transaction: the
    claim commits before the job runs, and the settlement commits after. No heartbeat
    runs here, so the lease is UNWATCHED_LEASE unless `lease` says otherwise.
    """
    if db.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
        raise ValueError("worked() commits its claim: call it on a connection outside a transaction")
    with db.transaction():
        claims.promoted(db, now)
    # A limited queue's claim (limits.py) within its limit; any other's, after one read of job_limits.
    claimed = limits.claimed(db, queue, now, lease=lease, budgets=claims.budgets_of(performers)).jobs
    if not claimed:
        return None
    return performed(db, claimed, performers, now=now)[0]
