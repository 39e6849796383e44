"""Fixtures every test shares: a real PostgreSQL, and a clean jobs table for each test.

With DATABASE_URL set, the tests use that database; otherwise they start a
throw-away embedded PostgreSQL for the session. No test leaves a worker of its own
at work: one left running would take the next tests' jobs with performers of its own.
"""

import os

import psycopg
import pytest

import jobs
from e2e.leftovers import swept
from e2e.tether import stops_on_sigterm
from jobs.runtime.worker import Worker


def pytest_configure(config) -> None:
    """A run stopped with SIGTERM runs its teardown first (its PostgreSQL is stopped), as Ctrl-C does."""
    stops_on_sigterm()


LEFT_WAIT = 30.0  # seconds a worker a test left running has to end once told to stop, before the test fails


@pytest.fixture(autouse=True)
def no_worker_left(monkeypatch):
    """Fails a test that leaves a worker it started at work, after stopping it, so that it takes no later test's jobs.

    A worker the test asked to stop has LEFT_WAIT more seconds to end: a busy machine
    may take longer than the test's own join allowed.
    """
    started: list[Worker] = []
    start = Worker.start

    def recorded(worker: Worker) -> Worker:
        started.append(worker)
        return start(worker)

    monkeypatch.setattr(Worker, "start", recorded)
    yield
    forgotten = [worker.id for worker in started if not worker.gate.stopped.is_set() and not worker.ended.is_set()]
    for worker in started:
        worker.stop(grace=0)
    running = [worker.id for worker in started if not worker.join(LEFT_WAIT)]
    assert not forgotten, f"the test left workers {forgotten} at work, never told to stop"
    assert not running, f"workers {running} were still running {LEFT_WAIT} s after they were told to stop"


@pytest.fixture(scope="session")
def database_url():
    """The address of the database the tests use."""
    if os.environ.get("DATABASE_URL"):
        yield os.environ["DATABASE_URL"]
        return
    from guestbook import embedded

    swept()  # the servers that killed runs left behind
    with embedded.throwaway(prefix="guestbook-tests-") as url:
        yield url


@pytest.fixture
def connect(database_url):
    """A zero-argument function that opens a new connection, as workers take."""
    return lambda: psycopg.connect(database_url, application_name="jobs tests")


@pytest.fixture
def db(connect):
    """An autocommit connection to a database whose jobs table is empty."""
    with connect() as conn:
        conn.autocommit = True
        jobs.prepared(conn)
        conn.execute("TRUNCATE jobs, job_batches, job_paused_queues, job_workers, job_limits RESTART IDENTITY")
        yield conn
