"""What came of each job, and the statements that settle it: a success, a failure, a cancel or a lost lease.

A success that wrote is deleted on its own transaction, which then commits; successes
that never touched the connection are deleted together (`quiet_settled`); a failure is
recorded with its reason. Every settlement is fenced by the claim's token and by the
cancel mark: a row no longer ours, or cancelled meanwhile, goes the way a cancelled job
goes (`cancelled_or_lost`). The reaper fails here the jobs whose worker died on their last attempt.
"""

import contextlib
import functools
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import psycopg

from ..core import arguments as redaction  # the secret arguments' part of it
from ..core.job import Job, Policy
from ..store import claims, control, flows
from .transaction import JobTransaction

if TYPE_CHECKING:  # a copy may leave store/pulse.py out
    from ..store.pulse import Pulse

NAMES_KEPT = 256  # performers' names whose success outcome is kept made (`success`)

log = logging.getLogger("jobs")


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
    given_back: int = 0  # jobs it held that went back to the queue unrun, or due again after it was cut off

    def add(self, kind: str) -> None:
        setattr(self, kind, getattr(self, kind) + 1)

    def said(self) -> str:
        """The counts an operator looks for when a worker stops, as a line of the log."""
        return (
            f"{self.processed} job(s) done, {self.failed} failed for good, {self.rescheduled} to be tried again, "
            f"{self.given_back} given back to the queue"
        )


@dataclass(frozen=True)
class Outcome:
    """How one attempt went: its counter, its line, and its log record."""

    kind: str  # a field of Counts
    line: str  # what `worked` answers, as in the seed: "ran greet"
    level: int = logging.INFO
    message: str = ""
    final: bool = False  # a failure for good


@dataclass(frozen=True)
class Tally:
    """What a worker counts of the jobs it settles: in all (Counts), and per queue and minute (Pulse, if any)."""

    counts: Counts
    pulse: "Pulse | None" = None

    def add(self, settled: list[tuple[Job, Outcome]]) -> None:
        """Counts the outcomes of settled jobs, and logs each."""
        for job, outcome in settled:
            self.counts.add(outcome.kind)
            log.log(outcome.level, "job %s (%s on %s) %s", job.id, job.name, job.queue, outcome.message or outcome.line)
        if self.pulse is not None:
            self.pulse.settled([(job.queue, outcome.kind, outcome.final) for job, outcome in settled])


def success(job: Job) -> Outcome:
    """The outcome of a success: one per performer's name, as a drain has thousands of each."""
    return success_of(job.name)


@functools.lru_cache(maxsize=NAMES_KEPT)
def success_of(name: str) -> Outcome:
    return Outcome("processed", f"ran {name}")


def cancellation(job: Job) -> Outcome:
    """The outcome of a job cancelled while held: nothing of it is kept, and it is on the shelf."""
    return Outcome("cancelled", f"cancelled {job.name}", logging.INFO, "was cancelled: its writes are undone")


def takeover(job: Job) -> Outcome:
    """The outcome of a job that ran while another worker took it over: that worker settles it."""
    return Outcome("lease_lost", f"lease lost {job.name}", logging.WARNING, "ran, but another worker holds it now")


def success_committed(transaction: JobTransaction, job: Job) -> Outcome:
    """Deletes a job that wrote, moves its chain or batch on, and commits, all on its own transaction.

    When the row is no longer ours, or was cancelled meanwhile, the job's writes roll
    back with the transaction, and it settles as `cancelled_or_lost` says.
    """
    db = transaction.db
    try:
        if claims.finished_one(transaction.cursor, job):
            moved_flows_on(db, [(job, success(job))])
            transaction.committed()
            return success(job)
        transaction.rolled_back()
    except BaseException:
        transaction.rolled_back()
        raise
    return cancelled_or_lost(db, job)


def quiet_settled(db: psycopg.Connection[Any], jobs: list[Job]) -> list[tuple[Job, Outcome]]:
    """Deletes successes that never touched the connection, in one statement (a transaction only when a chain or
    batch moves on); answers (job, Outcome) each."""
    if not jobs:
        return []
    if any(job.batch or job.flow for job in jobs):
        with db.transaction():
            ours = claims.finished(db, jobs)
            moved_flows_on(db, [(job, success(job)) for job in jobs if job.id in ours])
    else:
        ours = claims.finished(db, jobs)
    return [(job, success(job) if job.id in ours else cancelled_or_lost(db, job)) for job in jobs]


def cancelled_or_lost(db: psycopg.Connection[Any], job: Job) -> Outcome:
    """Settles a job whose row refused its settlement: cancelled by an operator (on the shelf, its chain or batch
    told), or shelved by the listener already (job.cancelling), or another worker's now, and its to settle."""
    with db.transaction():
        shelved = control.cancellation_settled(db, job)
    if shelved or job.cancelling:
        job.cancelling = True
        return cancellation(job)
    log.warning("lease lost: another worker holds job %s (%s on %s); it is its to settle", job.id, job.name, job.queue)
    return takeover(job)


@dataclass(frozen=True)
class Failure:
    """A failed attempt: its error, the reason and traceback to keep, the seconds it ran, and its counter (a
    field of Counts) when not the policy's "rescheduled" or "failed"."""

    error: BaseException
    reason: str
    trace: str = ""
    ran: float | None = None
    kind: str | None = None


def recorded_failure(
    db: psycopg.Connection[Any],
    job: Job,
    policy: Policy,
    failure: Failure,
    now: int | None = None,
    hooks: Callable[[Callable[[], object]], object] | None = None,
) -> Outcome:
    """Keeps a failed attempt's reason on the row, and schedules the next attempt or ends the job.

    One statement, or one transaction with the chain or batch of a job that failed for good.
    Then the policy's on_error hook is called, by `hooks(call)` when given (the supervisor
    runs it on a thread of its own), else here; whatever it raises is logged.
    """
    secret = claims.secret_of(db, job)  # none of their values is written or logged
    reason = written(redaction.redacted(failure.reason, job.args, secret))
    trace = written(redaction.redacted(failure.trace, job.args, secret))
    wait = policy.wait_after(job.attempt, failure.error)
    line = f"failed {job.name} on attempt {job.attempt}: {reason}"
    if wait is None:
        after, max_attempts = 0, job.attempt  # attempts == max_attempts: out of the claim's index
        why = f"failed for good on attempt {job.attempt}: {reason}"
        outcome = Outcome(failure.kind or "failed", line, logging.ERROR, why, True)
    else:
        after, max_attempts = round(wait * 1000), max(policy.attempts, job.attempt + 1)
        why = f"failed on attempt {job.attempt}, again in {wait:g} s: {reason}"
        outcome = Outcome(failure.kind or "rescheduled", line, logging.WARNING, why)
    with db.transaction() if outcome.final and (job.batch or job.flow) else contextlib.nullcontext():
        recorded = claims.attempt_failed(
            db, job, claims.FailedAttempt(reason, trace, failure.ran), after, max_attempts, now
        )
        if recorded:
            moved_flows_on(db, [(job, outcome)])
    if not recorded:
        return cancelled_or_lost(db, job)
    if policy.on_error is not None:
        hooked(policy.on_error, job, failure.error, hooks)
    return outcome


def hooked(
    hook: Callable[[Job, BaseException], object],
    job: Job,
    error: BaseException,
    hooks: Callable[[Callable[[], object]], object] | None,
) -> None:
    """Calls an on_error `hook`, by `hooks(call)` when given, else here; whatever it raises is logged."""

    def call() -> None:
        try:
            hook(job, error)
        except BaseException:  # SystemExit too: a hook's error ends no thread of the worker
            log.exception("on_error of job %s raised", named(job))

    if hooks is None:
        call()
    else:
        hooks(call)


def written(text: str) -> str:
    """`text` as a column of type text can hold it: a NUL character, which PostgreSQL refuses, spelled out."""
    return text.replace("\x00", "\\x00")


def moved_flows_on(db: psycopg.Connection[Any], settled: list[tuple[Job, Outcome]]) -> None:
    """Lets chains and batches react to settlements, on the same transaction."""
    done = [job for job, outcome in settled if outcome.kind == "processed" and (job.batch or job.flow)]
    ended = [job for job, outcome in settled if outcome.final and (job.batch or job.flow)]
    if done or ended:
        flows.settled(db, done, ended)


LOST = Outcome("failed", "lost", logging.ERROR, "its worker stopped during the last attempt", final=True)


def last_attempts_lost(db: psycopg.Connection[Any], now: int | None = None) -> list[Job]:
    """Fails for good, with their chains and batches on one transaction, the jobs whose worker died on their last
    attempt."""
    with db.transaction():
        lost = claims.reaped(db, now)
        moved_flows_on(db, [(job, LOST) for job in lost])
    for job in lost:
        log.error("job %s failed for good: its worker stopped during the last attempt", named(job))
    return lost


def named(job: Job) -> str:
    """How the log names a job: "7 (deliver on mail)"."""
    return f"{job.id} ({job.name} on {job.queue})"
