"""A work thread: the loop that claims a batch of due jobs, runs it, and waits for its Doorbell.

Each runs on a connection of its own, given the worker's Settings and shared Parts, and tells its owner it
ended. What it claims is the Holdings' from before the claim is sent, then its Hand's; every way out of a step
lets go of the whole Hand. A ring wakes one thread (one per idle thread made a herd of empty claims).
"""

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

import psycopg

from ..core.job import Job, Performer
from ..store import claims, control
from ..store.frontier import Frontiers
from .connections import Backend, Connect, Reconnecting, kept_running, pooler_told
from .holdings import Fate, Hand, Holdings
from .refusals import JobLost, Refusals, expected_idle, lost, lost_attempt
from .running import Runner
from .settling import Tally

if TYPE_CHECKING:  # a copy may leave store/limits.py out
    from ..store.limits import Limits

BATCH_MAX = 100  # jobs one claim may take at the most
BATCH_TIME = 0.02  # seconds a job may run before the jobs claimed after it are given back (or a claim
# may be held while another thread idles); a job that ran longer makes the next claim take one


@dataclass(frozen=True)
class Settings:
    """What a worker was asked, and what follows from it, computed once: every part reads it, none changes it."""

    id: int  # its row in job_workers, and the mark its claims leave on the jobs they hold
    connect: Connect  # each connection it opens watched by the worker's watchdog
    queues: list[str]
    performers: Mapping[str, Performer]
    threads: int
    lease: float  # seconds the worker may fall silent before another takes it for gone
    poll: float
    listen: bool
    timeout: float | None  # seconds a job may run when its policy names no timeout

    @cached_property
    def budgets(self) -> str:  # the attempts each performer's policy allows, as the claim reads them
        return claims.budgets_of(self.performers)

    @cached_property
    def beat_every(self) -> float:  # seconds between heartbeats, reaper runs and the supervisor's reconciliations
        return self.lease / control.BEATS


class Doorbell:
    """Rings for `threads` work threads: a ring wakes one waiting thread (or `threads`), or the next one to wait."""

    def __init__(self, threads: int):
        self.threads = threads
        self._rings = 0  # rings not yet answered, at most one per thread
        self._everyone = False  # set once, when the worker stops or drains: every wait returns at once
        self._idle = 0  # threads waiting now: they found nothing due, and could start a job at once
        self._condition = threading.Condition()

    def ring(self, threads: int = 1) -> None:
        with self._condition:
            self._rings = min(self.threads, self._rings + threads)
            self._condition.notify(threads)

    def ring_everyone(self) -> None:  # now and from now on
        with self._condition:
            self._everyone = True
            self._condition.notify_all()

    def idle(self) -> bool:
        return self._idle > 0

    def wait(self, timeout: float) -> bool:
        """Waits up to `timeout` seconds for a ring; True if one came (or the worker stops), False on timeout."""
        with self._condition:
            if not self._rings and not self._everyone:
                self._idle += 1
                try:
                    self._condition.wait(timeout)
                finally:
                    self._idle -= 1
            if self._rings:
                self._rings -= 1
                return True
            return self._everyone


class Gate:
    """When a worker's threads may claim, and from which queues: once it is registered and knows the paused
    queues, and never once it stops. A drain lets each thread end when it finds nothing due."""

    def __init__(self, queues: list[str], doorbell: Doorbell) -> None:
        self.queues, self.doorbell = queues, doorbell
        self.paused: set[str] = set()  # the worker's queues paused when last read
        self.ready = threading.Event()  # set once the worker is registered and has read the paused queues
        self.stopped = threading.Event()  # nothing new is claimed once it is set
        self.drain = False  # stop(drain=True) asked
        self._awaited = {"registration", "paused queues"}  # what the gate waits to hear of before it opens

    def claimable(self) -> list[str]:
        """The queues a work thread may claim from now: those not paused; none before it is ready, none once stopped."""
        if self.stopped.is_set() or not self.ready.is_set():
            return []
        return [queue for queue in self.queues if queue not in self.paused]

    def registered(self) -> None:  # the heartbeat's word that the worker's row is written
        self._opened("registration")

    def paused_now(self, paused: set[str]) -> None:
        """Hears which queues are paused now (every poll); a resumed one wakes a thread."""
        mine = paused & set(self.queues)
        resumed, self.paused = self.paused - mine, mine
        if resumed:
            self.doorbell.ring()
        self._opened("paused queues")

    def _opened(self, heard: str) -> None:
        """Lets the threads claim, and wakes them, once the worker is registered and knows the paused queues."""
        self._awaited.discard(heard)
        if not self._awaited and not self.ready.is_set():
            self.ready.set()
            self.doorbell.ring(self.doorbell.threads)
            if self.drain:
                self.doorbell.ring_everyone()


@dataclass(frozen=True, eq=False)
class Parts:
    """The parts of one worker that its threads share, each safe from any thread."""

    holdings: Holdings  # every row its claims hold, until settled
    doorbell: Doorbell
    gate: Gate
    tally: Tally  # its counts, in all and per queue and minute
    refusals: Refusals  # each refusal of the database logged once, for all its threads
    frontiers: Frontiers  # where each queue's claims start
    limits: "Limits | None"  # its limited queues, read every poll (None: a copy without store/limits.py)


class WorkThread:
    """Work thread `n`; `ended(thread, error)` hears that it ended (of `error` when it died), unless let go."""

    def __init__(
        self, n: int, settings: Settings, parts: Parts, ended: Callable[["WorkThread", BaseException | None], None]
    ) -> None:
        self.n, self.settings, self.parts, self._ended = n, settings, parts, ended
        self.ending = threading.Event()  # set when the worker stops, or abandons this thread
        self.abandoned = False
        self.hand = Hand([])  # the jobs of its last claim not yet settled or let go
        self.backend: Backend | None = None  # the server process of this thread's connection
        self.limit = 1  # how many jobs the next claim may take
        self.room_in: float | None = None  # seconds until a full window of its last pass's queues has room
        back, ending = parts.holdings.given_back, self.ending.is_set  # the runner gives back what it did not start
        self.runner = Runner(
            settings.performers, parts.tally, settings.timeout, BATCH_TIME, stopping=ending, give_back=back
        )
        self.thread = threading.Thread(target=self._run, name=f"jobs-worker-{n}", daemon=True)

    def abandon(self) -> None:  # it claims nothing more, and ends when its performer returns
        self.abandoned = True
        self.ending.set()

    def _run(self) -> None:
        try:
            thread = Reconnecting("worker", self.parts.refusals, on_open=self._opened, on_lost=self._lost)
            kept_running(self.settings.connect, self.ending, self._claimed_and_ran, thread)
        except BaseException as error:  # not one of a step's: kept_running catches those, and carries on
            self._ended(self, error)
            return
        finally:
            self.parts.holdings.done_with(self.hand)
        if not self.abandoned:
            self._ended(self, None)

    def _opened(self, db: psycopg.Connection[Any]) -> None:  # its server process, for the supervisor to end
        self.backend = self.runner.backend = Backend(db)
        pooler_told(self.parts, self.backend, listen=self.settings.listen, poll=self.settings.poll)

    def _lost(self, error: BaseException) -> None:
        """Lets go of its Hand when a step raised: its running job lapses if the connection was lost, else fails."""
        cut_off = isinstance(error, JobLost) or (isinstance(error, psycopg.Error) and lost(error))
        self.hand.returned()
        self.parts.holdings.dropped(self.hand, lost_attempt(error), Fate.LAPSE if cut_off else Fate.FAIL)
        self.hand = Hand([])

    def _claimed_and_ran(self, db: psycopg.Connection[Any]) -> bool:
        """One pass over the queues: claim, run, settle; waits when nothing was due. False ends the thread."""
        gate, busy = self.parts.gate, False
        # A drain ends the thread only after a pass begun once it was asked (a claim under way may have read the
        # bound the drain drops), and not while rows are on their way back to the queue (loose in the holdings).
        draining = gate.drain and gate.ready.is_set() and not self.parts.holdings.letting_go()
        self.room_in = None
        for queue in gate.claimable():
            jobs = self._claimed(db, queue)
            if len(jobs) == self.limit:
                self.parts.doorbell.ring()  # a full batch: more may be due, for another thread
            if jobs:
                busy = True
                self.limit = self._ran_batch(db)
        if not busy:
            if draining and self.room_in is not None:  # due jobs a full window holds back: not drained yet
                self.ending.wait(self.room_in)
            elif draining:
                # Due means due: scheduled jobs whose moment has come are promoted first, not after the drain.
                return bool(set(claims.promoted(db)) & set(self.settings.queues)) and not self.abandoned
            else:
                self.parts.doorbell.wait(self.settings.poll)
        return not self.abandoned

    def _claimed(self, db: psycopg.Connection[Any], queue: str) -> list[Job]:
        """Claims a batch of `queue` into a new Hand; the holdings hold the claim from before it is sent."""
        settings, holdings, limited = self.settings, self.parts.holdings, self.parts.limits
        expected_idle(db, "a claim")  # else the claim would never commit
        holdings.claiming(claim := claims.new_claim())
        hold = claims.Hold(settings.lease, settings.id, settings.budgets, claim)
        after = self.parts.frontiers.bound(queue)
        try:
            if limited is None or queue not in limited.known:
                jobs = claims.claimed(db, queue, limit=self.limit, after=after, hold=hold)
            else:
                within = limited.claimed(db, queue, after, hold)
                if within.room_in is not None:  # the thread waits for it, when it drains
                    self.room_in = min(within.room_in, self.room_in or within.room_in)
                jobs = within.jobs
        except BaseException:
            holdings.unheard(claim)  # whatever it took is a stray now: the supervisor gives it back
            raise
        if not jobs:
            holdings.unheard(claim)  # it took nothing: the usual answer of an idle worker's claim
            return jobs
        self.hand = Hand(jobs)
        holdings.heard(claim, self.hand)
        if self.parts.tally.pulse is not None:
            self.parts.tally.pulse.claimed(jobs)
        return jobs

    def _ran_batch(self, db: psycopg.Connection[Any]) -> int:
        """Runs the batch in its Hand; answers how many jobs the next claim may take: batches grow while their jobs
        are quick, and fall back to one after one took longer than BATCH_TIME, or none was left to run."""
        hand, claimed = self.hand, len(self.hand.held())
        self.runner.batch(db, hand)
        self.parts.holdings.done_with(hand)
        self.hand = Hand([])
        return 1 if hand.longest > BATCH_TIME or not claimed else min(BATCH_MAX, claimed * 2)
