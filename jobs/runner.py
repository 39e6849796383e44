"""Running claimed jobs and settling them: the step between one claim and the next.

`performed` runs a claimed batch in order, taking each job from the thread's Hand
(hand.py). A job whose performer touches the connection runs on a transaction of its
own (settlement.py), on which its row is then deleted or its failure recorded, and
which commits at once: its writes and its settlement commit together, exactly once,
and never wait on another job. Successes that never touched the connection are deleted
together, in one statement, once COMMIT_AFTER has passed or the batch is done
(outcomes.py; "A job's transaction" in the README).
"""

import contextvars
import logging
import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import psycopg

from . import flows, store
from .backends import Backend
from .hand import Hand
from .job import Job, Performer
from .outcomes import Outcome, cancelled, processed, quiet_settled, recorded_failure, success_committed
from .policies import DEFAULT, NO_RETRY, policy_of
from .settlement import JobTransaction

COMMIT_AFTER = 0.005  # seconds a success that wrote nothing waits to be deleted with the ones after it

log = logging.getLogger("jobs")
current: contextvars.ContextVar[Job] = contextvars.ContextVar("current job")


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


class TransactionEnded(RuntimeError):
    """A performer ended its job's transaction by a way the worker could not refuse (its raw connection)."""


def current_job() -> Job:
    """The job being performed, for a performer that wants its id, attempt, queue or `final`.

    Raises LookupError outside a performer.
    """
    return current.get()


def performed(
    db: psycopg.Connection[Any],
    jobs: list[Job],
    performers: Mapping[str, Performer],
    *,
    now: int | None = None,
    counts: Counts | None = None,
    stopping: Callable[[], bool] = lambda: False,
    timeout: float | None = None,
    hand: Hand | None = None,
    patience: float | None = None,
    backend: Backend | None = None,
) -> list[str]:
    """Runs claimed `jobs` in order on `db` and settles them; returns one outcome line each.

    Jobs not started when `stopping()` turns true go back to the queue untouched.
    `now` fixes the moment failures are scheduled from (for tests); else the database's clock.
    `timeout` is the seconds a job may run when its policy names none (None: no limit);
    the worker enforces it (workers.py). `hand` is the thread's Hand of `jobs`, which
    the worker may take jobs back out of while one runs; a new one by default. After a
    performer that ran longer than `patience` seconds (None: however long), the jobs not
    yet started go back to the queue: they could have waited that long for any thread.
    `backend` (backends.py) learns which server process runs each job's transaction,
    behind a pooler.
    """
    counts = counts if counts is not None else Counts()
    hand = hand if hand is not None else Hand(jobs)
    lines: dict[int, str] = {}
    autocommit = db.autocommit
    db.autocommit = True  # each job's transaction is begun and committed by the runner itself
    own = db.cursor()  # the one cursor of the runner's own statements in each job's transaction
    try:
        while not stopping() and (job := hand.next()) is not None:
            outcome, quiet, seconds = ran(db, job, performers, now, timeout, backend, own)
            hand.ended(quiet)
            if patience is not None and seconds > patience and (waiting := handed_back(db, hand, now)):
                store.announced(db, {job.queue for job in waiting})  # a thread that waits takes them
            lines[job.id] = outcome.line
            if not quiet:
                told(job, outcome, counts)
            settled_quietly(db, hand.quiet(older_than=COMMIT_AFTER), counts, lines, hand)
        settled_quietly(db, hand.quiet(), counts, lines, hand)
        if stopping():
            handed_back(db, hand, now)
    finally:
        if not db.closed:
            db.autocommit = autocommit
    return [lines[job.id] for job in jobs if job.id in lines]


def handed_back(db: psycopg.Connection[Any], hand: Hand, now: int | None = None) -> list[Job]:
    """Gives back the jobs of `hand` not yet started (flows.given_back); returns them.

    When the statement fails (a lost connection), they stay in the hand, so that they
    are given back with the rest of what it holds once the connection is back.
    """
    waiting = hand.waiting()
    try:
        flows.given_back(db, waiting, now)
    except BaseException:
        hand.kept(waiting=waiting)
        raise
    return waiting


def settled_quietly(
    db: psycopg.Connection[Any],
    jobs: list[Job],
    counts: Counts,
    lines: dict[int, str] | None = None,
    hand: Hand | None = None,
) -> None:
    """Deletes quiet successes together (outcomes.quiet_settled), then counts and logs each.

    When the statement fails, they go back into `hand`, if given, as still held.
    """
    try:
        settled = quiet_settled(db, jobs)
    except BaseException:
        if hand is not None:
            hand.kept(quiet=jobs)
        raise
    for job, outcome in settled:
        told(job, outcome, counts)
        if lines is not None:
            lines[job.id] = outcome.line


def told(job: Job, outcome: Outcome, counts: Counts) -> None:
    """Counts a settled job's outcome and logs it."""
    counts.add(outcome.kind)
    log.log(outcome.level, "job %s (%s on %s) %s", job.id, job.name, job.queue, outcome.message or outcome.line)


def ran(
    db: psycopg.Connection[Any],
    job: Job,
    performers: Mapping[str, Performer],
    now: int | None,
    timeout: float | None = None,
    backend: Backend | None = None,
    cursor: psycopg.Cursor[Any] | None = None,
) -> tuple[Outcome, bool, float]:
    """Performs one job and settles it, unless it is a quiet success.

    Answers its outcome, whether it is a quiet success, and the seconds its performer ran.

    A quiet success ran without touching the connection, and waits to be deleted with
    its neighbours. A job an operator cancelled while it was held (chores.py settled it
    on the shelf already) does not start, or if it ran, keeps none of its writes,
    however it ended.
    """
    if job.cancelling:
        return cancelled(job), False, 0.0
    perform = performers.get(job.name)
    if perform is None:
        reason = f"no performer is named {job.name}"
        return recorded_failure(db, job, DEFAULT, LookupError(reason), reason, "", now, "dropped"), False, 0.0
    policy = policy_of(perform)
    job.final = policy.is_last(job.attempt)
    limit = policy.timeout if policy.timeout is not None else timeout
    job.deadline = None if limit is None else time.monotonic() + limit
    token = current.set(job)
    transaction = JobTransaction(db, backend, cursor)
    began = time.monotonic()
    try:
        perform(transaction.for_job(), job.args)
        if transaction.left_failed():
            raise RuntimeError("a statement of the job failed and its error was not raised")
        if transaction.left_ended():
            raise TransactionEnded(
                "the job ended the worker's transaction itself: what it wrote before is "
                "committed, so it is not tried again"
            )
    except Exception as error:
        seconds = time.monotonic() - began
        if db.broken or db.closed:
            raise  # the database is gone, not the job: its row returns when the lease runs out
        transaction.rolled_back()
        if job.cancelling:
            return cancelled(job), False, seconds
        reason = str(error) or type(error).__name__
        if isinstance(error, TransactionEnded):
            policy = NO_RETRY  # another attempt would write again what is committed already
        return recorded_failure(db, job, policy, error, reason, traceback.format_exc(), now), False, seconds
    finally:
        job.deadline = None  # it runs no more: no timeout can fall on it now
        current.reset(token)
    seconds = time.monotonic() - began
    if job.cancelling:
        transaction.rolled_back()
        return cancelled(job), False, seconds
    if not transaction.begun:
        return processed(job), True, seconds
    return success_committed(transaction, job), False, seconds
