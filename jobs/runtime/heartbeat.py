"""The heartbeat: the thread that says a worker is alive, and does nothing else.

On a connection of its own, it registers the worker in job_workers (workers_table.py) and then
moves the worker's row's beat_at on every lease / BEATS. That row is the worker's own,
which no statement on jobs ever locks, so a beat never waits on a job; and nothing else
runs here, no app code and no statement on jobs, so no hook, no chore and no lock can
hold a beat up. When the worker has ended it marks the row stopped.
"""

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import psycopg

from ..store import workers_table
from .connections import Connect, closed, kept_running, opened
from .refusals import Complaints

log = logging.getLogger("jobs")


class Heartbeat:
    """Beats the row `registration` describes until `ended` is set; `run` is the thread's body.

    on_registered() is called once the row is written, each time it is: the worker's
    threads may claim from then on.
    """

    def __init__(
        self,
        connect: Connect,
        registration: workers_table.Registration,
        *,
        ended: threading.Event,
        complaints: Complaints,
        on_registered: Callable[[], None],
    ) -> None:
        self.connect, self.registration, self.ended = connect, registration, ended
        self.complaints, self.on_registered = complaints, on_registered
        self.every = registration.lease / workers_table.BEATS
        self._nudged = threading.Event()  # set to end a wait at once: the worker ended
        self._next_beat = 0.0

    def run(self) -> None:
        kept_running(
            self.connect,
            self.ended,
            self._step,
            who="worker's heartbeat",
            complaints=self.complaints,
            on_open=self._registered,
        )
        self._signed_off()

    def interrupted(self) -> None:
        """Ends the heartbeat's wait at once."""
        self._nudged.set()

    def _registered(self, db: psycopg.Connection[Any]) -> None:
        """On a new connection: records the worker (or takes its row back), then lets it claim."""
        ended = workers_table.registered(db, self.registration)
        if ended is not None:
            log.warning(
                "this worker was taken for gone (%s) while it lived: jobs it held may have gone to other "
                "workers, and their settlement here will be refused",
                ended,
            )
        self.on_registered()
        self._next_beat = time.monotonic() + self.every

    def _step(self, db: psycopg.Connection[Any]) -> None:
        """Waits for the next beat, then beats."""
        self._nudged.wait(max(0.0, self._next_beat - time.monotonic()))
        self._nudged.clear()
        if time.monotonic() < self._next_beat:
            return  # nudged: the worker ended, and kept_running sees it
        if not workers_table.beaten(db, self.registration.id):
            self._registered(db)  # a reaper took this worker for gone while it lived: it says so, and is back
        self._next_beat = time.monotonic() + self.every

    def _signed_off(self) -> None:
        """Marks the worker's row stopped, on a connection of its own (the heartbeat's may be gone)."""
        db: psycopg.Connection[Any] | None = None
        try:
            db = opened(self.connect)
            workers_table.signed_off(db, self.registration.id)
        except Exception as error:  # its row then falls silent, and another worker's reaper marks it gone
            log.warning("the worker could not mark its row stopped (%s); it will be taken for gone", error)
        finally:
            closed(db)
