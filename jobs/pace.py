"""Which jobs are quick: the runner's guess of whether the next job may share a transaction.

A group of jobs settles on one transaction (runner.py), so a job's writes, and the row
locks they take, wait for the commit at the group's end. Letting a slow job join the
group would hold its neighbours' writes for as long as it runs. So a job joins the
job before it only when its name is known to be quick: it has run TRUSTED_AFTER times
in this process, and its running estimate of a run's time (each run weighing WEIGHT)
is under QUICK. One slow run makes the estimate jump; a load spike of a few
milliseconds does not end the trust of a name whose runs are usually quick.
"""

import threading

QUICK = 0.01  # seconds: a name whose runs take less than this, by its estimate, is quick
TRUSTED_AFTER = 3  # runs of a name seen before it may share a transaction
WEIGHT = 0.25  # the share of the newest run in a name's estimate


class Pace:
    """The estimated run time of each job name, shared by a worker's threads."""

    def __init__(self, trusted: tuple[str, ...] = ()):
        self._runs = {name: TRUSTED_AFTER for name in trusted}
        self._estimate = {name: 0.0 for name in trusted}
        self._lock = threading.Lock()

    def trusted(self, name: str) -> bool:
        """Whether a job of `name` is expected to end quickly enough to share a transaction."""
        return self._runs.get(name, 0) >= TRUSTED_AFTER and self._estimate[name] < QUICK

    def ran(self, name: str, seconds: float) -> None:
        """Learns from one run of `name` that took `seconds`."""
        with self._lock:
            estimate = self._estimate.get(name)
            self._estimate[name] = seconds if estimate is None else estimate + WEIGHT * (seconds - estimate)
            self._runs[name] = self._runs.get(name, 0) + 1
