"""Fixtures every test shares: a real PostgreSQL, and a clean jobs table for each test.

With DATABASE_URL set, the tests use that database; otherwise they start a
throw-away embedded PostgreSQL for the session.
"""

import os
import tempfile

import psycopg
import pytest

import jobs
from e2e.leftovers import swept
from e2e.tether import stops_on_sigterm


def pytest_configure(config) -> None:
    """A run stopped with SIGTERM runs its teardown first (its PostgreSQL is stopped), as Ctrl-C does."""
    stops_on_sigterm()


@pytest.fixture(scope="session")
def database_url():
    """The address of the database the tests use."""
    if os.environ.get("DATABASE_URL"):
        yield os.environ["DATABASE_URL"]
        return
    from guestbook import embedded

    swept()  # the servers that killed runs left behind
    with tempfile.TemporaryDirectory(prefix="guestbook-tests-") as folder:
        server = embedded.server(os.path.join(folder, "pgdata"), throwaway=True)
        yield server.get_uri()


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
        conn.execute("TRUNCATE jobs, job_batches, job_paused_queues, job_workers RESTART IDENTITY")
        yield conn
