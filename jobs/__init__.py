"""A Postgres job queue: a job is a row, and it outlives the process that queued it.

How a job travels, file by file (the modules marked SQL send statements, each one
named in queries.sql and read by sql.py; the others never touch SQL themselves):
  schema.py       SQL: `prepared` makes the tables, or takes the steps of schema.sql
                  they lack, without locking a current schema.
  bridges.py      `later` takes the app's connection: psycopg's, async or not, or the
                  one under a SQLAlchemy session or Django's `connection`.
  arguments.py    `later` first checks the queue, name and arguments, writing nothing
                  if they could not survive the trip through the table.
  store.py        SQL: `later` writes the row on the caller's transaction and notifies
                  on commit; `claimed` takes due rows under a lease, as Jobs (job.py);
                  settling statements.
  listener.py     a Worker's listener hears the notification and wakes a work thread;
                  it also promotes scheduled jobs and reaps, each chore alone
                  (chores.py), and bounds where claims start (frontier.py, SQL).
  keeper.py       among the chores, the keeper settles every row no thread will: the
                  ledger (ledger.py) owns each claimed row until it is settled, and
                  the keeper lets go of threads past their timeout.
  heartbeat.py    beside it, the heartbeat records the worker in job_workers and beats
                  its row (roster.py, SQL), and does nothing else.
  workers.py      a Worker's work threads (threads.py) claim batches of due jobs and
                  hand them to the runner; starting.py starts one, or one `beside` a
                  server; `worked` (once.py) does a thread's step once, for a caller's loop.
  connections.py  the loop that keeps each of those threads' connections open, and
                  notices one gone silent (with watchdog.py); complaints.py says
                  why when the database refuses a statement.
  runner.py       a job that touches the connection runs on a transaction of its own
                  (settlement.py), on which success deletes its row, or failure keeps
                  its reason and schedules a retry (policies.py); successes that wrote
                  nothing are deleted together in one statement (outcomes.py).
  flows.py        SQL: on that same transaction, a chain queues its next step and a
                  batch counts down, the last job queueing its callbacks.
  schedules.py    SQL: the listener also queues the job of each due tick of a worker's
                  schedules (cron.py reads the expressions), once across all workers.
  redaction.py    the arguments a caller named secret: hidden by every viewer, and
                  taken out of a failure's reason and traceback before they are kept.
  pulse.py        SQL: a Worker counts its claims, waits and settlements per queue and
                  minute in memory; a chore adds them to job_pulse every few seconds.
  shelf.py        SQL: a job that failed for good waits on the shelf to be read,
                  retried or discarded; `status` counts each queue's jobs.
  control.py      SQL: an operator pauses and resumes queues, and cancels jobs onto the
                  shelf; the worker hears of both.
  limits.py       SQL: a queue's rate, concurrency and jobs per key, decided in the
                  claim of its jobs, which takes turns across every worker.
  web/            the dashboard: a WSGI app showing all of the above, with buttons
                  (jobs.web.app).
  __main__.py     the command line: `python -m jobs work | status | failed | ...`
                  (commands.py holds the commands that look and act on the table,
                  limit_commands.py those that set and lift limits).

It needs psycopg 3 and the standard library only, so it can be copied into an app.
"""

from .bridges import later, later_many
from .connections import SILENT_AFTER, keepalives
from .control import CANCELLED, Cancellation, cancelled, paused, paused_queues, resumed
from .flows import batch, batch_status, cancel_batch, chain, pruned
from .job import Job, JobCancelled
from .limits import Limit, limited, unlimited
from .listener import POLL_INTERVAL
from .once import worked
from .policies import NO_RETRY, Policy, exponential, intervals, policy, polynomial
from .runner import Counts, current_job
from .schedules import Schedule, every
from .schema import SchemaError, prepared
from .shelf import PAGE, discarded, failed, retried, status
from .sql import load as load_queries
from .starting import beside, beside_asgi, worker
from .store import ATTEMPTS, LEASE, listed, now_ms
from .workers import Worker

__all__ = [
    "ATTEMPTS",
    "CANCELLED",
    "LEASE",
    "NO_RETRY",
    "PAGE",
    "POLL_INTERVAL",
    "SILENT_AFTER",
    "Cancellation",
    "Counts",
    "Job",
    "JobCancelled",
    "Limit",
    "Policy",
    "Schedule",
    "SchemaError",
    "Worker",
    "batch",
    "batch_status",
    "beside",
    "beside_asgi",
    "cancel_batch",
    "cancelled",
    "chain",
    "current_job",
    "discarded",
    "every",
    "exponential",
    "failed",
    "intervals",
    "keepalives",
    "later",
    "later_many",
    "limited",
    "listed",
    "load_queries",
    "now_ms",
    "paused",
    "paused_queues",
    "policy",
    "polynomial",
    "prepared",
    "pruned",
    "resumed",
    "retried",
    "status",
    "unlimited",
    "worked",
    "worker",
]
