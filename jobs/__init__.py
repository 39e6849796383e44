"""A Postgres job queue: a job is a row, and it outlives the process that queued it.

It is built in layers, each folder importing only those above it in this list (a test says so):
  core/       the ground: a claimed Job and its defaults, retry policies, cron
              expressions, the checks of a job's arguments and the redaction of
              secret ones.
  store/      the statements: each sends SQL on the caller's connection and never starts
              a thread (named in store/queries.sql, read by store/schema.py).
  runtime/    the worker's machinery: its threads, the running and settling of a job,
              the claimed rows and their owner, the listener's maintenance.
  cli/, web/  the command line (`python -m jobs`) and the dashboard (jobs.web.app).
This module is the face: the names an app uses, from all of them.

How a job travels, file by file:
  store/schema.py       `prepared` makes the tables, or takes the steps of schema.sql
                        they lack, without locking a current schema.
  store/enqueue.py      `later` takes the app's connection: psycopg's, async or not, or
                        the one under a SQLAlchemy session or Django's `connection`, and
                        writes the row on its transaction, which notifies on commit.
  core/arguments.py     `later` first checks the queue, name and arguments, writing
                        nothing if they could not survive the trip through the table.
  store/claims.py       `claimed` takes due rows under a lease, as Jobs (core/job.py);
                        the settling statements.
  runtime/maintenance.py a Worker's listener hears the notification and wakes a work
                        thread; it also promotes scheduled jobs and reaps, each chore
                        alone, and bounds where claims start (store/frontier.py).
  runtime/supervisor.py among the chores, the supervisor settles every row no thread
                        will: the holdings (holdings.py) own each claimed row until it
                        is settled; it starts the work threads, and lets go of and
                        replaces one past its job's timeout.
  runtime/watchdog.py   beside them, the heartbeat records the worker in job_workers and
                        beats its row (store/control.py), and does nothing else.
  runtime/worker.py     a Worker's work threads (work_thread.py) claim batches of due
                        jobs and run them; `worker` starts one, `beside` one beside a
                        server; `worked` (running.py) does a thread's step once, for a
                        caller's loop.
  runtime/connections.py the loop that keeps each of those threads' connections open,
                        and notices one gone silent (with watchdog.py); refusals.py
                        says why when the database refuses a statement.
  runtime/running.py    a job that touches the connection runs on a transaction of its
                        own (transaction.py), on which success deletes its row, or
                        failure keeps its reason and schedules a retry (its Policy,
                        core/job.py); successes that wrote nothing are deleted
                        together in one statement (settling.py).
  store/flows.py        on that same transaction, a chain queues its next step and a
                        batch counts down, the last job queueing its callbacks.
  store/schedules.py    the listener also queues the job of each due tick of a worker's
                        schedules (core/cron.py reads the expressions), once across all
                        workers.
  core/arguments.py     the arguments a caller named secret: hidden by every viewer, and
                        taken out of a failure's reason and traceback before they are kept.
  store/pulse.py        a Worker counts its claims, waits and settlements per queue and
                        minute in memory; a chore adds them to job_pulse every few seconds.
  store/shelf.py        a job that failed for good waits on the shelf to be read, retried
                        or discarded; `status` counts each queue's jobs.
  store/control.py      an operator pauses and resumes queues, and cancels jobs onto the
                        shelf; the worker hears of both.
  store/limits.py       a queue's rate, concurrency and jobs per key, decided in the claim
                        of its jobs, which takes turns across every worker.
  web/                  the dashboard: a WSGI app showing all of the above, with buttons.
  cli/main.py           the command line: `python -m jobs work | status | failed | ...`
                        (commands.py declares the other commands and holds those that
                        change the queue, reports.py those that print what it holds).

It needs psycopg 3 and the standard library only, so it can be copied into an app. A copy may
leave out web/, cli/, and store/'s limits, schedules and pulse (jobs/README.md, "Copying jobs
into your app"); the names of limits and schedules are then absent from this face.
"""

from .core.job import ATTEMPTS, LEASE, NO_RETRY, Job, JobCancelled, Policy, exponential, intervals, policy, polynomial
from .runtime.connections import SILENT_AFTER, keepalives
from .runtime.maintenance import POLL_INTERVAL
from .runtime.running import current_job, worked
from .runtime.settling import Counts
from .runtime.worker import Worker, beside, beside_asgi, worker
from .store.claims import now_ms
from .store.control import CANCELLED, Cancellation, cancelled, paused, paused_queues, resumed
from .store.enqueue import later, later_many
from .store.flows import batch, batch_status, cancel_batch, chain, pruned
from .store.schema import SchemaError, optional, prepared
from .store.schema import load as load_queries
from .store.shelf import PAGE, discarded, failed, listed, retried, status

if optional("limits"):  # None: a copy left store/limits.py out
    from .store.limits import Limit, limited, unlimited
if optional("schedules"):
    from .store.schedules import Schedule, every

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
__all__ = [name for name in __all__ if name in globals()]  # less what a copy left out (above)
