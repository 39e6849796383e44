"""What a work thread holds of its last claim: jobs waiting their turn, the one running, and quiet successes.

The runner (runner.py) takes the jobs of a claimed batch from its Hand one at a time.
The worker's watch (workers.py), on the listener's thread, takes the waiting ones back
out of it when the running job has run longer than BATCH_TIME, or the worker stops,
so no job waits on a thread that cannot start it now; and the heartbeat reads what it
holds. A lock makes each job leave the hand once: run, given back or settled.
"""

import threading
import time
from collections.abc import Sequence

from .job import Job


class Hand:
    """The jobs of one claim on their way through a work thread."""

    def __init__(self, jobs: list[Job]) -> None:
        self._lock = threading.Lock()
        self._waiting = list(jobs)  # claimed, not started
        self.running: Job | None = None
        self._started = 0.0  # when the running job started (time.monotonic())
        self._quiet: list[Job] = []  # ran and succeeded without touching the connection; not yet deleted
        self._quiet_since = 0.0  # when the oldest of them ended
        self.claimed_at = time.monotonic()
        self.longest = 0.0  # seconds the longest of its jobs ran, settlement included

    def next(self) -> Job | None:
        """The next job to run, now marked running; None when no job waits."""
        with self._lock:
            if not self._waiting:
                return None
            self.running, self._started = self._waiting.pop(0), time.monotonic()
            return self.running

    def ended(self, quiet_success: bool) -> None:
        """Hears that the running job ended; a quiet success waits to be deleted with its neighbours."""
        with self._lock:
            self.longest = max(self.longest, time.monotonic() - self._started)
            if quiet_success:
                if not self._quiet:
                    self._quiet_since = time.monotonic()
                assert self.running is not None, "a job ends after next() started it"
                self._quiet.append(self.running)
            self.running = None

    def quiet(self, older_than: float | None = None) -> list[Job]:
        """Takes the quiet successes to settle them: all, or none unless the oldest ended `older_than` s ago."""
        with self._lock:
            if older_than is not None and (not self._quiet or time.monotonic() - self._quiet_since < older_than):
                return []
            taken, self._quiet = self._quiet, []
            return taken

    def kept(self, waiting: Sequence[Job] = (), quiet: Sequence[Job] = ()) -> None:
        """Takes back jobs taken out to be given back or settled, when that failed: they are still held."""
        with self._lock:
            self._waiting[:0] = waiting
            self._quiet[:0] = quiet

    def waiting(self) -> list[Job]:
        """Takes the jobs not yet started, to give them back."""
        with self._lock:
            taken, self._waiting = self._waiting, []
            return taken

    def running_past(self, seconds: float) -> Job | None:
        """The running job, if it has run longer than `seconds`."""
        with self._lock:
            if self.running is not None and time.monotonic() - self._started > seconds:
                return self.running
            return None

    def held(self) -> list[Job]:
        """Every job of the claim not yet settled or given back, for the heartbeat."""
        with self._lock:
            return self._waiting + ([self.running] if self.running is not None else []) + self._quiet
