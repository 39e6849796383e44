"""Running claimed jobs and settling them: the step between one claim and the next.

`performed` runs a claimed batch in order. Each performer runs inside a savepoint of
a settlement transaction; a success is deleted and a failure recorded on that same
transaction, which commits once the batch is done or COMMIT_AFTER has passed. So a
performer's own writes on `db` commit together with its job's settlement, exactly
once, and one commit serves many fast jobs (the README's "Why jobs share a transaction").
"""

import contextvars
import logging
import time
import traceback
from dataclasses import dataclass

from . import redaction, store
from .outcomes import LeaseLost, Outcome, committed, deleted_alone
from .pace import Pace
from .policies import DEFAULT, policy_of
from .settlement import Settlement

COMMIT_AFTER = 0.005  # seconds of work after which a settlement transaction commits

log = logging.getLogger("jobs")
current: contextvars.ContextVar[store.Job] = contextvars.ContextVar("current job")


@dataclass
class Counts:
    """What one worker process has done since it started."""

    processed: int = 0  # jobs that ran and succeeded
    rescheduled: int = 0  # failures that will be tried again
    failed: int = 0  # failures for good
    dropped: int = 0  # attempts that found no performer for the job's name
    lease_lost: int = 0  # settlements refused because another worker held the job
    timed_out: int = 0  # attempts that ran past their timeout (counted as rescheduled or failed too)
    cancelled: int = 0  # jobs an operator cancelled while the worker held them

    def add(self, kind: str) -> None:
        setattr(self, kind, getattr(self, kind) + 1)


def current_job() -> store.Job:
    """The job being performed, for a performer that wants its id, attempt, queue or `final`.

    Raises LookupError outside a performer.
    """
    return current.get()


def performed(db, jobs, performers, *, now=None, counts=None, stopping=lambda: False, pace=None, timeout=None,
              settled=None, backend=None) -> list[str]:
    """Runs claimed `jobs` in order on `db` and settles them; returns one outcome line each.

    Jobs not started when `stopping()` turns true go back to the queue untouched.
    `now` fixes the moment failures are scheduled from (for tests); else the database's clock.
    `pace` tells which jobs are quick enough to share a transaction (pace.py); a worker
    keeps one across its batches. `timeout` is the seconds a job may run when its
    policy names none (None: no limit); the worker enforces it (threads.py).
    `settled(jobs)` hears of each group once its transaction has ended. `backend`
    (backends.py) learns which server process runs each transaction, behind a pooler.
    """
    counts = counts if counts is not None else Counts()
    pace = pace if pace is not None else Pace()
    lines: list[str] = []
    waiting = list(jobs)
    autocommit = db.autocommit
    db.autocommit = True  # the settlement begins and commits its transactions itself
    try:
        while waiting:
            if stopping():
                store.released(db, waiting, now)
                break
            group_lines, group = settled_group(db, waiting, performers, now, counts, stopping, pace, timeout,
                                               backend)
            lines += group_lines
            if settled is not None:
                settled(group)
    finally:
        if not db.closed:
            db.autocommit = autocommit
    return lines


def settled_group(db, waiting, performers, now, counts, stopping, pace, timeout,
                  backend=None) -> tuple[list[str], list]:
    """Runs jobs off the front of `waiting` on one transaction, commits it, then counts and logs.

    Returns the outcome lines and the group's jobs.

    A job joins the group only while the group is younger than COMMIT_AFTER and the job
    is one `pace` trusts to be quick, so no job's writes wait on a slow neighbour's.

    If a success's row is no longer ours when it is deleted (its lease ran out and
    another worker claimed it), the whole transaction rolls back, so nothing this
    worker did for that group is kept beside what the other worker does. A group
    that wrote nothing has nothing to roll back: its deletions commit alone
    (outcomes.deleted_alone).
    """
    group: list[tuple[store.Job, Outcome]] = []
    settlement = Settlement(db, backend)
    started = time.monotonic()
    try:
        while waiting and not stopping() and (not group or joins(waiting[0], started, pace)):
            job = waiting.pop(0)
            began = time.monotonic()
            group.append((job, outcome_of(settlement, job, performers, now, timeout)))
            pace.ran(job.name, time.monotonic() - began)
        succeeded = [job for job, outcome in group if outcome.kind == "processed"]
        if settlement.begun or any(job.batch or job.flow for job, _ in group):
            committed(settlement, group, succeeded)
        else:
            group = deleted_alone(db, group, succeeded)
    except LeaseLost:
        settlement.rolled_back()
        counts.lease_lost += len(group)
        ids = [job.id for job, _ in group]
        log.warning("lease lost: another worker holds jobs among %s; their settlement rolled back", ids)
        return [f"lease lost {job.name}" for job, _ in group], [job for job, _ in group]
    except BaseException:
        settlement.rolled_back()
        raise
    for job, outcome in group:
        counts.add(outcome.kind)
        log.log(outcome.level, "job %s (%s on %s) %s", job.id, job.name, job.queue, outcome.message or outcome.line)
    return [outcome.line for _, outcome in group], [job for job, _ in group]


def joins(job, started: float, pace) -> bool:
    """Whether `job` may run on the transaction of a group begun at `started`."""
    return time.monotonic() - started < COMMIT_AFTER and pace.trusted(job.name)


def outcome_of(settlement, job, performers, now, timeout=None) -> Outcome:
    """Performs one job inside its savepoint and records a failure; says how it went.

    A job an operator cancelled while it was held (chores.py settled it on the shelf
    already) does not start, or if it ran, keeps none of its writes, however it ended.
    """
    if job.cancelling:
        return cancelled(job)
    db = settlement.db
    perform = performers.get(job.name)
    if perform is None:
        reason = f"no performer is named {job.name}"
        return recorded_failure(settlement, job, DEFAULT, LookupError(reason), reason, "", now, "dropped")
    policy = policy_of(perform)
    job.final = policy.is_last(job.attempt)
    limit = policy.timeout if policy.timeout is not None else timeout
    job.deadline = None if limit is None else time.monotonic() + limit
    token = current.set(job)
    touched = settlement.for_job()
    try:
        perform(touched, job.args)
        if touched.left_failed():
            raise RuntimeError("a statement of the job failed and its error was not raised")
        if job.cancelling:
            touched.undone()
            return cancelled(job)
        return Outcome("processed", f"ran {job.name}")
    except Exception as error:
        if db.broken or db.closed:
            raise  # the database is gone, not the job: its row returns when the lease runs out
        touched.undone()
        if job.cancelling:
            return cancelled(job)
        reason = str(error) or type(error).__name__
        return recorded_failure(settlement, job, policy, error, reason, traceback.format_exc(), now)
    finally:
        job.deadline = None  # it runs no more: no timeout can fall on it now
        current.reset(token)


def cancelled(job) -> Outcome:
    """The outcome of a job cancelled while held: nothing of it is kept, and it is on the shelf already."""
    return Outcome("cancelled", f"cancelled {job.name}", logging.INFO, "was cancelled: its writes are undone")


def recorded_failure(settlement, job, policy, error, reason, trace, now, kind=None) -> Outcome:
    """Keeps a failed attempt's reason on the row, and schedules the next attempt or ends the job."""
    settlement.begin()
    db = settlement.db
    secret = store.secret_of(db, job)  # none of their values is written or logged (redaction.py)
    reason, trace = redaction.redacted(reason, job.args, secret), redaction.redacted(trace, job.args, secret)
    wait = policy.wait_after(job.attempt, error)
    if wait is None:
        after, max_attempts = 0, job.attempt  # attempts == max_attempts: out of the claim's index
    else:
        after, max_attempts = round(wait * 1000), max(policy.attempts, job.attempt + 1)
    if not store.attempt_failed(db, job, reason, trace, after, max_attempts, now):
        return Outcome("lease_lost", f"lease lost {job.name}")
    if policy.on_error is not None:
        try:
            policy.on_error(job, error)
        except Exception:
            log.exception("on_error of job %s (%s on %s) raised", job.id, job.name, job.queue)
    line = f"failed {job.name} on attempt {job.attempt}: {reason}"
    if wait is None:
        return Outcome(kind or "failed", line, logging.ERROR, f"failed for good on attempt {job.attempt}: {reason}", True)
    return Outcome(kind or "rescheduled", line, logging.WARNING, f"failed on attempt {job.attempt}, again in {wait:g} s: {reason}")
