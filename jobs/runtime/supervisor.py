"""The keeper: the listener's chore that settles every row its worker holds and no thread will settle.

Every WATCH_INTERVAL, on the listener's connection, it looks at the work threads: one
whose job ran past its timeout, or that still works when a stop's grace ends, is let go
(replaced at once, its server session ended, its Hand let go: the overdue job fails with
its timeout, the rest goes back, and a job past its point of no return is shelved, never
given back), and a Hand whose running job is slow, or whose worker
stops, has its waiting jobs let go, to be given back for another thread to start. Then
it settles what the ledger holds loose (holdings.py), whoever let it go: given back,
deleted, or failed with its reason; a statement that fails leaves the rest loose for the
next look; a performer that runs on is recorded first (holdings.py), and its record deleted
once it returns. Every RECONCILE_EVERY it compares the rows the database says the worker
holds with the ledger and lets go of the difference, so no row stays held by this live
worker while none of its threads works it for longer than that. A policy's on_error
hook runs on a thread of its own, never here.
"""

import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import psycopg

from ..core.job import Job, Performer, StoppedPastNoReturn
from ..core.policies import NO_RETRY, policy_of
from ..store import claims, flows
from ..store.pulse import Pulse
from .connections import ended
from .holdings import Fate, Ledger, LetGo, Loose
from .running import Counts, reason_of, told
from .settling import quiet_settled, recorded_failure
from .work_thread import BATCH_TIME, Doorbell, WorkThread

WATCH_INTERVAL = 0.1  # seconds between the keeper's looks at the threads and the loose rows
TERMINATE_WAIT = 1.0  # seconds the keeper waits for the server to end a let-go thread's session

log = logging.getLogger("jobs")


class Crew(Protocol):
    """What the keeper reads of its worker (workers.Worker)."""

    id: int
    ledger: Ledger
    let_go: LetGo
    performers: Mapping[str, Performer]
    timeout: float | None
    counts: Counts
    pulse: Pulse
    doorbell: Doorbell

    def work_threads(self) -> list[WorkThread]: ...
    def replaced(self, work: WorkThread) -> bool | None: ...
    def thread_ended(self, work: WorkThread) -> None: ...
    def grace_over(self, now: float) -> bool: ...
    def stopping(self) -> bool: ...


class Keeper:
    """The keeper of `crew`'s rows; `kept(db)` is one look, reconciling at most every `reconcile_every` seconds."""

    def __init__(self, crew: Crew, reconcile_every: float) -> None:
        self.crew, self.reconcile_every = crew, reconcile_every
        self._next_reconcile = 0.0

    def kept(self, db: psycopg.Connection[Any]) -> None:
        """Lets go of what the threads cannot settle now, settles what is loose, and reconciles when due."""
        self._watched(db)
        self._settled(db)
        self._returned(db)
        if time.monotonic() >= self._next_reconcile:
            self._reconciled(db)
            self._settled(db)
            self._next_reconcile = time.monotonic() + self.reconcile_every

    def _watched(self, db: psycopg.Connection[Any]) -> None:
        """Lets go of threads past their job's timeout or the grace, and of jobs waiting behind a slow one."""
        crew = self.crew
        now = time.monotonic()
        grace_over = crew.grace_over(now)
        for work in crew.work_threads():
            hand = work.hand
            job = hand.running
            if job is not None and job.deadline is not None and job.deadline <= now:
                self._let_go(db, work, TimeoutError(f"timed out after {self._limit_of(job):g} s"))
            elif grace_over and hand.held():
                self._let_go(db, work, None)
            elif (
                crew.stopping()
                or hand.running_past(BATCH_TIME) is not None
                or (crew.doorbell.idle() and now - hand.claimed_at > BATCH_TIME)
            ):
                waiting = crew.ledger.handed_on(hand)
                if waiting:
                    log.info(
                        "jobs %s, claimed behind one still running, are given back for another thread to start",
                        [job.id for job in waiting],
                    )

    def _let_go(self, db: psycopg.Connection[Any], work: WorkThread, error: BaseException | None) -> None:
        """Replaces thread `work` and lets go of its Hand: its running job fails with `error`, or goes back (None)."""
        last = self.crew.replaced(work)
        if last is None:
            return
        work.abandon()
        loose = self.crew.ledger.dropped(work.hand, error)
        try:
            # The thread's session is ended from the server side, so whatever its stuck
            # performer wrote is rolled back and nothing of it can commit later; it is gone
            # before the performer is told, so the performer finds nothing to commit on.
            if work.backend is not None and not ended(db, work.backend, round(TERMINATE_WAIT * 1000)):
                log.warning(
                    "the server process of a let-go thread did not end within %g s; its jobs go back anyway",
                    TERMINATE_WAIT,
                )
        finally:
            for entry in loose:
                if entry.job is not None:
                    entry.job.cancelled.set()
            for entry in [entry for entry in loose if entry.fate is Fate.FAIL and entry.job is not None]:
                self._told_let_go(entry)
            back = [entry.id for entry in loose if entry.fate is Fate.GIVE_BACK]
            if back:
                log.warning("jobs %s were in hand when their thread was let go; they go back to the queue", back)
            if last:
                self.crew.thread_ended(work)

    def _told_let_go(self, entry: Loose) -> None:
        """Logs why the running job of a thread let go fails: its timeout, or its point of no return."""
        job = entry.job
        assert job is not None, "a running job is let go with its Job"
        if timed_out(entry.error):
            log.warning(
                "job %s (%s on %s) ran past its timeout of %g s; its thread is let go",
                job.id,
                job.name,
                job.queue,
                self._limit_of(job),
            )
        if isinstance(entry.error, StoppedPastNoReturn):
            log.warning(
                "job %s (%s on %s) was let go past its point of no return: it is shelved, not tried again",
                job.id,
                job.name,
                job.queue,
            )

    def _settled(self, db: psycopg.Connection[Any]) -> None:
        """Settles the loose rows: gives back, deletes, or fails each; what a failed statement leaves stays loose."""
        loose = self.crew.ledger.loose()
        if not loose:
            return
        left = list(loose)
        try:
            self.crew.let_go.recorded(db, [entry.job for entry in left if entry.job is not None])  # before: no gap
            back = [entry for entry in left if entry.fate is Fate.GIVE_BACK]
            if back:
                queues = flows.released(db, [(entry.id, entry.claim, due_at(entry)) for entry in back])
                claims.announced(db, queues)  # for idle workers elsewhere too
                self.crew.counts.given_back += len(back)
                self.crew.pulse.given_back([entry.job for entry in back if entry.job is not None])
                left = [entry for entry in left if entry not in back]
                self.crew.doorbell.ring()
            lapsed = [entry for entry in left if entry.fate is Fate.LAPSE]
            if lapsed:
                claims.lapsed(db, [(entry.id, entry.claim) for entry in lapsed])
                log.info("%d job(s) it held when cut off are due again at once", len(lapsed))
                self.crew.counts.given_back += len(lapsed)
                left = [entry for entry in left if entry not in lapsed]
                self.crew.doorbell.ring()
            for claim in {entry.claim for entry in left if entry.fate is Fate.DELETE}:
                done = [entry for entry in left if entry.fate is Fate.DELETE and entry.claim == claim]
                for job, outcome in quiet_settled(db, [entry.job for entry in done if entry.job is not None]):
                    told(job, outcome, self.crew.counts, self.crew.pulse)
                left = [entry for entry in left if entry not in done]
            for entry in [entry for entry in left if entry.fate is Fate.FAIL]:
                self._failed(db, entry)
                left.remove(entry)
        finally:
            self.crew.ledger.kept(left)

    def _returned(self, db: psycopg.Connection[Any]) -> None:
        """Frees the room of performers let go that have returned, and wakes the claims of their queues."""
        queues = self.crew.let_go.returned(db)
        if queues:
            claims.announced(db, queues)  # for workers elsewhere, whose claims it held back
            self.crew.doorbell.ring()

    def _failed(self, db: psycopg.Connection[Any], entry: Loose) -> None:
        """Records the failed attempt of a job let go while it ran, as its policy says, and counts it."""
        job, error = entry.job, entry.error
        assert job is not None and error is not None, "only a job that ran is let go to fail"
        policy = NO_RETRY if isinstance(error, StoppedPastNoReturn) else policy_of(self.crew.performers.get(job.name))
        outcome = recorded_failure(db, job, policy, error, reason_of(error), "", None, hooks=on_a_thread)
        if outcome.kind != "lease_lost":
            if timed_out(error):
                self.crew.counts.timed_out += 1
            told(job, outcome, self.crew.counts, self.crew.pulse)

    def _reconciled(self, db: psycopg.Connection[Any]) -> None:
        """Lets go of the rows the database says this worker holds that none of its threads holds (ledger.strays)."""
        strays = self.crew.ledger.strays(claims.held_by(db, self.crew.id))
        if strays:
            log.warning(
                "jobs %s were held by this worker with no thread working them; they go back to the queue",
                [entry.id for entry in strays],
            )
            self.crew.ledger.kept(strays)

    def _limit_of(self, job: Job) -> float:
        """The timeout that applies to `job`: its policy's, or the worker's."""
        limit = policy_of(self.crew.performers.get(job.name)).timeout
        limit = limit if limit is not None else self.crew.timeout
        assert limit is not None, "only a job with a timeout has a deadline to run past"
        return limit


def timed_out(error: BaseException | None) -> bool:
    """Whether a let-go job's `error` is its timeout, past its point of no return or not."""
    return isinstance(error, TimeoutError) or isinstance(getattr(error, "__cause__", None), TimeoutError)


def due_at(entry: Loose) -> int:
    """When a row given back is due again: as before its claim, or now (HELD) for a stray."""
    return entry.job.due_at if entry.job is not None else claims.HELD


def on_a_thread(call: Callable[[], object]) -> None:
    """Runs an app's hook on a thread of its own, so that however long it takes, it holds up no keeper."""
    threading.Thread(target=call, name="jobs-on-error", daemon=True).start()
