"""Fixtures of the job queue's tests: a PostgreSQL of the test's own, for tests that restart or break it."""

import pytest

import jobs
from tests.jobs.performers import EFFECTS, RUNS
from tests.jobs.private_pg import removed, started


@pytest.fixture
def private_postgres():
    """A started PrivatePostgres with the jobs table and the performers' tables made; removed afterwards."""
    server = started()
    try:
        with server.connect() as db:
            jobs.prepared(db)
            db.execute(RUNS)
            db.execute(EFFECTS)
        yield server
    finally:
        removed(server)
