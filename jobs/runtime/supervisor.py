"""The supervisor: it starts the work threads, replaces them, and settles every row no thread will.

Every WATCH_INTERVAL it lets go of a thread whose job ran past its timeout or a stop's
grace (replaced, its session ended from the server side), and of jobs waiting behind a
slow one; settles what the Holdings hold loose; and every beat lets go of the rows the
database says the worker holds that the Holdings do not know. LetGo records the performers
that run on after their jobs were settled without them, until they return.
"""

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import psycopg

from ..core.job import NO_RETRY, Job, StoppedPastNoReturn, policy_of
from ..store import claims, control, flows
from .connections import ended
from .holdings import Fate, Loose
from .refusals import reason_of, timed_out
from .settling import Failure, named, quiet_settled, recorded_failure
from .work_thread import BATCH_TIME, Parts, Settings, WorkThread

WATCH_INTERVAL = 0.1  # seconds between the supervisor's looks at the threads and the loose rows
TERMINATE_WAIT = 1.0  # seconds the supervisor waits for the server to end a let-go thread's session

GIVEN_BACK = "are given back for another thread to start"  # said of jobs claimed behind a slow one
log = logging.getLogger("jobs")


class Supervisor:
    """Starts the work threads and replaces them; `look(db)` settles what they will not, reconciling every beat.

    over(): called once, when the last work thread has ended.
    """

    def __init__(self, settings: Settings, parts: Parts, let_go: "LetGo", over: Callable[[], None]) -> None:
        self.settings, self.parts, self.let_go, self.over = settings, parts, let_go, over
        self.grace_ends: float | None = None  # when a stop's grace period runs out (time.monotonic())
        self._next_reconcile = 0.0
        self._lock = threading.Lock()
        self._threads: list[WorkThread] = []  # the work threads not let go

    def start(self) -> None:
        with self._lock:
            self._threads = [self._new(n) for n in range(self.settings.threads)]

    def _new(self, n: int) -> WorkThread:
        (work := WorkThread(n, self.settings, self.parts, self.ended)).thread.start()
        return work

    def threads(self) -> list[WorkThread]:  # the work threads not let go
        with self._lock:
            return list(self._threads)

    def ended(self, work: WorkThread, error: BaseException | None = None) -> None:
        """Hears that thread `work` ended, of `error` when it died: a thread that died is replaced, unless stopping."""
        if error is not None:
            log.error("a work thread ended of %r; another takes its place", error, exc_info=error)
            if not self.replaced(work):
                return
        with self._lock:
            if work in self._threads:
                self._threads.remove(work)
            last = not self._threads
        if last:
            self.over()

    def replaced(self, work: WorkThread) -> bool | None:
        """Takes thread `work` out and, unless stopping, starts another in its place; answers whether it was the last
        (the worker then ends once its jobs are let go), or None when it was taken out already."""
        with self._lock:
            if work not in self._threads:
                return None
            self._threads.remove(work)
            if not self.parts.gate.stopped.is_set():
                self._threads.append(self._new(work.n))
            return not self._threads

    def look(self, db: psycopg.Connection[Any]) -> None:
        """Lets go of what the threads cannot settle now, settles what is loose, and reconciles when due."""
        self._watched(db)
        self._settled(db)
        self._returned(db)
        if time.monotonic() >= self._next_reconcile:
            self._reconciled(db)
            self._settled(db)
            self._next_reconcile = time.monotonic() + self.settings.beat_every

    def _watched(self, db: psycopg.Connection[Any]) -> None:
        """Lets go of threads past their job's timeout or the grace, and of jobs waiting behind a slow one."""
        parts, now = self.parts, time.monotonic()
        grace_over = self.grace_ends is not None and now >= self.grace_ends
        for work in self.threads():
            hand = work.hand
            job = hand.running
            if job is not None and job.deadline is not None and job.deadline <= now:
                self._let_go(db, work, TimeoutError(f"timed out after {self._limit_of(job):g} s"))
            elif grace_over and hand.held():
                self._let_go(db, work, None)
            elif (
                parts.gate.stopped.is_set()
                or hand.running_past(BATCH_TIME) is not None
                or (parts.doorbell.idle() and now - hand.claimed_at > BATCH_TIME)
            ):
                if waiting := [job.id for job in parts.holdings.handed_on(hand)]:
                    log.info("jobs %s, claimed behind one still running, %s", waiting, GIVEN_BACK)

    def _let_go(self, db: psycopg.Connection[Any], work: WorkThread, error: BaseException | None) -> None:
        """Replaces thread `work` and lets go of its Hand: its running job fails with `error`, or goes back (None)."""
        last = self.replaced(work)
        if last is None:
            return
        work.abandon()
        loose = self.parts.holdings.dropped(work.hand, error)
        try:
            # Ended from the server side, before the performer is told: nothing it wrote can commit.
            if work.backend is not None and not ended(db, work.backend, round(TERMINATE_WAIT * 1000)):
                log.warning(
                    "the server process of a let-go thread did not end within %g s; its jobs go back anyway",
                    TERMINATE_WAIT,
                )
        finally:
            for entry in loose:
                if entry.job is not None:
                    entry.job.cancelled.set()
                    if entry.fate is Fate.FAIL:
                        self._said_why(entry)
            back = [entry.id for entry in loose if entry.fate is Fate.GIVE_BACK]
            if back:
                log.warning("jobs %s were in hand when their thread was let go; they go back to the queue", back)
            if last:
                self.ended(work)

    def _said_why(self, entry: Loose) -> None:
        """Logs why the running job of a thread let go fails: its timeout, or its point of no return."""
        job = entry.job
        assert job is not None, "a running job is let go with its Job"
        if timed_out(entry.error):
            log.warning("job %s ran past its timeout of %g s; its thread is let go", named(job), self._limit_of(job))
        if isinstance(entry.error, StoppedPastNoReturn):
            log.warning("job %s was let go past its point of no return: it is shelved, not tried again", named(job))

    def _settled(self, db: psycopg.Connection[Any]) -> None:
        """Settles the loose rows: gives back, deletes, or fails each; what a failed statement leaves stays loose."""
        parts = self.parts
        loose = parts.holdings.loose()
        if not loose:
            return
        left = list(loose)
        try:
            self.let_go.recorded(db, [entry.job for entry in left if entry.job is not None])  # before: no gap
            back = [entry for entry in left if entry.fate is Fate.GIVE_BACK]
            if back:
                self._given_back(db, back)
                left = [entry for entry in left if entry not in back]
            lapsed = [entry for entry in left if entry.fate is Fate.LAPSE]
            if lapsed:
                claims.lapsed(db, [(entry.id, entry.claim) for entry in lapsed])
                log.info("%d job(s) it held when cut off are due again at once", len(lapsed))
                parts.tally.counts.given_back += len(lapsed)
                left = [entry for entry in left if entry not in lapsed]
                parts.doorbell.ring()
            for claim in {entry.claim for entry in left if entry.fate is Fate.DELETE}:
                done = [entry for entry in left if entry.fate is Fate.DELETE and entry.claim == claim]
                parts.tally.add(quiet_settled(db, [entry.job for entry in done if entry.job is not None]))
                left = [entry for entry in left if entry not in done]
            for entry in [entry for entry in left if entry.fate is Fate.FAIL]:
                self._failed(db, entry)
                left.remove(entry)
        finally:
            parts.holdings.put_back(left)

    def _given_back(self, db: psycopg.Connection[Any], back: list[Loose]) -> None:
        """Gives the rows of `back` back to the queue, and counts and names (strays) only those it gave: one settled
        since the keeper read it as held, or taken by another worker, its claim fences off."""
        given = [(entry.id, entry.claim, claims.HELD if entry.job is None else entry.job.due_at) for entry in back]
        rows = flows.released(db, given)  # due as before its claim; a stray, whose moment none knew, now (HELD)
        claims.announced(db, sorted({queue for _, queue, _, _ in rows}))  # for idle workers elsewhere too
        ids, tally = {row[0] for row in rows}, self.parts.tally
        tally.counts.given_back += len(ids)
        if tally.pulse is not None:
            tally.pulse.given_back([entry.job for entry in back if entry.job is not None and entry.id in ids])
        if strays := [entry.id for entry in back if entry.job is None and entry.id in ids]:
            log.warning(
                "jobs %s were held by this worker with no thread working them; they go back to the queue", strays
            )
        self.parts.doorbell.ring()

    def _returned(self, db: psycopg.Connection[Any]) -> None:
        """Frees the room of performers let go that have returned, and wakes the claims of their queues."""
        queues = self.let_go.returned(db)
        if queues:
            claims.announced(db, queues)  # for workers elsewhere, whose claims it held back
            self.parts.doorbell.ring()

    def _failed(self, db: psycopg.Connection[Any], entry: Loose) -> None:
        """Records the failed attempt of a job let go while it ran, as its policy says, and counts it."""
        job, error = entry.job, entry.error
        assert job is not None and error is not None, "only a job that ran is let go to fail"
        past = isinstance(error, StoppedPastNoReturn)
        policy = NO_RETRY if past else policy_of(self.settings.performers.get(job.name))
        outcome = recorded_failure(db, job, policy, Failure(error, reason_of(error)), hooks=on_a_thread)
        if outcome.kind != "lease_lost":
            if timed_out(error):
                self.parts.tally.counts.timed_out += 1
            self.parts.tally.add([(job, outcome)])

    def _reconciled(self, db: psycopg.Connection[Any]) -> None:
        """Lets go of the rows the database says this worker holds that none of its threads holds (`strays`)."""
        strays = self.parts.holdings.strays(claims.held_by(db, self.settings.id))
        if strays:  # named once given back (_given_back): one settled since it was read here is no stray
            self.parts.holdings.put_back(strays)

    def _limit_of(self, job: Job) -> float:
        """The timeout that applies to `job`: its policy's, or the worker's."""
        limit = policy_of(self.settings.performers.get(job.name)).timeout
        limit = limit if limit is not None else self.settings.timeout
        assert limit is not None, "only a job with a timeout has a deadline to run past"
        return limit


def on_a_thread(call: Callable[[], object]) -> None:
    """Runs an app's hook on a thread of its own, so that however long it takes, it holds up no supervisor."""
    threading.Thread(target=call, name="jobs-on-error", daemon=True).start()


class LetGo:
    """The performers of one worker that run on after their jobs were settled without them."""

    def __init__(self) -> None:
        self._running: dict[tuple[int, int], Job] = {}  # (id, claim): the job, while its row is in job_let_go

    def recorded(self, db: psycopg.Connection[Any], jobs: list[Job]) -> None:
        """Records, on db's transaction, those of `jobs` whose performer still runs, before they are settled."""
        running = {(job.id, job.claim): job for job in jobs if job.performing and job.claim is not None}
        if running:
            control.let_go_recorded(db, list(running))
            self._running.update(running)

    def returned(self, db: psycopg.Connection[Any]) -> set[str]:
        """Deletes the rows of the performers that have returned; answers their queues, which have room again."""
        done = {key: job for key, job in self._running.items() if not job.performing}
        if done:
            control.let_go_forgotten(db, list(done))
        for key in done:
            del self._running[key]
        return {job.queue for job in done.values()}
