"""A test run killed from outside leaves no guestbook behind to take the next run's letters.

Each test starts a real pytest run of one spec that serves a guestbook and then waits,
kills that run as CI or a person would (SIGTERM, or SIGKILL, after which no teardown
runs), and waits for every process of the guestbook's group and every one of its
connections to the database to be gone.
"""

import os
import signal
import subprocess
import sys

import psycopg
import pytest

from .local import wait_until
from .served import APPLICATION, ROOT, START_TIMEOUT, STOP_TIMEOUT, Guestbook
from .tether import living

# The spec the killed run runs: it serves a guestbook, says where, and waits to be killed.
SPEC = '''
import os
import threading


def test_serving_until_killed(guestbook):
    report = os.environ["SERVED_REPORT"]
    with open(report + ".part", "w") as told:
        told.write(str(guestbook.process.pid))
    os.rename(report + ".part", report)
    threading.Event().wait()
'''
GONE_WITHIN = STOP_TIMEOUT + 5.0  # seconds the guestbook may take to die once its run is killed


def connections(database_url: str, name: str) -> int:
    """How many connections named `name` the database has."""
    with psycopg.connect(database_url, autocommit=True) as db:
        return db.execute("SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", [name]).fetchone()[0]


@pytest.mark.parametrize("signal_number", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_a_killed_run_leaves_no_guestbook_behind(database_url, tmp_path, signal_number):
    spec, report = tmp_path / "test_served.py", tmp_path / "served"
    spec.write_text(SPEC)
    env = {**os.environ, "DATABASE_URL": database_url, "SERVED_REPORT": str(report)}
    command = [sys.executable, "-m", "pytest", "-q", "-p", "e2e.conftest", "-p", "no:cacheprovider",
               "--rootdir", str(tmp_path), str(spec)]
    with (tmp_path / "run.log").open("wb") as log:
        run = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    group = None
    try:
        wait_until(lambda: report.exists() or run.poll() is not None, 2 * START_TIMEOUT, "the guestbook to answer")
        assert report.exists(), f"the run ended first:\n{(tmp_path / 'run.log').read_text()}"
        group = int(report.read_text())
        name = f"{APPLICATION} (run {run.pid})"
        assert living(group=group) and connections(database_url, name) > 0  # make, the server, their worker

        run.send_signal(signal_number)
        run.wait(STOP_TIMEOUT)
        wait_until(lambda: not living(group=group), GONE_WITHIN, "every process of the guestbook to end")
        wait_until(lambda: connections(database_url, name) == 0, GONE_WITHIN, "its connections to close")
    finally:
        run.kill()
        run.wait()
        if group and living(group=group):
            os.killpg(group, signal.SIGKILL)  # what the failed test left running


def test_a_stray_guestbook_is_named_before_a_spec_starts(database_url, tmp_path):
    with psycopg.connect(database_url, autocommit=True, application_name=f"{APPLICATION} (run 1)"):
        with pytest.raises(RuntimeError, match=r"guestbook under test \(run 1\)"):
            Guestbook(database_url, tmp_path, {})
