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

from . import flows, store
from .policy import DEFAULT, policy_of
from .settlement import Settlement

COMMIT_AFTER = 0.005  # seconds of work after which a settlement transaction commits

log = logging.getLogger("jobs")
current: contextvars.ContextVar[store.Job] = contextvars.ContextVar("current job")


class LeaseLost(Exception):
    """Another worker took a job over before this one settled it."""


@dataclass
class Counts:
    """What one worker process has done since it started."""

    processed: int = 0  # jobs that ran and succeeded
    retried: int = 0  # failures that will be tried again
    failed: int = 0  # failures for good
    dropped: int = 0  # attempts that found no performer for the job's name
    lease_lost: int = 0  # settlements refused because another worker held the job

    def add(self, kind: str) -> None:
        setattr(self, kind, getattr(self, kind) + 1)


@dataclass
class Outcome:
    """How one attempt went: its counter, its line, and its log record."""

    kind: str  # a field of Counts
    line: str  # what `worked` answers, as in the seed: "ran greet"
    level: int = logging.INFO
    message: str = ""
    final: bool = False  # a failure for good


def current_job() -> store.Job:
    """The job being performed, for a performer that wants its id, attempt, queue or `final`.

    Raises LookupError outside a performer.
    """
    return current.get()


def performed(db, jobs, performers, *, now=None, counts=None, stopping=lambda: False, settled=None) -> list[str]:
    """Runs claimed `jobs` in order on `db` and settles them; returns one outcome line each.

    Jobs not started when `stopping()` turns true go back to the queue untouched.
    `settled(jobs)`, when given, hears of each group once its transaction has ended:
    those rows are no longer this worker's to extend (the heartbeat drops them).
    `now` fixes the moment failures are scheduled from (for tests); else the clock.
    """
    counts = counts if counts is not None else Counts()
    lines: list[str] = []
    waiting = list(jobs)
    autocommit = db.autocommit
    db.autocommit = True  # the settlement begins and commits its transactions itself
    try:
        while waiting:
            if stopping():
                store.released(db, waiting, store.now_ms() if now is None else now)
                break
            before = len(waiting)
            lines += settled_group(db, waiting, performers, now, counts, stopping)
            if settled is not None:
                settled(jobs[len(jobs) - before:len(jobs) - len(waiting)])
    finally:
        if not db.closed:
            db.autocommit = autocommit
    return lines


def settled_group(db, waiting, performers, now, counts, stopping) -> list[str]:
    """Runs jobs off the front of `waiting` on one transaction, commits it, then counts and logs.

    If a success's row is no longer ours when it is deleted (its lease ran out and
    another worker claimed it), the whole transaction rolls back, so nothing this
    worker did for that group is kept beside what the other worker does.
    """
    group: list[tuple[store.Job, Outcome]] = []
    settlement = Settlement(db)
    started = time.monotonic()
    try:
        while waiting and not stopping() and (not group or time.monotonic() - started < COMMIT_AFTER):
            job = waiting.pop(0)
            group.append((job, ran(settlement, job, performers, now)))
        settlement.begin()
        succeeded = [job for job, outcome in group if outcome.kind == "processed"]
        kept = store.finished(db, succeeded)
        lost = [job.id for job in succeeded if job.id not in kept]
        if lost or any(outcome.kind == "lease_lost" for _, outcome in group):
            raise LeaseLost(lost)
        moved_flows_on(db, group)
        settlement.committed()
    except LeaseLost:
        settlement.rolled_back()
        counts.lease_lost += len(group)
        ids = [job.id for job, _ in group]
        log.warning("lease lost: another worker holds jobs among %s; their settlement rolled back", ids)
        return [f"lease lost {job.name}" for job, _ in group]
    except BaseException:
        settlement.rolled_back()
        raise
    for job, outcome in group:
        counts.add(outcome.kind)
        log.log(outcome.level, "job %s (%s on %s) %s", job.id, job.name, job.queue, outcome.message or outcome.line)
    return [outcome.line for _, outcome in group]


def moved_flows_on(db, group) -> None:
    """Lets chains and batches react to the group's settlements, on the same transaction."""
    done = [job for job, outcome in group if outcome.kind == "processed" and (job.batch or job.flow)]
    ended = [job for job, outcome in group if outcome.final and (job.batch or job.flow)]
    if done or ended:
        flows.settled(db, done, ended)


def ran(settlement, job, performers, now) -> Outcome:
    """Performs one job inside its savepoint and records a failure; says how it went."""
    db = settlement.db
    perform = performers.get(job.name)
    if perform is None:
        reason = f"no performer is named {job.name}"
        return recorded_failure(settlement, job, DEFAULT, LookupError(reason), reason, "", now, "dropped")
    policy = policy_of(perform)
    job.final = policy.is_last(job.attempt)
    token = current.set(job)
    touched = settlement.for_job()
    try:
        perform(touched, job.args)
        if touched.left_failed():
            raise RuntimeError("a statement of the job failed and its error was not raised")
        return Outcome("processed", f"ran {job.name}")
    except Exception as error:
        if db.broken or db.closed:
            raise  # the database is gone, not the job: its row returns when the lease runs out
        touched.undone()
        reason = str(error) or type(error).__name__
        return recorded_failure(settlement, job, policy, error, reason, traceback.format_exc(), now)
    finally:
        current.reset(token)


def recorded_failure(settlement, job, policy, error, reason, trace, now, kind=None) -> Outcome:
    """Keeps a failed attempt's reason on the row, and schedules the next attempt or ends the job."""
    settlement.begin()
    db = settlement.db
    wait = policy.wait_after(job.attempt, error)
    moment = store.now_ms() if now is None else now
    if wait is None:
        run_at, max_attempts = moment, job.attempt  # attempts == max_attempts: out of the claim's index
    else:
        run_at, max_attempts = moment + round(wait * 1000), max(policy.attempts, job.attempt + 1)
    if not store.failed(db, job, reason, trace, run_at, max_attempts):
        return Outcome("lease_lost", f"lease lost {job.name}")
    if policy.on_error is not None:
        try:
            policy.on_error(job, error)
        except Exception:
            log.exception("on_error of job %s (%s on %s) raised", job.id, job.name, job.queue)
    line = f"failed {job.name} on attempt {job.attempt}: {reason}"
    if wait is None:
        return Outcome(kind or "failed", line, logging.ERROR, f"failed for good on attempt {job.attempt}: {reason}", True)
    return Outcome(kind or "retried", line, logging.WARNING, f"failed on attempt {job.attempt}, again in {wait:g} s: {reason}")
