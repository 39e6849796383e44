"""The test performers, for a worker process whose stop signal lands while its main thread holds the worker's lock.

A signal's handler runs on the main thread between two of its statements, wherever it
was. Here it is sent from inside Worker.join's look at the work threads, under the
lock of the worker's supervisor, once, as soon as the worker may claim: the moment a SIGTERM may land at.
"""

import os
import signal
import threading

from jobs.runtime.supervisor import Supervisor
from jobs.runtime.work_thread import WorkThread
from tests.jobs.performers import performers

__all__ = ["performers"]

looked = Supervisor.threads
sent = threading.Event()


def signalled_inside(supervisor: Supervisor) -> list[WorkThread]:
    """The work threads, as Supervisor.threads answers; on the main thread's first look once ready, SIGTERM too."""
    if (
        threading.current_thread() is not threading.main_thread()
        or sent.is_set()
        or not supervisor.parts.gate.ready.is_set()
    ):
        return looked(supervisor)
    sent.set()
    with supervisor._lock:
        os.kill(os.getpid(), signal.SIGTERM)  # its handler runs before the next statement, the lock still held
        return list(supervisor._threads)


Supervisor.threads = signalled_inside  # type: ignore[method-assign,assignment]  # the fault
