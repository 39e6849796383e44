"""The maintenance on the listener's connection: the listener, and the chores it runs on their timers.

The listener LISTENs for the notification `later` sends on commit and rings the Doorbell at once.
On the same connection it runs each chore on its own timer and alone (`timetable`): one refused or
failing is logged and the others run on; each chore's wait on a lock is bounded by CHORE_LOCK_WAIT.
"""

import logging
import os
import selectors
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import psycopg

from ..core.job import FATE, Job
from ..store import claims, control
from ..store.frontier import Frontiers
from . import settling
from .connections import Connect, Reconnecting, kept_running
from .holdings import Holdings
from .refusals import Refusals, still_usable
from .settling import named
from .supervisor import WATCH_INTERVAL, LetGo, Supervisor
from .work_thread import Doorbell, Gate, Parts, Settings

POLL_INTERVAL = 1.0  # seconds an idle worker waits before it looks again without being woken
CHORE_LOCK_WAIT = 1.0  # seconds a chore's statement may wait on a lock before it gives up, to run again later

RUNS_ON = "it runs on, and a success is not shelved"  # what a cancel past the point of no return does
log = logging.getLogger("jobs")


Work = Callable[[psycopg.Connection[Any]], object]  # what a chore does, on the listener's connection


@dataclass
class Chore:
    """A chore of the listener: its name in the log, how often it runs (seconds), what it does on a connection,
    and at_stop(), asked once the worker has stopped: when it answers True, the chore runs once more."""

    name: str
    every: float
    do: Work
    next_at: float = 0.0  # time.monotonic() moment it is due next; 0: at once
    at_stop: Callable[[], bool] | None = None


def timetable(
    settings: Settings, parts: Parts, supervisor: Supervisor, fired: Work | None, pulse: ModuleType | None
) -> list[Chore]:
    """The chores of a worker, each due at once when the listener starts. `fired` queues its schedules' due ticks,
    once across workers, and `pulse` is store/pulse.py: None, no such chore (none held, or a copy left it out)."""
    queues, poll, doorbell = settings.queues, settings.poll, parts.doorbell
    limits, counted = parts.limits, parts.tally.pulse
    chores = [
        # What the threads let go as they end (a stop's unstarted jobs) is settled by one more look, at the end.
        Chore("keeper", WATCH_INTERVAL, supervisor.look, at_stop=parts.holdings.letting_go),
        # Limits before the pauses, whose first read lets the threads claim.
        Chore("limits", poll, limits.read) if limits is not None else None,
        Chore("pauses", poll, lambda db: parts.gate.paused_now(control.paused_queues(db))),
        Chore("promotion", poll, lambda db: promoted(db, queues, doorbell)),
        Chore("schedules", poll, fired) if fired is not None else None,
        Chore("frontier", poll, lambda db: looked(db, queues, parts.frontiers, doorbell)),
        Chore("cancels", poll, lambda db: cancels_heard(db, parts.holdings, supervisor.let_go)),
        # A failed flush of the pulse keeps its counts.
        Chore("pulse", pulse.PULSE_EVERY, counted.flushed, at_stop=counted.pending) if pulse and counted else None,
        Chore("reaper", settings.beat_every, lambda db: reaper(db, pulse)),
    ]
    return [chore for chore in chores if chore is not None]


def promoted(db: psycopg.Connection[Any], queues: list[str], doorbell: Doorbell) -> None:
    """Promotes the scheduled jobs whose moment has come, and wakes a thread when `queues` got some."""
    if set(claims.promoted(db)) & set(queues):
        doorbell.ring()  # not only by the notification, which a polling worker misses


def looked(db: psycopg.Connection[Any], queues: list[str], frontiers: Frontiers, doorbell: Doorbell) -> None:
    """Looks where each queue's claims start, past dead index entries."""
    if frontiers.looked(db, queues):
        doorbell.ring()  # a job the claims passed over is due


def cancels_heard(db: psycopg.Connection[Any], holdings: Holdings, let_go: LetGo) -> None:
    """Hears which jobs in hand an operator cancelled, one claim at a time."""
    for hand in holdings.hands():
        if jobs := hand.held():
            cancelled_in_hand(db, jobs, let_go)


def cancelled_in_hand(db: psycopg.Connection[Any], jobs: list[Job], let_go: LetGo | None = None) -> None:
    """Settles at once, as cancelled, the jobs of one claim an operator cancelled while held, and tells them.

    A performer may run on (it sees `current_job().cancelled`), but its job stays on the
    shelf (the runner knows by `cancelling`); one that runs is recorded in `let_go` on the
    same transaction, so it counts against its limits until it returns. A job past its
    point of no return is left to end as its performer ends it: a retry could redo it.
    """
    cancelled = control.cancelled_among(db, jobs)
    for job in jobs:
        if job.id in cancelled and not job.cancelling:
            with FATE:
                too_late = job.irrevocable
                job.cancelling = not too_late
            if too_late and not job.cancel_too_late:
                job.cancel_too_late = True  # said once
                log.warning("job %s was cancelled past its point of no return: %s", named(job), RUNS_ON)
            if too_late:
                continue
            job.cancelled.set()
            with db.transaction():
                if let_go is not None:
                    let_go.recorded(db, [job])
                control.cancellation_settled(db, job)
            log.warning("job %s was cancelled while in hand: it is on the shelf, and not retried", named(job))


def reaper(db: psycopg.Connection[Any], pulse: ModuleType | None = None) -> None:
    """The reaper: jobs of workers gone come back, keys of leases that ran out are freed, the lost are shelved, and
    what the workers' table, job_let_go and the `pulse` (store/pulse.py, unless a copy left it out) keep too long."""
    for job, worker_id in control.orphans_lapsed(db):
        log.warning("job %s was held by worker %s, which stopped beating: its lease runs out now", job, worker_id)
    claims.keys_freed(db)
    with db.transaction():
        control.cancelled_reaped(db)  # before the reaper, so a cancelled job is shelved, never run again
    settling.last_attempts_lost(db)
    control.workers_pruned(db)
    control.let_go_pruned(db)
    if pulse is not None:
        pulse.pruned(db)


class Listener:
    """Wakes the work threads behind `gate` (one ring per notification of its queues) and runs `chores` on their
    timers until `stopping` is set (`interrupted` ends a wait at once); `run` is the thread's body."""

    def __init__(
        self,
        connect: Connect,
        gate: Gate,
        chores: list[Chore],
        refusals: Refusals,
        *,
        listen: bool,
        stopping: threading.Event,
    ) -> None:
        self.connect, self.queues, self.listen, self.chores = connect, gate.queues, listen, chores
        self.stopping, self.doorbell, self.refusals = stopping, gate.doorbell, refusals
        read, write = os.pipe()  # a byte written here ends the wait in select
        self._wakeup_r = read
        self._wakeup_w: int | None = write  # None once both ends are closed
        self._selector: selectors.BaseSelector | None = None
        self._fd: int | None = None

    def run(self) -> None:  # listens and keeps the timers until the worker stops, reconnecting when cut off
        with selectors.DefaultSelector() as self._selector:
            self._selector.register(self._wakeup_r, selectors.EVENT_READ)
            thread = Reconnecting(
                "worker's listener", self.refusals, self._listening, self._unlistened, self._last_chores
            )
            kept_running(self.connect, self.stopping, self._step, thread)
        self._left_undone()

    def _last_chores(self, db: psycopg.Connection[Any]) -> None:
        """Runs once more, each alone, the chores whose at_stop asks it, on the listener's last connection."""
        for chore in self._left():
            try:
                self._done(chore, db)
            except psycopg.Error as error:  # the connection was lost: _done logged every other error
                log.error("the worker's last %s was cut off: %s", chore.name, error)

    def _left_undone(self) -> None:  # the chores left with something to do: the listener ended cut off
        for chore in self._left():
            log.error("the worker stopped while cut off from the database: its last %s is lost", chore.name)

    def _left(self) -> list[Chore]:  # the chores whose at_stop asks them to run once more
        return [chore for chore in self.chores if chore.at_stop is not None and chore.at_stop()]

    def interrupted(self) -> None:  # ends the listener's wait at once (it then sees `stopping`)
        if self._wakeup_w is not None:
            os.write(self._wakeup_w, b"x")

    def closed(self) -> None:  # closes the wake-up pipe, once the thread has ended
        if self._wakeup_w is not None:
            os.close(self._wakeup_r)
            os.close(self._wakeup_w)
            self._wakeup_w = None

    def _listening(self, db: psycopg.Connection[Any]) -> None:
        """On a new connection: bound its waits on locks, LISTEN, and wake a thread, as a job may have come meanwhile.
        Not with listen=False (behind PgBouncer in transaction mode a session's setting reaches other clients)."""
        assert self._selector is not None, "run() made it"
        if self.listen:
            db.execute("SELECT set_config('lock_timeout', %s, false)", [f"{round(CHORE_LOCK_WAIT * 1000)}ms"])
            db.execute("LISTEN jobs")
            self._fd = db.fileno()
            self._selector.register(self._fd, selectors.EVENT_READ)
            self.doorbell.ring()

    def _unlistened(self, error: BaseException | None = None) -> None:
        if self._fd is not None and self._selector is not None:
            self._selector.unregister(self._fd)
            self._fd = None

    def _step(self, db: psycopg.Connection[Any]) -> None:
        """Waits for a notification or the next chore's moment, then does the chores that are due."""
        assert self._selector is not None, "run() made it"
        timeout = max(0.0, min(chore.next_at for chore in self.chores) - time.monotonic()) if self.chores else None
        for key, _ in self._selector.select(timeout):
            if key.fd == self._wakeup_r:
                os.read(self._wakeup_r, 64)  # stop() asked: kept_running's test decides
        self._heard(db)
        for chore in self.chores:
            if time.monotonic() >= chore.next_at and not self.stopping.is_set():
                self._done(chore, db)
        self._heard(db)  # the chores' own commits: a schedule's job queued on this connection

    def _done(self, chore: Chore, db: psycopg.Connection[Any]) -> None:
        """Runs one chore alone: a refusal or a bug is logged, and the next chores run; a lost connection raises."""
        who = f"worker's {chore.name}"
        try:
            chore.do(db)
        except psycopg.Error as error:
            if not still_usable(db, error):
                raise  # the connection is gone: kept_running reconnects, and every chore runs again then
            self.refusals.heard(error, who, chore.every)
        except Exception:
            log.exception("the %s hit an error; it runs again in %.1f s", who, chore.every)
        else:
            self.refusals.mended(who)
        finally:
            chore.next_at = time.monotonic() + chore.every

    def _heard(self, db: psycopg.Connection[Any]) -> None:
        """Rings once for each notification of one of the queues that has come in; looked for after the chores too,
        as psycopg reads in the one the listener's own commit sent (a schedule's job), and select would not wake."""
        if self.listen:
            for notice in db.notifies(timeout=0):
                if notice.payload in self.queues:
                    self.doorbell.ring()
