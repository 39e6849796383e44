"""A test run killed from outside leaves no guestbook behind to take the next run's letters.

The first tests start a real pytest run of one spec that serves a guestbook and then
waits, kill that run as CI or a person would (SIGTERM, or SIGKILL, after which no
teardown runs), and wait for every process of the guestbook's group and every one of
its connections to the database to be gone. A killed run's throw-away PostgreSQL, a
daemon no tether holds, is left running: the next run's start sweeps it away.
"""

import os
import signal
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from .leftovers import STOP_WAIT, alive, swept
from .local import wait_until
from .served import APPLICATION, ROOT, START_TIMEOUT, STOP_TIMEOUT, Guestbook
from .tether import living

# The spec the killed run runs: it serves a guestbook, says where, and waits to be killed.
SPEC = """
import os
import threading


def test_serving_until_killed(guestbook):
    report = os.environ["SERVED_REPORT"]
    with open(report + ".part", "w") as told:
        told.write(str(guestbook.process.pid))
    os.rename(report + ".part", report)
    threading.Event().wait()
"""
# The spec of the killed run that leaves its PostgreSQL: it says where that keeps its data, and waits.
SPEC_OF_A_DATABASE = """
import os
import threading


def test_holding_a_database(database_url):
    report = os.environ["SERVED_REPORT"]
    with open(report + ".part", "w") as told:
        told.write(database_url.rpartition("host=")[2])
    os.rename(report + ".part", report)
    threading.Event().wait()
"""
GONE_WITHIN = STOP_TIMEOUT + 5.0  # seconds the guestbook may take to die once its run is killed


def connections(database_url: str, name: str) -> int:
    """How many connections named `name` the database has."""
    with psycopg.connect(database_url, autocommit=True) as db:
        row = db.execute("SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", [name]).fetchone()
        assert row is not None  # count(*) answers one row
        return row[0]


def inner_run(folder, spec) -> list[str]:
    """The command of a pytest run of `spec` alone, with the specs' fixtures, rooted in `folder`."""
    plugins = ["-p", "e2e.conftest", "-p", "no:cacheprovider"]
    return [sys.executable, "-m", "pytest", "-q", *plugins, "--rootdir", str(folder), str(spec)]


@pytest.mark.parametrize("signal_number", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_a_killed_run_leaves_no_guestbook_behind(database_url, tmp_path, signal_number):
    spec, report = tmp_path / "test_served.py", tmp_path / "served"
    spec.write_text(SPEC)
    env = {**os.environ, "DATABASE_URL": database_url, "SERVED_REPORT": str(report)}
    command = inner_run(tmp_path, spec)
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


def test_the_postgresql_of_a_killed_run_is_swept_by_the_next(tmp_path):
    spec, report = tmp_path / "test_holding.py", tmp_path / "data"
    spec.write_text(SPEC_OF_A_DATABASE)
    env = {name: value for name, value in os.environ.items() if name != "DATABASE_URL"}  # its own, embedded
    command = inner_run(tmp_path, spec)
    with (tmp_path / "run.log").open("wb") as log:
        run = subprocess.Popen(
            command, cwd=ROOT, env={**env, "SERVED_REPORT": str(report)}, stdout=log, stderr=subprocess.STDOUT
        )
    try:
        wait_until(lambda: report.exists() or run.poll() is not None, 2 * START_TIMEOUT, "its PostgreSQL to start")
        assert report.exists(), f"the run ended first:\n{(tmp_path / 'run.log').read_text()}"
        data = Path(report.read_text())
        postmaster = int((data / "postmaster.pid").read_text().split()[0])
        run.kill()
        run.wait()
        assert alive(postmaster)  # what the killed run left behind

        assert data.parent in swept()
        wait_until(lambda: not alive(postmaster), STOP_WAIT, "the left PostgreSQL to exit")
        assert not data.parent.exists()
    finally:
        run.kill()
        run.wait()


def test_a_folder_its_last_owner_is_deleting_is_left_to_it(tmp_path):
    data = tmp_path / "guestbook-tests-closing" / "pgdata"
    data.mkdir(parents=True)
    (data / ".handle_pids.json").write_text("[]")  # pgserver takes its last owner off the list, then deletes

    assert swept(tmp_path) == []
    assert data.exists()
