"""The operator's look on a server with JIT on, as Debian, Ubuntu and most managed services ship it.

The embedded server the other tests use is built without JIT, so these start a
server of their own from the machine's PostgreSQL packages, with stock settings
and pg_stat_statements, which counts the functions JIT compiled for each
statement. Beside FAILED failed and as many scheduled jobs, the planner prices the
queues' status far past jit_above_cost; no statement of jobs, its dashboard or its
command line may be compiled.
"""

import os
import subprocess
import sys

import psycopg
import pytest
from psycopg import sql
from werkzeug.test import Client

import jobs
import jobs.web
from jobs.store.shelf import STATUS_EXACT, queries
from tests.jobs.helpers import PROJECT, wait_for
from tests.jobs.private_pg import removed, started, system_binaries

FAILED = 5000  # jobs on the shelf, and as many scheduled for later: status was 0.4 to 0.8 s a call with JIT
FAR = 10**13  # ms since the epoch: the year 2286, when the scheduled jobs are due
WITH_JIT = {"jit": "on", "shared_preload_libraries": "'pg_stat_statements'"}


@pytest.fixture(scope="module")
def jit_server():
    """A server of the machine's PostgreSQL with JIT on, holding FAILED failed and FAILED scheduled jobs."""
    server = started(bin=system_binaries(), settings=WITH_JIT)
    try:
        with server.connect() as db:
            db.execute("CREATE EXTENSION pg_stat_statements")
            jobs.prepared(db)
            db.execute(
                "INSERT INTO jobs (queue, name, args, run_at, attempts, max_attempts) "
                "SELECT 'mail', 'deliver', '{}', 0, 3, 3 FROM generate_series(1, %s)",
                [FAILED],
            )
            db.execute(
                "INSERT INTO jobs (queue, name, args, run_at, scheduled) "
                "SELECT 'mail', 'deliver', '{}', %s, true FROM generate_series(1, %s)",
                [FAR, FAILED],
            )
        yield server
    finally:
        removed(server)


@pytest.fixture
def jit_db(jit_server):
    """A connection to the JIT server, with pg_stat_statements' counts emptied."""
    with jit_server.connect() as db:
        db.execute("SELECT pg_stat_statements_reset()")
        yield db


def compiled(db) -> list[tuple]:
    """The statements JIT compiled since the counts were emptied, with how many functions each."""
    return db.execute("SELECT query, jit_functions FROM pg_stat_statements WHERE jit_functions > 0").fetchall()


def test_the_server_would_compile_the_status_statement(jit_db):
    statement = sql.SQL(queries["status"]).format(over=sql.Literal(STATUS_EXACT + 1))
    plan = jit_db.execute(sql.SQL("EXPLAIN (ANALYZE, FORMAT JSON) ") + statement, {"now": None}).fetchone()[0][0]
    assert plan["JIT"]["Functions"] > 0  # the condition the tests below need: without JIT off, status pays for it


def test_status_is_never_compiled(jit_db):
    figures = jobs.status(jit_db)
    assert [(q["queue"], q["failed"], q["scheduled"]) for q in figures] == [("mail", FAILED, FAILED)]
    assert compiled(jit_db) == []


def test_status_inside_a_transaction_leaves_its_jit_setting_as_it_was(jit_db):
    with jit_db.transaction():
        jobs.status(jit_db)
        assert jit_db.execute("SHOW jit").fetchone()[0] == "on"


def test_the_dashboard_s_queues_page_its_fragment_and_metrics_are_never_compiled(jit_server, jit_db):
    client = Client(jobs.web.app(lambda: psycopg.connect(jit_server.url), authorize=lambda environ: True))
    for path in ("/", "/queues.fragment", "/metrics", "/failed", "/job/1", "/batches", "/schedules"):
        assert client.get(path).status_code == 200, path
    assert compiled(jit_db) == []


LISTS = (
    "/jobs",
    "/jobs?state=scheduled",
    "/jobs?state=scheduled&q=nobody",
    "/jobs?state=failed&name=nobody",
    "/bulk?action=retry&state=failed",
)


@pytest.mark.parametrize("path", LISTS)
def test_the_dashboard_s_lists_and_a_bulk_preview_are_never_compiled(jit_server, jit_db, path):
    """Their walks are priced past jit_above_cost beside a million jobs (54 ms against 13 ms a page on
    PostgreSQL 15); beside FAILED the price is lower, so the dashboard's connections here compile at any price."""
    connect = lambda: psycopg.connect(jit_server.url, options="-c jit_above_cost=0")  # noqa: E731
    client = Client(jobs.web.app(connect, authorize=lambda environ: True))
    assert client.get(path).status_code == 200
    assert compiled(jit_db) == []


def test_the_command_line_s_status_and_failed_are_never_compiled(jit_server, jit_db):
    for command in (["status"], ["failed"]):
        done = subprocess.run(
            [sys.executable, "-m", "jobs", *command],
            cwd=PROJECT,
            capture_output=True,
            text=True,
            env={**os.environ, "DATABASE_URL": jit_server.url},
            timeout=60,
        )
        assert done.returncode in (0, 1), done.stderr
    assert compiled(jit_db) == []


def test_a_worker_s_statements_are_never_compiled(jit_server, jit_db):
    for n in range(20):
        jobs.later(jit_db, "work", "note", {"n": n})
    worker = jobs.worker(lambda: psycopg.connect(jit_server.url), ["work"], {"note": lambda db, args: None}, threads=2)
    try:
        left = "SELECT count(*) FROM jobs WHERE queue = 'work'"
        wait_for(lambda: jit_db.execute(left).fetchone()[0] == 0, "the worker to run the 20 jobs")
    finally:
        worker.stop()
        worker.join()
    assert compiled(jit_db) == []
