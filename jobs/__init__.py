"""A Postgres job queue: a job is a row, and it outlives the process that queued it.

How a job travels, file by file:
  store.py   `later` writes the row on the caller's transaction and notifies on commit;
             `claimed` takes due rows under a lease (queries.sql holds every statement).
  worker.py  a Worker's listener hears the notification and wakes a work thread,
             which claims a batch of due jobs.
  runner.py  each job runs in a savepoint of a settlement transaction: success deletes
             the row, failure keeps its reason and schedules a retry (policy.py).
  flows.py   on that same transaction, a chain queues its next step and a batch counts
             down, the last job queueing its callbacks.
  shelf.py   a job that failed for good waits on the shelf to be read, retried or
             discarded; `status` counts each queue's jobs (`python -m jobs status`).
  control.py an operator pauses and resumes queues, and cancels jobs onto the shelf.
  web/       the dashboard: a WSGI app showing all of the above, with buttons (jobs.web.app).

It needs psycopg 3 and the standard library only, so it can be copied into an app.
"""

from .control import CANCELLED, Cancellation, cancelled, paused, paused_queues, resumed
from .flows import batch, batch_status, cancel_batch, chain, pruned
from .policy import NO_RETRY, Policy, exponential, intervals, policy, polynomial
from .runner import Counts, LeaseLost, current_job
from .shelf import PAGE, discarded, failed, retried, status
from .store import ATTEMPTS, LEASE, Job, later, later_many, listed, now_ms, prepared
from .worker import POLL_INTERVAL, Worker, beside, worked, worker

__all__ = [
    "ATTEMPTS", "CANCELLED", "LEASE", "NO_RETRY", "PAGE", "POLL_INTERVAL", "Cancellation", "Counts", "Job",
    "LeaseLost", "Policy", "Worker", "batch", "batch_status", "beside", "cancel_batch", "cancelled", "chain",
    "current_job", "discarded", "exponential", "failed", "intervals", "later", "later_many", "listed", "now_ms",
    "paused", "paused_queues", "policy", "polynomial", "prepared", "pruned", "resumed", "retried", "status",
    "worked", "worker",
]
