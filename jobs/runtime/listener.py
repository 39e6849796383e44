"""The listener: the thread beside a worker's work threads that wakes them and does the chores.

On a connection of its own it LISTENs for the notification `later` sends on commit and
wakes a work thread at once (work_thread.py's Doorbell). On that connection it also runs the
worker's chores (maintenance.py), each on its own timer and each alone: a chore the database
refuses, or one that fails, is logged and the others run on; a lost connection
reconnects; each chore's wait on a lock is bounded by CHORE_LOCK_WAIT. Once the worker
has stopped, the chores whose at_stop asks it (the pulse, with counts left) run once more
on that connection, if it is open then (not while cut off: what they would have written is
lost, and logged). The heartbeat
runs beside it on a thread and a connection of its own (heartbeat.py), so no chore's
statement ever holds it up.
"""

import logging
import os
import selectors
import threading
import time
from typing import Any

import psycopg

from .connections import Connect, kept_running
from .maintenance import Chore
from .refusals import Complaints, kept
from .work_thread import Doorbell

POLL_INTERVAL = 1.0  # seconds an idle worker waits before it looks again without being woken
CHORE_LOCK_WAIT = 1.0  # seconds a chore's statement may wait on a lock before it gives up, to run again later

log = logging.getLogger("jobs")


class Listener:
    """Wakes the work threads of `queues` and runs `chores` (chores.Chore) on their timers; `run` is the thread's body.

    stopping: set when the last work thread has ended; `interrupted` ends a wait at once.
    doorbell: how the work threads are woken (work_thread.py): one ring per notification.
    complaints: the worker's record of the database's refusals (refusals.py).
    """

    def __init__(
        self,
        connect: Connect,
        queues: list[str],
        *,
        listen: bool,
        chores: list[Chore],
        stopping: threading.Event,
        doorbell: Doorbell,
        complaints: Complaints,
    ) -> None:
        self.connect, self.queues, self.listen, self.chores = connect, queues, listen, chores
        self.stopping, self.doorbell, self.complaints = stopping, doorbell, complaints
        read, write = os.pipe()  # a byte written here ends the wait in select
        self._wakeup_r = read
        self._wakeup_w: int | None = write  # None once both ends are closed
        self._selector: selectors.BaseSelector | None = None
        self._fd: int | None = None

    def run(self) -> None:
        """Listens and keeps the timers until the worker stops, reconnecting when cut off."""
        with selectors.DefaultSelector() as self._selector:
            self._selector.register(self._wakeup_r, selectors.EVENT_READ)
            kept_running(
                self.connect,
                self.stopping,
                self._step,
                who="worker's listener",
                complaints=self.complaints,
                on_open=self._listening,
                on_lost=self._unlistened,
                on_close=self._last_chores,
            )
        self._left_undone()

    def _last_chores(self, db: psycopg.Connection[Any]) -> None:
        """Runs once more, each alone, the chores whose at_stop asks it, on the listener's last connection."""
        for chore in self.chores:
            if chore.at_stop is not None and chore.at_stop():
                try:
                    self._done(chore, db)
                except psycopg.Error as error:  # the connection was lost: _done logged every other error
                    log.error("the worker's last %s was cut off: %s", chore.name, error)

    def _left_undone(self) -> None:
        """Logs the chores that still had something to do when the listener ended (it was cut off then)."""
        for chore in self.chores:
            if chore.at_stop is not None and chore.at_stop():
                log.error("the worker stopped while cut off from the database: its last %s is lost", chore.name)

    def interrupted(self) -> None:
        """Ends the listener's wait at once (it then sees `stopping`)."""
        if self._wakeup_w is not None:
            os.write(self._wakeup_w, b"x")

    def closed(self) -> None:
        """Closes the wake-up pipe, once the thread has ended."""
        if self._wakeup_w is not None:
            os.close(self._wakeup_r)
            os.close(self._wakeup_w)
            self._wakeup_w = None

    def _listening(self, db: psycopg.Connection[Any]) -> None:
        """On a new connection: bound its waits on locks, LISTEN, and wake a thread, as a job may have come meanwhile.

        The bound is the session's: not behind PgBouncer in transaction mode (listen=False),
        where a session's setting reaches other clients, and a chore waits as its role allows.
        """
        assert self._selector is not None, "run() made it"
        if self.listen:
            db.execute("SELECT set_config('lock_timeout', %s, false)", [f"{round(CHORE_LOCK_WAIT * 1000)}ms"])
            db.execute("LISTEN jobs")
            self._fd = db.fileno()
            self._selector.register(self._fd, selectors.EVENT_READ)
            self.doorbell.ring()

    def _unlistened(self, error: BaseException | None = None) -> None:
        assert self._selector is not None, "run() made it"
        if self._fd is not None:
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
        """Runs one chore alone: a refusal or a bug is logged and the next chores still run; a lost connection is
        raised."""
        who = f"worker's {chore.name}"
        try:
            chore.do(db)
        except psycopg.Error as error:
            if not kept(db, error):
                raise  # the connection is gone: kept_running reconnects, and every chore runs again then
            self.complaints.heard(error, who, chore.every)
        except Exception:
            log.exception("the %s hit an error; it runs again in %.1f s", who, chore.every)
        else:
            self.complaints.mended(who)
        finally:
            chore.next_at = time.monotonic() + chore.every

    def _heard(self, db: psycopg.Connection[Any]) -> None:
        """Rings once for each notification of one of the queues that has come in.

        psycopg takes a notification in whenever it reads from the connection, so one
        sent by a commit of the listener's own (the chores queue a schedule's jobs on
        this connection) is already read, and select would not wake for it: it is
        looked for after the chores too, or it would wait for the next timer.
        """
        if self.listen:
            for notice in db.notifies(timeout=0):
                if notice.payload in self.queues:
                    self.doorbell.ring()
