"""The claimed rows and who holds them: a work thread's Hand, and the worker's Holdings.

A Hand is what a work thread holds of its last claim. The Holdings own every row a
worker's claims hold, from before its claim is sent until its settlement commits: in a
live Hand, in a claim whose answer has not come, or loose, let go with a `Fate` for the
supervisor to settle; every way out of a thread moves what its Hand held to loose.
"""

import enum
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..core.job import FATE, Job, StoppedPastNoReturn


class Hand:
    """The jobs of one claim on their way through a work thread; each leaves it once: run, given back or settled."""

    def __init__(self, jobs: list[Job]) -> None:
        self._lock = threading.Lock()
        self._waiting = list(jobs)  # claimed, not started
        self.running: Job | None = None
        self._performing: Job | None = None  # the job started last, until its thread is back from it
        self._started = 0.0  # when the running job started (time.monotonic())
        self._quiet: list[Job] = []  # ran and succeeded without touching the connection; not yet deleted
        self._quiet_since = 0.0  # when the oldest of them ended
        self._deleting: list[Job] = []  # quiet successes whose deletion is on its way: held until it commits
        self.claimed_at = time.monotonic()
        self.longest = 0.0  # seconds the longest of its jobs ran, settlement included

    def next(self) -> Job | None:
        """The next job to run, now marked running; None when no job waits."""
        with self._lock:
            if not self._waiting:
                return None
            self.running, self._started = self._waiting.pop(0), time.monotonic()
            self._performing = self.running
            self.running.performing = True  # before the runner looks whether it was cancelled
            return self.running

    def ended(self, job: Job, quiet_success: bool) -> None:
        """Hears that `job`, the running one, ended; a quiet success waits to be deleted with its neighbours."""
        with self._lock:
            self.longest = max(self.longest, time.monotonic() - self._started)
            self._returned()
            if self.running is not job:
                return
            if quiet_success:
                if not self._quiet:
                    self._quiet_since = time.monotonic()
                self._quiet.append(job)
            self.running = None

    def returned(self) -> None:  # its thread is back from whatever job it ran: no performer of it runs now
        with self._lock:
            self._returned()

    def _returned(self) -> None:
        if self._performing is not None:
            self._performing.performing = False
            self._performing = None

    def quiet(self, older_than: float | None = None) -> list[Job]:
        """The quiet successes to delete now (all, or none before the oldest is `older_than` s old), held until
        `deleted` hears how their deletion went."""
        if older_than is not None and (not self._quiet or time.monotonic() - self._quiet_since < older_than):
            return []  # read without the lock: only the hand's own thread adds to them
        with self._lock:
            taken, self._quiet = self._quiet, []
            self._deleting.extend(taken)
            return taken

    def deleted(self, jobs: Sequence[Job], committed: bool = True) -> None:
        """Hears that the deletion of quiet successes committed (it holds them no more), or not (they wait again)."""
        ids = {job.id for job in jobs}
        with self._lock:
            if not committed:
                self._quiet[:0] = [job for job in self._deleting if job.id in ids]
            self._deleting = [job for job in self._deleting if job.id not in ids]

    def done(self) -> list[Job]:  # takes the quiet successes not on their way to deletion, for another to delete
        with self._lock:
            taken, self._quiet = self._quiet, []
            return taken

    def waiting(self) -> list[Job]:  # takes the jobs not yet started, to give them back
        with self._lock:
            taken, self._waiting = self._waiting, []
            return taken

    def emptied(self) -> tuple[list[Job], Job | None, list[Job]]:
        """Takes everything it holds, as (waiting, running, quiet): from now on it gives out nothing."""
        with self._lock:
            taken = self._waiting, self.running, self._deleting + self._quiet
            self._waiting, self.running, self._quiet, self._deleting = [], None, [], []
            return taken

    def running_past(self, seconds: float) -> Job | None:  # the running job, if it has run longer than `seconds`
        with self._lock:
            if self.running is not None and time.monotonic() - self._started > seconds:
                return self.running
            return None

    def held(self) -> list[Job]:  # every job of the claim not yet settled or given back
        with self._lock:
            running = [self.running] if self.running is not None else []
            return self._waiting + running + self._deleting + self._quiet


class Fate(enum.Enum):
    """What the supervisor does with a loose row."""

    GIVE_BACK = "give back"  # never started, or its grace ran out before its point of no return: due again, uncounted
    DELETE = "delete"  # a quiet success whose deletion had not committed: it is done
    LAPSE = "lapse"  # it was running when its thread's connection was lost: due again now, its attempt counted
    FAIL = "fail"  # it ran and its settlement was refused: its attempt failed, with the reason


@dataclass
class Loose:
    """A row let go, and what is to become of it. `job` is None for a stray: a row only the database knew of."""

    id: int
    claim: int
    fate: Fate
    job: Job | None = None
    error: BaseException | None = None  # for FAIL: why its attempt failed


class Holdings:
    """Every row one worker holds, until its settlement commits; its methods are safe from any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._hands: set[Hand] = set()
        self._claims: set[int] = set()  # tokens of claims sent whose answer has not been read
        self._loose: dict[int, Loose] = {}
        self._settling = False  # the supervisor has taken loose rows and not yet handed back what it left

    def claiming(self, token: int) -> None:  # a claim under `token` is about to be sent: held until heard
        with self._lock:
            self._claims.add(token)

    def heard(self, token: int, hand: Hand) -> None:  # the claim's answer: its rows are `hand`'s now
        with self._lock:
            self._hands.add(hand)
            self._claims.discard(token)

    def unheard(self, token: int) -> None:  # its answer is never read: what it took is a stray, for the supervisor
        with self._lock:
            self._claims.discard(token)

    def done_with(self, hand: Hand) -> None:  # its thread is through with `hand`: what it still holds goes back
        hand.returned()
        self.dropped(hand, None)

    def dropped(self, hand: Hand, error: BaseException | None, fate: "Fate | None" = None) -> list[Loose]:
        """Lets go of everything `hand` holds, which its thread will not settle; answers what was let go: its waiting
        jobs given back, its quiet successes deleted, and the running one meets `fate` (by default failed with
        `error`, or given back when `error` is None), unless it is `past_no_return`."""
        with self._lock:
            self._hands.discard(hand)
            waiting, running, quiet = hand.emptied()
            loose = self._let_go(waiting, Fate.GIVE_BACK) + self._let_go(quiet, Fate.DELETE)
            if running is not None:
                fate, error = past_no_return(running, fate or (Fate.GIVE_BACK if error is None else Fate.FAIL), error)
                loose += self._let_go([running], fate, error)
            return loose

    def _let_go(self, jobs: list[Job], fate: Fate, error: BaseException | None = None) -> list[Loose]:
        """Lets go of `jobs` (the lock held), for the supervisor to settle as `fate` says; answers them as Loose."""
        loose = [Loose(job.id, claim_of(job), fate, job, error) for job in jobs]
        self._loose.update((entry.id, entry) for entry in loose)
        return loose

    def given_back(self, hand: Hand) -> list[Job]:
        """Takes the jobs of `hand` not yet started and lets them go, to be given back; answers them."""
        with self._lock:
            self._let_go(waiting := hand.waiting(), Fate.GIVE_BACK)
            return waiting

    def handed_on(self, hand: Hand) -> list[Job]:
        """Lets go of what `hand` holds besides its running job: the waiting ones, given back (answered), and the
        quiet successes, deleted now rather than after it: a crash meanwhile would run them again."""
        with self._lock:
            self._let_go(waiting := hand.waiting(), Fate.GIVE_BACK)
            self._let_go(hand.done(), Fate.DELETE)
            return waiting

    def hands(self) -> list[Hand]:  # the live hands, for the supervisor and the cancels
        with self._lock:
            return list(self._hands)

    def loose(self) -> list[Loose]:
        """Takes what is loose, for the supervisor to settle; what it could not settle it puts back."""
        with self._lock:
            taken, self._loose = list(self._loose.values()), {}
            self._settling = bool(taken)
            return taken

    def put_back(self, loose: Iterable[Loose]) -> None:
        """Puts back loose rows the supervisor could not settle yet: it tries again at its next look."""
        with self._lock:
            for entry in loose:
                self._loose.setdefault(entry.id, entry)
            self._settling = False

    def letting_go(self) -> bool:  # rows are loose, or being settled: on their way back to the queue, or to their end
        return self._settling or bool(self._loose)

    def strays(self, rows: Iterable[tuple[int, int]]) -> list[Loose]:
        """Of the (id, claim) rows the database says this worker holds, read just before, those nobody here holds.

        Read in that order, a row unknown here is never one on its way in: its claim's token
        was known before the claim was sent, and it leaves only once its settlement committed.
        A stray never started (a thread holds a job it starts until it lets it go), so it is
        given back, fenced by its claim.
        """
        with self._lock:
            held = {job.id for hand in self._hands for job in hand.held()}
            return [
                Loose(id, claim, Fate.GIVE_BACK)
                for id, claim in rows
                if claim not in self._claims and id not in held and id not in self._loose
            ]


def past_no_return(job: Job, fate: Fate, error: BaseException | None) -> tuple[Fate, BaseException | None]:
    """The fate of a running job let go: `fate`, unless it passed its point of no return, when it fails for good.

    What it did no rollback undoes, so it is never given back as unstarted nor tried
    again: it goes on the shelf, saying so (a lapse, its attempt counted, stays one).
    Decided under FATE, so a performer that reaches its point after this stops there.
    """
    with FATE:
        job.let_go = True
        past = job.irrevocable
    if not past or fate is Fate.LAPSE:
        return fate, error
    why = str(error) if error is not None else "its worker stopped and its grace ran out"
    stopped = StoppedPastNoReturn(f"{why}, past its point of no return: not tried again")
    stopped.__cause__ = error
    return Fate.FAIL, stopped


def claim_of(job: Job) -> int:  # the token of the claim that holds `job`
    assert job.claim is not None, "a job in a worker's hand was claimed"
    return job.claim
