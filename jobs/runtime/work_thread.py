"""A work thread: the loop that claims a batch of due jobs, runs it, and waits for its Doorbell.

A Worker (worker.py) runs several, each on a connection of its own. What a thread claims is
the ledger's (holdings.py) from before the claim is sent: the claim's token while its answer
is on its way, then the thread's Hand. Every way out of a step lets go of the whole
Hand in the ledger, for the keeper (supervisor.py) to settle, and the thread carries on; one
that ends for any other reason says why and is replaced. Its connection's backend is kept,
so that the keeper can end the transaction of a job it must abandon.

One ring of the Doorbell wakes one thread: waking every idle thread for every notification
made a herd of empty claims. The listener rings once per notification or promotion, and a
thread that claimed a full batch rings again, since more may be due.
"""

import threading
from collections.abc import Mapping
from typing import Any, Protocol

import psycopg

from ..core.job import Job, Performer
from ..store import claims, limits
from ..store.frontier import Frontiers
from ..store.limits import Limits
from ..store.pulse import Pulse
from .connections import Backend, Connect, kept_running, pooler_told
from .holdings import Fate, Hand, Ledger
from .refusals import Complaints, lost
from .running import Counts, JobLost, lost_attempt, performed
from .transaction import expected_idle

BATCH_MAX = 100  # jobs one claim may take at the most
BATCH_TIME = 0.02  # seconds a job may run before the jobs claimed after it are given back (or a claim
# may be held while another thread idles); a job that ran longer makes the next claim take one


class Doorbell:
    """Rings for `threads` work threads; `wait` returns True when rung (or stopping), False on timeout."""

    def __init__(self, threads: int):
        self._threads = threads
        self._rings = 0  # rings not yet answered, at most one per thread
        self._everyone = False  # set once, when the worker stops or drains: every wait returns at once
        self._idle = 0  # threads waiting now: they found nothing due
        self._condition = threading.Condition()

    def ring(self) -> None:
        """Wakes one waiting thread, or the next one to wait."""
        with self._condition:
            self._rings = min(self._threads, self._rings + 1)
            self._condition.notify()

    def ring_everyone(self) -> None:
        """Wakes every thread, now and from now on."""
        with self._condition:
            self._everyone = True
            self._condition.notify_all()

    def idle(self) -> bool:
        """Whether a thread waits now, having found nothing due: it could start a job at once."""
        return self._idle > 0

    def wait(self, timeout: float) -> bool:
        """Waits up to `timeout` seconds for a ring; True if one came."""
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


class Shift(Protocol):
    """What a work thread reads of its worker (workers.Worker)."""

    id: int
    connect: Connect
    performers: Mapping[str, Performer]
    queues: list[str]
    lease: float
    poll: float
    listen: bool
    timeout: float | None
    budgets: str
    counts: Counts
    pulse: Pulse
    complaints: Complaints
    ledger: Ledger
    doorbell: Doorbell
    frontiers: Frontiers
    limits: Limits

    @property
    def draining(self) -> bool: ...
    def claimable(self) -> list[str]: ...
    def thread_ended(self, work: "WorkThread") -> None: ...
    def thread_died(self, work: "WorkThread", error: BaseException) -> None: ...


class WorkThread:
    """Work thread `n` of `worker`; `start` runs it, `abandon` lets it go."""

    def __init__(self, worker: Shift, n: int) -> None:
        self.worker, self.n = worker, n
        self.ending = threading.Event()  # set when the worker stops, or abandons this thread
        self.abandoned = False
        self.hand = Hand([])  # the jobs of its last claim not yet settled or let go
        self.backend: Backend | None = None  # the server process of this thread's connection (connections.py)
        self.limit = 1  # how many jobs the next claim may take
        self.room_in: float | None = None  # seconds until a full window of its last pass's queues has room
        self.thread = threading.Thread(target=self._run, name=f"jobs-worker-{n}", daemon=True)

    def start(self) -> "WorkThread":
        self.thread.start()
        return self

    def abandon(self) -> None:
        """Lets the thread go: it claims nothing more and ends when its performer returns (supervisor.py)."""
        self.abandoned = True
        self.ending.set()

    def _run(self) -> None:
        try:
            kept_running(
                self.worker.connect,
                self.ending,
                self._claimed_and_ran,
                who="worker",
                complaints=self.worker.complaints,
                on_open=self._opened,
                on_lost=self._lost,
            )
        except BaseException as error:  # not one of a step's: kept_running catches those, and carries on
            self.worker.thread_died(self, error)
            return
        finally:
            self.worker.ledger.done_with(self.hand)
        if not self.abandoned:
            self.worker.thread_ended(self)

    def _opened(self, db: psycopg.Connection[Any]) -> None:
        """On a new connection: learns its server process, for the keeper to end it if it must."""
        self.backend = Backend(db)
        pooler_told(self.worker, self.backend, listen=self.worker.listen, poll=self.worker.poll)

    def _lost(self, error: BaseException) -> None:
        """Lets go of what the thread held when a step raised.

        Its running job lapses when the connection was lost (its writes went with it, and
        it is due again at once), and fails with the reason when a settlement was refused.
        """
        cut_off = isinstance(error, JobLost) or (isinstance(error, psycopg.Error) and lost(error))
        fate = Fate.LAPSE if cut_off else Fate.FAIL
        self.hand.returned()
        self.worker.ledger.dropped(self.hand, lost_attempt(error), fate)
        self.hand = Hand([])

    def _claimed_and_ran(self, db: psycopg.Connection[Any]) -> bool:
        """One pass over the queues: claim, run, settle; waits when nothing was due. False ends the thread."""
        worker = self.worker
        busy = False
        # A drain ends the thread only after a pass that began once the drain was asked:
        # a claim already under way then may still have read the bound the drain drops.
        # Nor while rows are on their way back to the queue (loose in the ledger).
        draining = worker.draining and not worker.ledger.letting_go()
        self.room_in = None
        for queue in worker.claimable():
            jobs = self._claimed(db, queue)
            if len(jobs) == self.limit:
                worker.doorbell.ring()  # a full batch: more may be due, for another thread
            if jobs:
                busy = True
                self.limit = self._ran_batch(db)
        if not busy:
            if draining and self.room_in is not None:  # due jobs a full window holds back: not drained yet
                self.ending.wait(self.room_in)
                return not self.abandoned
            if draining:
                # Due means due: scheduled jobs whose moment has come are promoted first,
                # rather than left for the listener's next promotion after the drain ended.
                return bool(set(claims.promoted(db)) & set(worker.queues)) and not self.abandoned
            worker.doorbell.wait(worker.poll)
        return not self.abandoned

    def _claimed(self, db: psycopg.Connection[Any], queue: str) -> list[Job]:
        """Claims a batch of `queue` into a new Hand; the ledger holds the claim from before it is sent."""
        worker = self.worker
        expected_idle(db, "a claim")  # else the claim would never commit
        claim = claims.new_claim()
        worker.ledger.claiming(claim)
        after, lease, budgets, limit = worker.frontiers.bound(queue), worker.lease, worker.budgets, self.limit
        try:
            known = worker.limits.known.get(queue)
            if known is not None:
                within = limits.claimed(
                    db, queue, after=after, lease=lease, worker=worker.id, budgets=budgets, claim=claim, known=known
                )
                if within.room_in is not None:
                    worker.limits.has_room_in(within.room_in)  # one thread is woken then, not every idle one
                    self.room_in = within.room_in if self.room_in is None else min(self.room_in, within.room_in)
                jobs = within.jobs
            else:
                jobs = claims.claimed(
                    db, queue, limit=limit, after=after, lease=lease, worker=worker.id, budgets=budgets, claim=claim
                )
        except BaseException:
            worker.ledger.unheard(claim)  # whatever it took is a stray now: the keeper gives it back
            raise
        self.hand = Hand(jobs)
        worker.ledger.heard(claim, self.hand)
        worker.pulse.claimed(jobs)
        return jobs

    def _ran_batch(self, db: psycopg.Connection[Any]) -> int:
        """Runs the claimed batch in the thread's Hand and returns how many jobs the next claim may take.

        Batches grow while their jobs are quick, and fall back to one job as soon as one
        takes longer than BATCH_TIME: the jobs claimed after a slower one are given back
        (by the keeper while it runs, or after BATCH_TIME while another thread idles, and
        by the runner once it returned), so none waits on a slow job beside an idle thread.
        """
        hand = self.hand
        claimed = hand.held()
        performed(
            db,
            claimed,
            self.worker.performers,
            counts=self.worker.counts,
            stopping=self.ending.is_set,
            timeout=self.worker.timeout,
            hand=hand,
            patience=BATCH_TIME,
            backend=self.backend,
            give_back=self.worker.ledger.given_back,
            pulse=self.worker.pulse,
        )
        self.worker.ledger.done_with(hand)
        self.hand = Hand([])
        if hand.longest > BATCH_TIME:
            return 1
        return min(BATCH_MAX, len(claimed) * 2)
