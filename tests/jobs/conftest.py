"""Fixtures of the queue's deployment and chaos tests: tables of their own, a role that may only
read and write, and a PostgreSQL of the test's own for tests that restart or break it; and
`runs`, the table the worker processes' performers record their runs in.

Tests that break the tables (drop a column, take a step back) do it in a schema of
their own, reached through the connection's search_path, so the shared tables stay whole.
"""

import secrets

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo

import jobs
from tests.jobs import private_pg
from tests.jobs.helpers import APP_ROLE, PRIVATE
from tests.jobs.performers import EFFECTS, RUNS


@pytest.fixture
def started(connect):
    """Starts workers for a test (`started(queues, performers, **options)`) and stops each after it,
    whatever happened, without waiting on a job still in hand."""
    running = []

    def start(queues, performers, **options):
        worker = jobs.worker(connect, queues, performers, **options)
        running.append(worker)
        return worker

    yield start
    for worker in running:
        worker.stop(grace=0)
        assert worker.join(10), "a worker did not stop within 10 s"


@pytest.fixture
def runs(db):
    """The table the test performers record their runs in, empty."""
    db.execute(RUNS)
    db.execute("TRUNCATE runs")
    return db


@pytest.fixture
def private_url(db, database_url):
    """The address of a schema of the test's own holding current jobs tables (and `runs`), as the owner."""
    db.execute(sql.SQL("DROP SCHEMA IF EXISTS {0} CASCADE; CREATE SCHEMA {0}").format(sql.Identifier(PRIVATE)))
    url = make_conninfo(database_url, options=f"-c search_path={PRIVATE}")
    with psycopg.connect(url, autocommit=True) as owner:
        jobs.prepared(owner)
        owner.execute(RUNS)
    yield url
    db.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(PRIVATE)))


@pytest.fixture
def app_role(db, database_url):
    """Makes APP_ROLE, with no privilege yet, and answers a function giving its address for a schema.

    The role is dropped after the test, with every privilege it was granted.
    """
    password = secrets.token_hex(16)
    dropped(db)
    db.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(sql.Identifier(APP_ROLE), sql.Literal(password)))
    yield lambda schema="public": make_conninfo(
        database_url, user=APP_ROLE, password=password, options=f"-c search_path={schema}"
    )
    dropped(db)


def dropped(db) -> None:
    """Drops APP_ROLE, left over or not, after revoking what it was granted."""
    if db.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (APP_ROLE,)).fetchone():
        db.execute(sql.SQL("DROP OWNED BY {0}; DROP ROLE {0}").format(sql.Identifier(APP_ROLE)))


@pytest.fixture
def private_postgres():
    """A started PrivatePostgres with the jobs table and the performers' tables made; removed afterwards."""
    server = private_pg.started()
    try:
        with server.connect() as db:
            jobs.prepared(db)
            db.execute(RUNS)
            db.execute(EFFECTS)
        yield server
    finally:
        private_pg.removed(server)
