"""Running claimed jobs and settling them: the step between one claim and the next.

A work thread's Runner runs each claimed batch in order, from the thread's Hand (`performed` one
batch of a caller's, `worked` one job in a caller's loop). A job that touches the connection is
settled on its own transaction; quiet successes are deleted together after COMMIT_AFTER. However a
performer ends is its job's outcome; only a connection made unusable leaves the Runner.
"""

import contextvars
import inspect
import logging
import threading
import time
import traceback
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

import psycopg

from ..core.job import DEFAULT, NO_RETRY, Job, Performer, Policy, policy_of
from ..store import claims, flows, schema
from . import settling
from .connections import Backend
from .coroutines import awaited
from .holdings import Hand
from .refusals import JobLost, TransactionEnded, expected_idle, reason_of
from .settling import Counts, Failure, Outcome, Tally
from .transaction import JobTransaction

COMMIT_AFTER = 0.005  # seconds a success that wrote nothing waits to be deleted with the ones after it
UNWATCHED_LEASE = 300.0  # seconds `worked` leases a job for: no worker beats to keep it

log = logging.getLogger("jobs")
current: contextvars.ContextVar[Job] = contextvars.ContextVar("current job")


Kind = tuple[Policy, bool]  # a performer's policy, and whether it is `async def`


def current_job() -> Job:
    """The job being performed, for a performer that wants its id, attempt, queue or `final` (LookupError outside)."""
    return current.get()


def performed(
    db: psycopg.Connection[Any],
    jobs: list[Job],
    performers: Mapping[str, Performer],
    *,
    now: int | None = None,
    counts: Counts | None = None,
    patience: float | None = None,
) -> list[str]:
    """Runs claimed `jobs` in order on `db` and settles them; returns one outcome line each.

    `now` fixes the moment failures are scheduled from (None: the database's clock). After a
    performer that ran longer than `patience` seconds, the jobs not started go back to the queue.
    """
    runner = Runner(performers, Tally(counts if counts is not None else Counts()), patience=patience, now=now)
    lines = runner.batch(db, Hand(jobs))
    return [lines[job.id] for job in jobs if job.id in lines]


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
    # Within a queue's limit, after one read of job_limits (a copy without store/limits.py: the plain claim).
    hold, limits = claims.Hold(lease, budgets=claims.budgets_of(performers)), schema.optional("limits")
    if limits is None:
        claimed = claims.claimed(db, queue, now, hold=hold)
    else:
        claimed = limits.claimed(db, queue, now, hold=hold).jobs
    if not claimed:
        return None
    return performed(db, claimed, performers, now=now)[0]


@dataclass
class Runner:
    """How one thread runs its claimed batches: `batch(db, hand)` runs and settles them, and answers a line each.

    timeout: for a job whose policy names none. backend: the server process of each job's
    transaction, behind a pooler. stopping(): once true, the jobs not started go back, by
    give_back(hand) (a Worker's holdings let them go; by default they go back on `db` at once).
    """

    performers: Mapping[str, Performer]
    tally: Tally
    timeout: float | None = None
    patience: float | None = None
    backend: Backend | None = None
    stopping: Callable[[], bool] = lambda: False
    give_back: Callable[[Hand], object] | None = None
    now: int | None = None
    kinds: dict[str, Kind] = field(default_factory=dict)  # each performer's policy and whether it is async

    def batch(self, db: psycopg.Connection[Any], hand: Hand) -> dict[int, str]:
        """Runs and settles the jobs of `hand` on `db`; a lost connection raises, the Hand holding what is unsettled."""
        give_back = self.give_back or (lambda hand: flows.given_back(db, hand.waiting(), self.now))
        lines: dict[int, str] = {}
        autocommit = db.autocommit
        db.autocommit = True  # each job's transaction is begun and committed by the runner itself
        own = db.cursor()  # the one cursor of the runner's own statements in each job's transaction
        try:
            while not self.stopping() and (job := hand.next()) is not None:
                outcome, quiet, seconds = self.ran(db, job, own)
                hand.ended(job, quiet)
                expected_idle(db, "settling its jobs")  # else nothing settled on it would commit
                if self.patience is not None and seconds > self.patience:
                    give_back(hand)  # a thread that waits takes them
                lines[job.id] = outcome.line
                if not quiet:
                    self.tally.add([(job, outcome)])
                if done := hand.quiet(COMMIT_AFTER):
                    self.settled_quietly(db, hand, done, lines)
            self.settled_quietly(db, hand, hand.quiet(), lines)
            if self.stopping():
                give_back(hand)
        finally:
            if not db.closed:
                db.autocommit = autocommit
        return lines

    def settled_quietly(self, db: psycopg.Connection[Any], hand: Hand, jobs: list[Job], lines: dict[int, str]) -> None:
        """Deletes the quiet successes `jobs` of `hand` together; the hand holds them until the deletion commits."""
        if not jobs:
            return
        try:
            settled = settling.quiet_settled(db, jobs)
        except BaseException:
            hand.deleted(jobs, committed=False)
            raise
        hand.deleted(jobs)
        self.tally.add(settled)
        lines.update((job.id, outcome.line) for job, outcome in settled)

    def kind_of(self, name: str, perform: Performer) -> Kind:
        """The policy of `perform`, the performer of `name`, and whether it is async; read once per thread."""
        kind = self.kinds.get(name)
        if kind is None:
            kind = self.kinds[name] = policy_of(perform), inspect.iscoroutinefunction(perform)
        return kind

    def ran(self, db: psycopg.Connection[Any], job: Job, cursor: psycopg.Cursor[Any]) -> tuple[Outcome, bool, float]:
        """Performs one job and settles it, unless it is a quiet success: (its outcome, quiet, seconds it ran).

        Whatever the performer raised (BaseException too), or a settlement the server refused, is its
        attempt's failure, its writes rolled back; a job cancelled while held keeps none. Raises only
        when the connection is lost, or the failure's record itself refused.
        """
        if job.cancelling:
            return settling.cancellation(job), False, 0.0
        perform = self.performers.get(job.name)
        if perform is None:
            reason = f"no performer is named {job.name}"
            failed = settling.recorded_failure(
                db, job, DEFAULT, Failure(LookupError(reason), reason, kind="dropped"), self.now
            )
            return failed, False, 0.0
        policy, is_async = self.kind_of(job.name, perform)
        transaction = JobTransaction(db, self.backend, cursor)
        began = time.monotonic()
        error = self.called(job, perform, policy, is_async, transaction)
        seconds = time.monotonic() - began
        if error is None and not job.cancelling:
            if not transaction.begun:
                return settling.success(job), True, seconds
            try:
                return settling.success_committed(transaction, job), False, seconds
            except psycopg.Error as refused:
                error = refused  # rolled back: the job's writes are gone, and its attempt failed
        return self.failed(db, job, policy, error, transaction, seconds), False, seconds

    def called(
        self, job: Job, perform: Performer, policy: Policy, is_async: bool, on: JobTransaction
    ) -> BaseException | None:
        """Calls the performer of `job` under its deadline, `on` its transaction; answers how it failed, or None."""
        job.final = policy.is_last(job.attempt)
        limit = policy.timeout if policy.timeout is not None else self.timeout
        job.deadline = None if limit is None else time.monotonic() + limit
        token = current.set(job)
        try:
            if is_async:
                coroutine = cast(Callable[..., Coroutine[Any, Any, object]], perform)  # is_async: inspect said so
                awaited(coroutine, on.for_job(), job.args, job)  # on this thread's event loop
            else:
                perform(on.for_job(), job.args)
            if on.begun and on.left_failed():
                return RuntimeError("a statement of the job failed and its error was not raised")
            if on.begun and on.left_ended():
                return TransactionEnded(
                    "the job ended the worker's transaction itself: what it wrote before is "
                    "committed, so it is not tried again"
                )
            return None
        except BaseException as raised:  # SystemExit and KeyboardInterrupt too: the job's end, never the thread's
            return raised
        finally:
            job.deadline = None  # it runs no more: no timeout can fall on it now
            on.handed_back(job)
            current.reset(token)

    def failed(
        self,
        db: psycopg.Connection[Any],
        job: Job,
        policy: Policy,
        error: BaseException | None,
        transaction: JobTransaction,
        seconds: float,
    ) -> Outcome:
        """Rolls back the job's writes and records its failed attempt (or its cancellation)."""
        if db.broken or db.closed:
            if isinstance(error, psycopg.Error):
                raise error
            raise JobLost(reason_of(error) if error is not None else "its connection was lost")
        transaction.rolled_back()
        expected_idle(db, "recording a failure")
        if job.cancelling:
            return settling.cancellation(job)
        assert error is not None, "a job that neither succeeded nor was cancelled failed"
        if isinstance(error, TransactionEnded):
            policy = NO_RETRY  # another attempt would write again what is committed already
        trace = "".join(traceback.format_exception(error))
        try:
            failure = Failure(error, reason_of(error), trace, ran=seconds)
            outcome = settling.recorded_failure(db, job, policy, failure, self.now)
        except psycopg.Error as refused:
            raise refused from error  # the thread lets the job go, to be failed on the supervisor's connection
        if isinstance(error, KeyboardInterrupt) and threading.current_thread() is threading.main_thread():
            raise error  # a caller's own loop (`worked`) on the main thread was interrupted: it stops
        return outcome
