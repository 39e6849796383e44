"""The watchdog and the heartbeat: a bound on how long a thread waits for the database to answer, and
the thread that says a worker is alive.

A connection can go silent without being closed. A NAT or a firewall that forgets it
drops its packets: the kernel's keepalives see that (connections.keepalives). A hung
pooler or proxy takes the packets and never answers: only a bound on the wait for an
answer sees that. psycopg waits for every answer through the connection's `wait`
method, so `watched(db)` wraps that method to note when each wait began, and the
watchdog's thread looks every tenth of its bound. A wait older than the bound is cut:
the connection's socket is shut down, so the thread waiting on it gets an
OperationalError at once and reconnects, as after any lost connection. Only that
connection is cut: another may be idle because nothing asked it anything (a job's
connection between two of its statements), and one whose wait is merely slow (a chore
on a lock) says nothing of the others; each of them meets the bound on its own wait.

A wait that `exempt()` says is not the watchdog's (a performer's statement, which may
rightly run long: the job's timeout bounds it) is not watched. `on_cut()` hears of each
look that cut connections, for a pool to clear out the ones it holds.

The heartbeat has a thread and a connection of its own: it registers the worker in
job_workers and moves its row's beat_at every lease / BEATS, and does nothing else, so no
hook, chore or lock can hold a beat up. When the worker has ended it marks the row stopped.
"""

import logging
import os
import socket
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

import psycopg

from ..store import control, schema
from .connections import Reconnecting, closed, kept_running, opened
from .refusals import Refusals
from .work_thread import Settings

log = logging.getLogger("jobs")


class Watchdog:
    """Cuts the connections it watches once one of their waits for an answer passes `within` seconds."""

    def __init__(
        self, within: float, *, exempt: Callable[[], bool] = lambda: False, on_cut: Callable[[], None] = lambda: None
    ) -> None:
        if not within > 0:
            raise ValueError(f"a watchdog needs a bound of more than 0 s, not {within!r}")
        self.within, self.exempt, self.on_cut = within, exempt, on_cut
        self._lock = threading.Lock()
        self._watched: weakref.WeakKeyDictionary[psycopg.Connection[Any], Wait] = (
            weakref.WeakKeyDictionary()
        )  # connection -> Wait
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def watched(self, db: psycopg.Connection[Any]) -> psycopg.Connection[Any]:
        """Watches `db`'s waits for answers from now on; returns `db`."""
        wait, mark = db.wait, Wait()
        with self._lock:
            self._watched[db] = mark

        # Every statement passes here, so a wait takes no lock: it writes its mark's one
        # attribute, which the watchdog's thread reads whole.
        def waited(*args: Any, **kwargs: Any) -> Any:
            mark.since = None if self.exempt() else time.monotonic()
            try:
                return wait(*args, **kwargs)
            finally:
                mark.since = None

        # A method replaced on one connection, on purpose: mypy knows methods as the class's alone.
        db.wait = waited  # type: ignore[method-assign]
        self._started()
        return db

    def connecting(self, connect: Callable[[], psycopg.Connection[Any]]) -> Callable[[], psycopg.Connection[Any]]:
        """`connect`, with each connection it opens watched."""
        return lambda: self.watched(connect())

    def stop(self) -> None:
        """Ends the watchdog's thread."""
        self._stopping.set()

    def _started(self) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="jobs-watchdog", daemon=True)
                self._thread.start()

    def _run(self) -> None:
        while not self._stopping.wait(self.within / 10):
            silent = self._silent()
            for db, began in silent:
                log.warning(
                    "a database connection (backend %s) gave no answer for %.1f s; it is cut, and "
                    "its thread reconnects",
                    backend_of(db),
                    time.monotonic() - began,
                )
                cut(db)
            if silent:
                self.on_cut()

    def _silent(self) -> list[tuple[psycopg.Connection[Any], float]]:
        """The connections to cut now, with when their wait began: those whose own wait is past the bound."""
        now = time.monotonic()
        with self._lock:
            silent = [
                (db, since)
                for db, mark in list(self._watched.items())
                if (since := mark.since) is not None and now - since > self.within
            ]
            for db, _ in silent:
                del self._watched[db]  # cut once; a connection cut is done with
            return silent


class Wait:
    """A connection's state: `since`, when its current wait for an answer began (None: not waiting, or exempt)."""

    def __init__(self) -> None:
        self.since: float | None = None


def cut(db: psycopg.Connection[Any]) -> None:
    """Shuts down `db`'s socket, so that whatever waits on it, now or next, fails at once."""
    try:
        fd = db.fileno()
    except Exception:
        return  # closed already
    try:
        # A second descriptor of the same socket: closing it leaves libpq's own open,
        # while the shutdown ends the connection for both.
        with socket.socket(fileno=os.dup(fd)) as sock:
            sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass  # the connection ended meanwhile


def backend_of(db: psycopg.Connection[Any]) -> int | str:
    """The server process of `db`, for the log."""
    try:
        return db.info.backend_pid
    except Exception:
        return "unknown"


class Heartbeat:
    """Beats the row of the worker `settings` describe until `ended` is set; `run` is the thread's body.

    on_registered() is called once the row is written, each time it is: the worker's
    threads may claim from then on.
    """

    def __init__(
        self, settings: Settings, ended: threading.Event, refusals: Refusals, on_registered: Callable[[], None]
    ) -> None:
        self.connect, self.ended, self.every = settings.connect, ended, settings.beat_every
        self.refusals, self.on_registered = refusals, on_registered
        self.registration = control.Registration(
            settings.id, settings.queues, settings.threads, settings.lease, schema.VERSION
        )
        self._nudged = threading.Event()  # set to end a wait at once: the worker ended
        self._next_beat = 0.0

    def run(self) -> None:
        thread = Reconnecting("worker's heartbeat", self.refusals, on_open=self._registered)
        kept_running(self.connect, self.ended, self._step, thread)
        self._signed_off()

    def interrupted(self) -> None:
        """Ends the heartbeat's wait at once."""
        self._nudged.set()

    def _registered(self, db: psycopg.Connection[Any]) -> None:
        """On a new connection: records the worker (or takes its row back), then lets it claim."""
        ended = control.registered(db, self.registration)
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
        if not control.beaten(db, self.registration.id):
            self._registered(db)  # a reaper took this worker for gone while it lived: it says so, and is back
        self._next_beat = time.monotonic() + self.every

    def _signed_off(self) -> None:
        """Marks the worker's row stopped, on a connection of its own (the heartbeat's may be gone)."""
        db: psycopg.Connection[Any] | None = None
        try:
            db = opened(self.connect)
            control.signed_off(db, self.registration.id)
        except Exception as error:  # its row then falls silent, and another worker's reaper marks it gone
            log.warning("the worker could not mark its row stopped (%s); it will be taken for gone", error)
        finally:
            closed(db)
