"""What the job queue's tests share: worker processes, and waiting on the database."""

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[2]
WAIT = 30.0  # seconds a test waits on a condition before it fails


def start_worker(database_url, queue, *options, env=None):
    """Starts `python -m jobs work` on `queue` with the test performers, as its own process.

    Its log goes to a file, not a pipe: a worker logging thousands of jobs would fill a
    pipe nobody reads yet, and block. `env` adds to its environment.
    """
    env = {**os.environ, "DATABASE_URL": database_url, "PYTHONPATH": str(PROJECT), **(env or {})}
    command = [sys.executable, "-m", "jobs", "work", queue, "--performers", "tests.jobs.performers:performers", *options]
    log = tempfile.TemporaryFile(mode="w+")
    process = subprocess.Popen(command, cwd=PROJECT, env=env, stdout=log, stderr=subprocess.STDOUT, text=True)
    process.log = log
    return process


def wait_for(condition, what: str, timeout: float = WAIT, every: float = 0.02):
    """Returns condition()'s first true answer, or fails naming `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        answer = condition()
        if answer:
            return answer
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")


def stopped(process, timeout: float = WAIT) -> str:
    """Ends a worker process with SIGTERM and returns what it printed."""
    if process.poll() is None:
        process.terminate()
    process.wait(timeout=timeout)
    process.log.seek(0)
    return process.log.read()


def scalar(db, query, params=()):
    """The single value a query answers."""
    return db.execute(query, params).fetchone()[0]
