"""A work thread: the loop that claims a batch of due jobs, hands it to the runner and waits.

A Worker (workers.py) runs several, each on a connection of its own. What a thread
claims is the worker's ledger's (ledger.py) from before the claim is sent: the claim's
token while its answer is on its way, then the thread's Hand (hand.py). Every way out
of a step (a lost connection, a refused statement, any exception) lets go of the whole
Hand in the ledger, for the keeper (keeper.py) to settle, and the thread carries on; a
thread that ends for any other reason says why and is replaced. Its connection's
backend is kept, so that the keeper can end the transaction of a job it must abandon.
"""

import logging
import threading
from collections.abc import Mapping
from typing import Any, Protocol

import psycopg

from . import limits, store
from .backends import Backend, told
from .complaints import Complaints, lost
from .connections import Connect, kept_running
from .doorbell import Doorbell
from .frontier import Frontiers
from .hand import Hand
from .job import Job, Performer
from .ledger import Fate, Ledger
from .limits import Limits
from .pulse import Pulse
from .runner import Counts, JobLost, lost_attempt, performed
from .settlement import expected_idle

BATCH_MAX = 100  # jobs one claim may take at the most
BATCH_TIME = 0.02  # seconds a job may run before the jobs claimed after it are given back (or a claim
# may be held while another thread idles); a job that ran longer makes the next claim take one

log = logging.getLogger("jobs")


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
        self.backend: Backend | None = None  # the server process of this thread's connection (backends.py)
        self.limit = 1  # how many jobs the next claim may take
        self.room_in: float | None = None  # seconds until a full window of its last pass's queues has room
        self.thread = threading.Thread(target=self._run, name=f"jobs-worker-{n}", daemon=True)

    def start(self) -> "WorkThread":
        self.thread.start()
        return self

    def abandon(self) -> None:
        """Lets the thread go: it claims nothing more and ends when its performer returns (keeper.py)."""
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
        told(self.worker, self.backend)

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
                return bool(set(store.promoted(db)) & set(worker.queues)) and not self.abandoned
            worker.doorbell.wait(worker.poll)
        return not self.abandoned

    def _claimed(self, db: psycopg.Connection[Any], queue: str) -> list[Job]:
        """Claims a batch of `queue` into a new Hand; the ledger holds the claim from before it is sent."""
        worker = self.worker
        expected_idle(db, "a claim")  # else the claim would never commit
        claim = store.new_claim()
        worker.ledger.claiming(claim)
        after, lease, budgets = worker.frontiers.bound(queue), worker.lease, worker.budgets
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
                jobs = store.claimed(
                    db,
                    queue,
                    limit=self.limit,
                    after=after,
                    lease=lease,
                    worker=worker.id,
                    budgets=budgets,
                    claim=claim,
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

        Batches grow while their jobs are quick, and fall back to one job as soon as
        one takes longer than BATCH_TIME: the keeper gives back the jobs claimed after a
        job that runs longer than that, or after BATCH_TIME while another thread idles
        (keeper.py), and the runner lets them go itself after a performer that ran
        longer (they could have waited that long for any thread), so they wait on no
        slow job and no thread idles beside them, and the next claims stay small while
        jobs are slow.
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
