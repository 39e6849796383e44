"""The listener: the one thread beside a worker's work threads that keeps the worker's time.

On a connection of its own it LISTENs for the notification `later` sends on commit and
wakes a work thread at once (doorbell.py). On that connection it also runs the worker's
chores on their timers (chores.py): every POLL_INTERVAL the poll's, every half lease the
heartbeat's, and, while jobs are in hand, every WATCH_INTERVAL a look for one past its
timeout or grace.
"""

import logging
import os
import selectors
import threading
import time

from .connections import kept_running

POLL_INTERVAL = 1.0  # seconds an idle worker waits before it looks again without being woken
WATCH_INTERVAL = 0.1  # seconds between looks at the jobs in hand for one past its timeout or grace

log = logging.getLogger("jobs")


class Listener:
    """Wakes the work threads of `queues` and runs the chores on their timers; `run` is the thread's body.

    held(): the batches of jobs the work threads hold now.
    polled(db), beaten(db): the chores of each `poll` seconds and of each half `lease`.
    watch(db): looks at the jobs in hand for one past its timeout or grace, every
    WATCH_INTERVAL while there are any.
    stopping: set when the last work thread has ended; `interrupted` ends a wait at once.
    doorbell: how the work threads are woken (doorbell.py): one ring per notification.
    complaints: the worker's record of the database's refusals (complaints.py).
    """

    def __init__(self, connect, queues, *, poll, lease, listen, held, polled, beaten, watch,
                 stopping: threading.Event, doorbell, complaints):
        self.connect, self.queues, self.poll, self.lease, self.listen = connect, queues, poll, lease, listen
        self.held, self.polled, self.beaten, self.watch = held, polled, beaten, watch
        self.stopping, self.doorbell, self.complaints = stopping, doorbell, complaints
        self._wakeup_r, self._wakeup_w = os.pipe()  # a byte written here ends the wait in select
        self._selector: selectors.BaseSelector | None = None
        self._fd: int | None = None
        self._next_poll = self._next_beat = 0.0

    def run(self) -> None:
        """Listens and keeps the timers until the worker stops, reconnecting when cut off."""
        self._next_poll, self._next_beat = time.monotonic(), time.monotonic() + self.lease / 2
        with selectors.DefaultSelector() as self._selector:
            self._selector.register(self._wakeup_r, selectors.EVENT_READ)
            kept_running(self.connect, self.stopping, self._step, who="worker's listener",
                         complaints=self.complaints, on_open=self._listening, on_lost=self._unlistened)

    def interrupted(self) -> None:
        """Ends the listener's wait at once (it then sees `stopping`)."""
        if self._wakeup_w is not None:
            os.write(self._wakeup_w, b"x")

    def closed(self) -> None:
        """Closes the wake-up pipe, once the thread has ended."""
        if self._wakeup_w is not None:
            os.close(self._wakeup_r)
            os.close(self._wakeup_w)
            self._wakeup_r = self._wakeup_w = None

    def _listening(self, db) -> None:
        """On a new connection: LISTEN, and wake a thread, as a job may have come meanwhile."""
        if self.listen:
            db.execute("LISTEN jobs")
            self._fd = db.fileno()
            self._selector.register(self._fd, selectors.EVENT_READ)
            self.doorbell.ring()

    def _unlistened(self) -> None:
        if self._fd is not None:
            self._selector.unregister(self._fd)
            self._fd = None

    def _step(self, db) -> None:
        """Waits for a notification or the next timer, then does what is due."""
        held = self.held()
        timeout = max(0.0, min(self._next_beat, self._next_poll) - time.monotonic())
        for key, _ in self._selector.select(min(timeout, WATCH_INTERVAL) if held else timeout):
            if key.fd == self._wakeup_r:
                os.read(self._wakeup_r, 64)  # stop() asked: kept_running's test decides
        self._heard(db)
        if time.monotonic() >= self._next_poll:
            self.polled(db)
            self._next_poll = time.monotonic() + self.poll
        if time.monotonic() >= self._next_beat:
            self.beaten(db)
            self._next_beat = time.monotonic() + self.lease / 2
        self.watch(db)
        self._heard(db)  # the chores' own commits: a schedule's job queued on this connection

    def _heard(self, db) -> None:
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
