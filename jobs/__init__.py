"""A Postgres job queue: a job is a row, and it outlives the process that queued it.

How a job travels, file by file:
  schema.py  `prepared` makes the tables, or takes the steps of schema.sql they lack.
  store.py   `later` writes the row on the caller's transaction and notifies on commit;
             `claimed` takes due rows under a lease (queries.sql holds every statement).
  worker.py  a Worker's listener hears the notification and wakes a work thread,
             which claims a batch of due jobs; complaints.py says why when the
             database refuses it.
  runner.py  each job runs in a savepoint of a settlement transaction: success deletes
             the row, failure keeps its reason and schedules a retry (policy.py).
  flows.py   on that same transaction, a chain queues its next step and a batch counts
             down, the last job queueing its callbacks.
  shelf.py   a job that failed for good waits on the shelf to be read, retried or
             discarded; `status` counts each queue's jobs (`python -m jobs status`).

It needs psycopg 3 and the standard library only, so it can be copied into an app.
"""

from .flows import batch, batch_status, cancel_batch, chain, pruned
from .policy import NO_RETRY, Policy, exponential, intervals, policy, polynomial
from .runner import Counts, LeaseLost, current_job
from .schema import SchemaError, prepared
from .shelf import discarded, failed, retried, status
from .store import ATTEMPTS, LEASE, Job, later, later_many, listed, now_ms
from .worker import POLL_INTERVAL, Worker, beside, worked, worker

__all__ = [
    "ATTEMPTS", "LEASE", "NO_RETRY", "POLL_INTERVAL", "Counts", "Job", "LeaseLost", "Policy", "SchemaError",
    "Worker", "batch", "batch_status", "beside", "cancel_batch", "chain", "current_job", "discarded",
    "exponential", "failed", "intervals", "later", "later_many", "listed", "now_ms", "policy", "polynomial",
    "prepared", "pruned", "retried", "status", "worked", "worker",
]
