"""What a work thread holds of its last claim: jobs waiting their turn, the one running, and quiet successes.

The runner (running.py) takes the jobs of a claimed batch from its Hand one at a time.
The worker's ledger (holdings.py) holds every live Hand: the keeper (supervisor.py) takes the
waiting jobs back out of one whose running job is slow, and a thread that is lost or let
go has its whole Hand taken at once (`emptied`), after which the Hand gives out nothing
more. A lock makes each job leave the hand once: run, given back or settled. Apart from
that, each job it starts is marked `performing` until its thread is back from it, let
go or not, for the worker to count it against its limits till then (holdings.py).
"""

import threading
import time
from collections.abc import Sequence

from ..core.job import Job


class Hand:
    """The jobs of one claim on their way through a work thread."""

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
        """Hears that `job`, the running one, ended; a quiet success waits to be deleted with its neighbours.

        A job taken out of the hand meanwhile (`emptied`) is the ledger's now: nothing is kept of it here.
        """
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

    def returned(self) -> None:
        """Hears that its thread is back from whatever job it was running: no performer of it runs now."""
        with self._lock:
            self._returned()

    def _returned(self) -> None:
        if self._performing is not None:
            self._performing.performing = False
            self._performing = None

    def quiet(self, older_than: float | None = None) -> list[Job]:
        """The quiet successes to delete now: all, or none unless the oldest ended `older_than` s ago.

        They are still held until `deleted` hears that their deletion committed, or `kept` that it failed.
        """
        with self._lock:
            if older_than is not None and (not self._quiet or time.monotonic() - self._quiet_since < older_than):
                return []
            taken, self._quiet = self._quiet, []
            self._deleting.extend(taken)
            return taken

    def deleted(self, jobs: Sequence[Job]) -> None:
        """Hears that the deletion of quiet successes committed: the hand holds them no more."""
        done = {job.id for job in jobs}
        with self._lock:
            self._deleting = [job for job in self._deleting if job.id not in done]

    def kept(self, jobs: Sequence[Job]) -> None:
        """Hears that the deletion of quiet successes failed: they wait to be deleted again."""
        failed = {job.id for job in jobs}
        with self._lock:
            self._quiet[:0] = [job for job in self._deleting if job.id in failed]
            self._deleting = [job for job in self._deleting if job.id not in failed]

    def done(self) -> list[Job]:
        """Takes the quiet successes not yet on their way to deletion, for someone else to delete."""
        with self._lock:
            taken, self._quiet = self._quiet, []
            return taken

    def waiting(self) -> list[Job]:
        """Takes the jobs not yet started, to give them back."""
        with self._lock:
            taken, self._waiting = self._waiting, []
            return taken

    def emptied(self) -> tuple[list[Job], Job | None, list[Job]]:
        """Takes everything it holds, as (waiting, running, quiet): from now on it gives out nothing."""
        with self._lock:
            taken = self._waiting, self.running, self._deleting + self._quiet
            self._waiting, self.running, self._quiet, self._deleting = [], None, [], []
            return taken

    def running_past(self, seconds: float) -> Job | None:
        """The running job, if it has run longer than `seconds`."""
        with self._lock:
            if self.running is not None and time.monotonic() - self._started > seconds:
                return self.running
            return None

    def held(self) -> list[Job]:
        """Every job of the claim not yet settled or given back."""
        with self._lock:
            running = [self.running] if self.running is not None else []
            return self._waiting + running + self._deleting + self._quiet
