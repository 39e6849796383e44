"""The queue behind a real PgBouncer in transaction mode, as jobs/README.md's section on it sets it up.

Jobs are queued, worked, timed out, cancelled and given back at a shutdown's end through
a PgBouncer of the tests' own (pgbouncer.py) in front of the tests' database, while the
tests look at the table on a connection of their own straight to the database.
"""

import logging
import signal
import threading
import time

import psycopg
import pytest

import jobs
from jobs.runtime.connections import Backend, ended
from tests.jobs.helpers import exited, scalar, start_command, start_worker, stopped, wait_for
from tests.jobs.performers import RUNS, STARTS
from tests.jobs.pgbouncer import removed, started

POLL = 0.1  # seconds between the polling workers' looks for due jobs
LOCK_WAIT = "5s"  # how long the tests' own UPDATE waits for a row lock before it fails
END_WAIT = 1000  # ms `ended` waits for a server process to go


@pytest.fixture(scope="module")
def bouncer(database_url):
    """A started PgBouncer in transaction mode in front of the tests' database."""
    server = started(database_url)
    yield server
    removed(server)


@pytest.fixture
def tables(db):
    """The performers' tables, and a wallet row a job may lock, empty but for the wallet.

    The table is `wallets`, not `accounts`: the guestbook's tests share this database and own
    a table of that name, which other tables reference.
    """
    for made in (RUNS, STARTS, "CREATE TABLE IF NOT EXISTS wallets (id int PRIMARY KEY, balance int NOT NULL)"):
        db.execute(made)
    db.execute("TRUNCATE runs, starts, wallets")
    db.execute("INSERT INTO wallets VALUES (1, 0)")
    return db


def through(bouncer, queue, *options):
    """A `python -m jobs work` process on `queue` connected through PgBouncer, polling."""
    return start_worker(bouncer.url, queue, "--no-listen", "--poll", str(POLL), *options)


def test_jobs_queued_and_worked_through_pgbouncer_run_once_each(bouncer, tables):
    with bouncer.connect() as app:
        with app.transaction():
            queued = [jobs.later(app, "default", "record", {"n": n}) for n in range(100)]
        assert jobs.later_many(app, "default", "record", [{"n": n} for n in range(100, 200)]) == 100
    worker = through(bouncer, "default", "--threads", "4")
    try:
        wait_for(lambda: scalar(tables, "SELECT count(*) FROM jobs") == 0, "every job to run")
    finally:
        output = stopped(worker)
    assert worker.returncode == 0, output
    assert tables.execute("SELECT count(DISTINCT job), count(*) FROM runs").fetchone() == (200, 200)
    assert scalar(tables, "SELECT count(*) FROM runs WHERE job = ANY(%s)", (queued,)) == 100
    assert "the worker's connections go through a pooler: it polls for jobs every 0.1 s" in output


def test_a_worker_that_listens_behind_pgbouncer_says_at_start_that_it_hears_nothing(bouncer, tables, caplog):
    caplog.set_level(logging.INFO, logger="jobs")
    ran = threading.Event()
    worker = jobs.worker(bouncer.connect, "default", {"note": lambda db, args: ran.set()}, poll=POLL)
    try:
        jobs.later(tables, "default", "note", {})
        assert ran.wait(30), "it still finds jobs by polling"
    finally:
        worker.stop()
        worker.join(10)
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and "pooler" in r.getMessage()]
    assert len(warned) == 1 and "LISTEN hears no notification" in warned[0], warned


def test_a_timeout_behind_pgbouncer_ends_the_job_s_transaction_and_frees_its_locks(bouncer, tables):
    go_on = threading.Event()

    @jobs.policy(attempts=1, timeout=0.5)
    def transfer(db, args):
        db.execute("UPDATE wallets SET balance = balance + 1 WHERE id = 1")
        go_on.wait(60)  # a call to another service that never answers

    worker = jobs.worker(bouncer.connect, "default", {"transfer": transfer}, listen=False, poll=POLL)
    try:
        job = jobs.later(tables, "default", "transfer", {})
        shelf = wait_for(lambda: jobs.failed(tables), "the job to time out")
        with psycopg.connect(tables.info.dsn, autocommit=True) as app:
            app.execute(f"SET lock_timeout = '{LOCK_WAIT}'")
            app.execute("UPDATE wallets SET balance = balance + 100 WHERE id = 1")  # waits on the stuck job's lock
    finally:
        go_on.set()
        worker.stop()
        worker.join(10)
    assert [(j["id"], j["failure"]) for j in shelf] == [(job, "timed out after 0.5 s")]
    assert scalar(tables, "SELECT balance FROM wallets") == 100, "the timed-out job's write was rolled back"


def test_a_job_cancelled_behind_pgbouncer_goes_on_the_shelf_and_never_counts(bouncer, tables):
    worker = through(bouncer, "default", "--grace", "1")
    try:
        job = jobs.later(tables, "default", "started_then_held", {"seconds": 30, "record": True})
        wait_for(lambda: scalar(tables, "SELECT count(*) FROM starts") == 1, "the job to start")
        cancel = start_command(bouncer.url, "cancel", str(job))
        assert cancel.wait(30) == 0
        shelf = wait_for(lambda: jobs.failed(tables), "the cancelled job on the shelf", timeout=10)
        worker.send_signal(signal.SIGTERM)  # its performer ignores the cancel; the grace ends it
        output = exited(worker, timeout=40)
    finally:
        stopped(worker)
    assert worker.returncode == 0, output
    assert [(j["id"], j["failure"]) for j in shelf] == [(job, "cancelled")]
    assert [(j["id"], j["failure"]) for j in jobs.failed(tables)] == [(job, "cancelled")], "not retried"
    assert scalar(tables, "SELECT count(*) FROM runs") == 0, "nothing it wrote counts"


def test_sigterm_behind_pgbouncer_gives_back_a_job_still_running_when_the_grace_ends(bouncer, tables):
    worker = through(bouncer, "default", "--grace", "1")
    try:
        job = jobs.later(tables, "default", "started_then_held", {"seconds": 60})
        wait_for(lambda: scalar(tables, "SELECT count(*) FROM starts") == 1, "the job to start")
        began = time.monotonic()
        worker.send_signal(signal.SIGTERM)
        output = exited(worker, timeout=40)
    finally:
        stopped(worker)
    assert worker.returncode == 0, output
    assert 1 <= time.monotonic() - began < 30, "the grace period ended it, not the job of 60 s"
    assert scalar(tables, "SELECT claim IS NULL AND attempts = 0 FROM jobs WHERE id = %s", (job,)), (
        "back in the queue, due, no attempt spent"
    )


def test_a_server_process_is_ended_only_while_it_runs_the_transaction_a_thread_learned(bouncer, db):
    with bouncer.connect() as pooled:
        backend = Backend(pooled)
        assert backend.pooled, "libpq's pid behind PgBouncer is a made-up one"
        with pooled.transaction():
            backend.entered(pooled)
            pid = backend.running[0]
        # That transaction committed: its server process may now serve another client.
        assert ended(db, backend, END_WAIT) is True, "nothing of the thread's is left to end"
        assert (
            scalar(db, "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid = %s", (pid,))
            == 1
        ), "and it lives on"
        pooled.execute("BEGIN")
        backend.entered(pooled)
        running = backend.running[0]
        assert ended(db, backend, END_WAIT) is True
        assert (
            scalar(
                db, "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid = %s", (running,)
            )
            == 0
        ), "the server process of the transaction it learned is gone"
        pooled.close()  # its transaction went with that process: nothing is left to commit
