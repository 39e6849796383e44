"""Running claimed jobs and settling them: the step between one claim and the next.

`performed` runs a claimed batch in order, taking each job from the thread's Hand
(hand.py). A job whose performer touches the connection runs on a transaction of its
own (transaction.py), on which its row is then deleted or its failure recorded, and
which commits at once: its writes and its settlement commit together, exactly once,
and never wait on another job. Successes that never touched the connection are deleted
together, in one statement, once COMMIT_AFTER has passed or the batch is done
(settling.py; "A job's transaction" in the README). However a performer ends (any
BaseException included) that is its job's outcome; a settlement the server refuses is
the attempt's failure; only what leaves the connection unusable leaves `performed`,
and the thread then lets go of its whole Hand (holdings.py).
"""

import contextvars
import inspect
import logging
import threading
import time
import traceback
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass
from typing import Any, cast

import psycopg

from ..core.job import Job, Performer
from ..core.policies import DEFAULT, NO_RETRY, Policy, policy_of
from ..store import flows
from ..store.pulse import Pulse
from .connections import Backend
from .coroutines import awaited
from .holdings import Hand
from .refusals import described
from .settling import Outcome, cancelled, processed, quiet_settled, recorded_failure, success_committed
from .transaction import JobTransaction, expected_idle

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
    given_back: int = 0  # jobs it held that went back to the queue unrun, or due again after it was cut off

    def add(self, kind: str) -> None:
        setattr(self, kind, getattr(self, kind) + 1)

    def said(self) -> str:
        """The counts an operator looks for when a worker stops, as a line of the log."""
        return (
            f"{self.processed} job(s) done, {self.failed} failed for good, {self.rescheduled} to be tried again, "
            f"{self.given_back} given back to the queue"
        )


class TransactionEnded(RuntimeError):
    """A performer ended its job's transaction by a way the worker could not refuse (its raw connection)."""


class JobLost(RuntimeError):
    """An attempt whose end its thread could not settle: the connection was lost, or the settlement refused."""


def lost_attempt(error: BaseException) -> JobLost:
    """The failure a job's attempt is recorded with when its thread could not settle it, `error` being why."""
    if isinstance(error, psycopg.Error) and error.__cause__ is not None:
        return JobLost(f"{reason_of(error.__cause__)} (and recording it was refused: {described(error)})")
    if isinstance(error, psycopg.Error):
        return JobLost(f"its worker's connection was lost while it ran ({described(error)})")
    return JobLost(f"its work thread was lost while it ran ({reason_of(error)})")


def reason_of(error: BaseException) -> str:
    """How a failed attempt's reason reads: the error's message, or its type's name; a BaseException names its type."""
    if isinstance(error, psycopg.Error) and error.sqlstate:
        return described(error)  # the server's word, with its SQLSTATE
    if not isinstance(error, Exception):
        return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
    return str(error) or type(error).__name__


Kind = tuple[Policy, bool]  # a performer's policy, and whether it is `async def`


def kind_of(name: str, perform: Performer, kinds: dict[str, Kind] | None) -> Kind:
    """The policy of `perform`, the performer of `name`, and whether it is async; read once per batch (`kinds`)."""
    kind = kinds.get(name) if kinds is not None else None
    if kind is None:
        kind = policy_of(perform), inspect.iscoroutinefunction(perform)
        if kinds is not None:
            kinds[name] = kind
    return kind


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
    give_back: Callable[[Hand], object] | None = None,
    pulse: Pulse | None = None,
) -> list[str]:
    """Runs claimed `jobs` in order on `db` and settles them; returns one outcome line each.

    Jobs not started when `stopping()` turns true go back to the queue untouched.
    `now` fixes the moment failures are scheduled from (for tests); else the database's clock.
    `timeout` is the seconds a job may run when its policy names none (None: no limit);
    the worker enforces it (supervisor.py). `hand` is the thread's Hand of `jobs`, which
    the worker may take jobs back out of while one runs; a new one by default. After a
    performer that ran longer than `patience` seconds (None: however long), the jobs not
    yet started go back to the queue: they could have waited that long for any thread.
    `give_back(hand)` gives back the jobs of `hand` not yet started: a Worker's ledger
    lets them go for its keeper; by default they are given back on `db` at once.
    `backend` (connections.py) learns which server process runs each job's transaction,
    behind a pooler. `pulse` (pulse.py), a Worker's, counts each settlement per minute.
    A lost connection raises, the Hand still holding what is unsettled.
    """
    counts = counts if counts is not None else Counts()
    hand = hand if hand is not None else Hand(jobs)
    give_back = give_back if give_back is not None else (lambda hand: flows.given_back(db, hand.waiting(), now))
    lines: dict[int, str] = {}
    autocommit = db.autocommit
    db.autocommit = True  # each job's transaction is begun and committed by the runner itself
    own = db.cursor()  # the one cursor of the runner's own statements in each job's transaction
    kinds: dict[str, Kind] = {}  # each performer's policy and whether it is async, read once a batch
    try:
        while not stopping() and (job := hand.next()) is not None:
            outcome, quiet, seconds = ran(db, job, performers, now, timeout, backend, own, kinds)
            hand.ended(job, quiet)
            expected_idle(db, "settling its jobs")  # else nothing settled on it would commit
            if patience is not None and seconds > patience:
                give_back(hand)  # a thread that waits takes them
            lines[job.id] = outcome.line
            if not quiet:
                told(job, outcome, counts, pulse)
            settled_quietly(db, hand.quiet(older_than=COMMIT_AFTER), counts, lines, hand, pulse)
        settled_quietly(db, hand.quiet(), counts, lines, hand, pulse)
        if stopping():
            give_back(hand)
    finally:
        if not db.closed:
            db.autocommit = autocommit
    return [lines[job.id] for job in jobs if job.id in lines]


def settled_quietly(
    db: psycopg.Connection[Any],
    jobs: list[Job],
    counts: Counts,
    lines: dict[int, str] | None = None,
    hand: Hand | None = None,
    pulse: Pulse | None = None,
) -> None:
    """Deletes quiet successes together (outcomes.quiet_settled), then counts and logs each.

    `hand`, if given, holds them until the deletion commits, and keeps them when it fails:
    `performed` found the connection outside any transaction just before (`expected_idle`),
    so the deletion has committed when it returns.
    `pulse`, if given, counts them all at once.
    """
    if not jobs:
        return
    try:
        settled = quiet_settled(db, jobs)
    except BaseException:
        if hand is not None:
            hand.kept(jobs)
        raise
    if hand is not None:
        hand.deleted(jobs)
    for job, outcome in settled:
        told(job, outcome, counts)
        if lines is not None:
            lines[job.id] = outcome.line
    if pulse is not None:
        pulse.settled([(job.queue, outcome.kind, outcome.final) for job, outcome in settled])


def told(job: Job, outcome: Outcome, counts: Counts, pulse: Pulse | None = None) -> None:
    """Counts a settled job's outcome (in `pulse` too, when given) and logs it."""
    counts.add(outcome.kind)
    if pulse is not None:
        pulse.settled([(job.queue, outcome.kind, outcome.final)])
    log.log(outcome.level, "job %s (%s on %s) %s", job.id, job.name, job.queue, outcome.message or outcome.line)


def ran(
    db: psycopg.Connection[Any],
    job: Job,
    performers: Mapping[str, Performer],
    now: int | None,
    timeout: float | None = None,
    backend: Backend | None = None,
    cursor: psycopg.Cursor[Any] | None = None,
    kinds: dict[str, Kind] | None = None,
) -> tuple[Outcome, bool, float]:
    """Performs one job and settles it, unless it is a quiet success.

    Answers its outcome, whether it is a quiet success, and the seconds its performer ran.

    A quiet success ran without touching the connection, and waits to be deleted with
    its neighbours. Whatever the performer raised, BaseException included, is its
    attempt's failure, and so is a settlement the server refused (a deferred constraint
    at COMMIT, a deadlock, a statement timeout): its writes are rolled back and its
    reason recorded. A job an operator cancelled while it was held (maintenance.py settled it
    on the shelf already) does not start, or if it ran, keeps none of its writes.
    Raises only when the connection is lost, or the failure's record itself refused.
    """
    if job.cancelling:
        return cancelled(job), False, 0.0
    perform = performers.get(job.name)
    if perform is None:
        reason = f"no performer is named {job.name}"
        return recorded_failure(db, job, DEFAULT, LookupError(reason), reason, "", now, "dropped"), False, 0.0
    policy, is_async = kind_of(job.name, perform, kinds)
    job.final = policy.is_last(job.attempt)
    limit = policy.timeout if policy.timeout is not None else timeout
    job.deadline = None if limit is None else time.monotonic() + limit
    token = current.set(job)
    transaction = JobTransaction(db, backend, cursor)
    began = time.monotonic()
    error: BaseException | None = None
    try:
        if is_async:
            coroutine = cast(Callable[..., Coroutine[Any, Any, object]], perform)  # is_async: inspect said so
            awaited(coroutine, transaction.for_job(), job.args, job)  # on this thread's event loop (coroutines.py)
        else:
            perform(transaction.for_job(), job.args)
        if transaction.left_failed():
            error = RuntimeError("a statement of the job failed and its error was not raised")
        elif transaction.left_ended():
            error = TransactionEnded(
                "the job ended the worker's transaction itself: what it wrote before is "
                "committed, so it is not tried again"
            )
    except BaseException as raised:  # SystemExit and KeyboardInterrupt too: the job's end, never the thread's
        error = raised
    finally:
        job.deadline = None  # it runs no more: no timeout can fall on it now
        transaction.handed_back(job)
        current.reset(token)
    seconds = time.monotonic() - began
    if error is None and not job.cancelling:
        if not transaction.begun:
            return processed(job), True, seconds
        try:
            return success_committed(transaction, job), False, seconds
        except psycopg.Error as refused:
            error = refused  # rolled back: the job's writes are gone, and its attempt failed
    if db.broken or db.closed:
        raise error if isinstance(error, psycopg.Error) else JobLost(reason_of(error))
    transaction.rolled_back()
    expected_idle(db, "recording a failure")
    if job.cancelling:
        return cancelled(job), False, seconds
    if isinstance(error, TransactionEnded):
        policy = NO_RETRY  # another attempt would write again what is committed already
    assert error is not None, "a job that neither succeeded nor was cancelled failed"
    trace = "".join(traceback.format_exception(error))
    try:
        outcome = recorded_failure(db, job, policy, error, reason_of(error), trace, now, ran=seconds)
    except psycopg.Error as refused:
        raise refused from error  # the thread lets the job go, to be failed on the keeper's connection
    if isinstance(error, KeyboardInterrupt) and threading.current_thread() is threading.main_thread():
        raise error  # a caller's own loop (`worked`) on the main thread was interrupted: it stops
    return outcome, False, seconds
