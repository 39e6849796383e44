"""A test run killed from outside leaves no worker behind to take the next run's jobs.

The first test starts a real pytest run whose test starts a worker process and waits,
kills that run (SIGTERM, or SIGKILL, after which no teardown runs), and waits for the
worker's process and its connections to be gone. The second shows that a worker this
run did not start is named before a test starts one of its own.
"""

import os
import signal
import subprocess
import sys

import psycopg
import pytest

from e2e.leftovers import alive
from jobs.cli.main import APPLICATION_NAME

from . import helpers
from .helpers import PROJECT, WAIT, scalar, start_worker, stopped, wait_for

# The test the killed run runs: it starts a worker, says which, and waits to be killed.
TEST = """
import os
import threading

from tests.jobs.helpers import start_worker


def test_working_until_killed():
    worker = start_worker(os.environ["DATABASE_URL"], "killed-run")
    report = os.environ["WORKER_REPORT"]
    with open(report + ".part", "w") as told:
        told.write(str(worker.pid))
    os.rename(report + ".part", report)
    threading.Event().wait()
"""


def workers_on(db) -> int:
    return scalar(
        db,
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND application_name = %s",
        [APPLICATION_NAME],
    )


@pytest.mark.slow
@pytest.mark.parametrize("signal_number", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_a_killed_run_leaves_no_worker_behind(database_url, db, tmp_path, signal_number):
    test, report = tmp_path / "test_working.py", tmp_path / "worker"
    test.write_text(TEST)
    env = {**os.environ, "DATABASE_URL": database_url, "WORKER_REPORT": str(report)}
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(tmp_path), str(test)]
    with (tmp_path / "run.log").open("wb") as log:
        run = subprocess.Popen(command, cwd=PROJECT, env=env, stdout=log, stderr=subprocess.STDOUT)
    worker = None
    try:
        wait_for(lambda: report.exists() or run.poll() is not None, "the worker to start")
        assert report.exists(), f"the run ended first:\n{(tmp_path / 'run.log').read_text()}"
        worker = int(report.read_text())
        wait_for(lambda: workers_on(db) > 0, "the worker to connect")

        run.send_signal(signal_number)
        run.wait(WAIT)
        wait_for(lambda: not alive(worker), "the worker to end with its run")
        wait_for(lambda: workers_on(db) == 0, "the worker's connections to close")
    finally:
        run.kill()
        run.wait()
        if worker and alive(worker):
            os.kill(worker, signal.SIGKILL)  # what the failed test left running


def test_a_stray_worker_is_named_before_a_test_starts_one(database_url, db, monkeypatch):
    monkeypatch.setattr(helpers, "CHECKED", set())  # as at the first start of a run
    with psycopg.connect(database_url, application_name=APPLICATION_NAME):
        with pytest.raises(AssertionError, match=rf"a stray '{APPLICATION_NAME}' is on \w+ \(connections: 1\)"):
            stopped(start_worker(database_url, "strays"))
