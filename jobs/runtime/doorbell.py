"""How a worker's work threads are woken: one ring wakes one waiting thread.

Waking every idle thread for every notification made each of them claim, most finding
nothing: a herd of empty transactions. So the listener rings once per notification
or promotion, one thread wakes and claims, and a thread that claimed a full batch
rings again on its way to run it, since more may be due. Work wakes as many threads
as there is work for; a ring while no thread waits is kept for the next to wait.
"""

import threading


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
