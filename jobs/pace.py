"""Which jobs are quick: the runner's guess of whether the next job may share a transaction.

A group of jobs settles on one transaction (runner.py), so a job's writes, and the row
locks they take, wait for the commit at the group's end. Letting a slow job join the
group would hold its neighbours' writes for as long as it runs. So a job joins the
job before it only when its name has been quick for the last TRUSTED_AFTER runs in
this process; any other job (new, or slow lately) starts after that commit.
"""

import threading

QUICK = 0.02  # seconds: a run that ends within this counts as quick
TRUSTED_AFTER = 3  # quick runs in a row after which a job's name shares a transaction


class Pace:
    """The run of quick runs of each job name, shared by a worker's threads."""

    def __init__(self, trusted: tuple[str, ...] = ()):
        self._quick_runs = {name: TRUSTED_AFTER for name in trusted}
        self._lock = threading.Lock()

    def trusted(self, name: str) -> bool:
        """Whether a job of `name` is expected to end quickly enough to share a transaction."""
        return self._quick_runs.get(name, 0) >= TRUSTED_AFTER

    def ran(self, name: str, seconds: float) -> None:
        """Learns from one run: a quick one adds to its name's trust, a slow one ends it."""
        with self._lock:
            self._quick_runs[name] = self._quick_runs.get(name, 0) + 1 if seconds < QUICK else 0
