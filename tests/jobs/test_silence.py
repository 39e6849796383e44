"""A connection that goes silent: the worker notices within its bound, reconnects, and loses nothing.

Between the worker and a PostgreSQL of the test's own sits a proxy (tests/silent_proxy.py)
that makes the connections open at a moment go silent, while new ones pass: in "hold"
mode its kernel still acknowledges every packet (a hung pooler), in "drop" mode the
packets are dropped (a NAT that forgot the connection).
"""

import select
import threading
import time

import psycopg
import pytest

import jobs
from tests.jobs.helpers import wait_for
from tests.silent_proxy import SilentProxy

pytestmark = pytest.mark.slow

SILENCE = 2.0  # seconds: the workers' bound here (SILENT_AFTER is 30), so that the tests take seconds
SLACK = 8.0  # seconds past the bound a thread may take to reconnect and run a job again, on a busy machine
JOBS = 5  # jobs queued after the silence, each to run once


@pytest.fixture
def proxy(private_postgres):
    proxy = SilentProxy(("127.0.0.1", private_postgres.port))
    yield proxy
    proxy.close()


class Tally:
    """A performer that adds one to a row on its job's transaction, and whose first run waits at a gate."""

    def __init__(self):
        self.started, self.gate = threading.Event(), threading.Event()

    def __call__(self, db, args):
        db.execute("UPDATE tally SET n = n + 1")  # holds the row's lock until the settlement commits
        self.started.set()
        self.gate.wait()


def counted(server, query):
    with server.connect() as db:
        return db.execute(query).fetchone()[0]


@pytest.mark.parametrize("mode", ["hold", "drop"])
def test_a_worker_cut_off_by_silence_mid_job_resumes_within_its_bound_and_loses_nothing(private_postgres, proxy, mode):
    server = private_postgres
    with server.connect() as db:
        db.execute("CREATE TABLE tally (n int NOT NULL); INSERT INTO tally VALUES (0)")
        jobs.later(db, "default", "tally", {})
    tally = Tally()
    # Held, the connections carry no keepalives, so that only the watchdog can see it. Dropped,
    # they carry them, as `python -m jobs work`'s do: a new connection whose packets the
    # proxy's rules happen to drop too (a client port used again) gives up, and tries again.
    options = jobs.keepalives(SILENCE) if mode == "drop" else {}
    worker = jobs.worker(
        lambda: psycopg.connect(proxy.url(server.url), **options),
        "default",
        {"tally": tally},
        threads=2,
        silent_after=SILENCE,
    )
    try:
        assert tally.started.wait(30), "the first job started"
        assert proxy.silenced(mode) >= 3, "the listener's and both threads' connections went silent"
        silent_since = time.monotonic()
        tally.gate.set()  # its settlement now waits for an answer that never comes
        with server.connect() as db:
            for n in range(JOBS):
                jobs.later(db, "default", "tally", {"n": n})
        wait_for(
            lambda: counted(server, "SELECT count(*) FROM jobs") == 0,
            "every job to be settled",
            timeout=SILENCE + SLACK + 10,
        )
        assert time.monotonic() - silent_since < SILENCE + SLACK, "the worker resumed within its bound"
    finally:
        worker.stop()
        assert worker.join(10), "the worker stopped"
    # The job cut off mid-transaction ran again once its first run was rolled back:
    # each job counted once, none lost.
    assert counted(server, "SELECT n FROM tally") == 1 + JOBS


def test_keepalives_drop_an_idle_connection_whose_packets_are_lost(private_postgres, proxy):
    with psycopg.connect(proxy.url(private_postgres.url), autocommit=True, **jobs.keepalives(SILENCE)) as db:
        db.execute("SELECT 1")
        proxy.silenced("drop")
        began = time.monotonic()
        readable, _, _ = select.select([db.fileno()], [], [], SILENCE + SLACK)
        assert readable, "the kernel gave up on the connection"
        with pytest.raises(psycopg.OperationalError):
            db.execute("SELECT 1")
        assert time.monotonic() - began < SILENCE + SLACK


def test_tcp_user_timeout_drops_a_connection_whose_statement_is_never_acknowledged(private_postgres, proxy):
    with psycopg.connect(proxy.url(private_postgres.url), autocommit=True, **jobs.keepalives(SILENCE)) as db:
        db.execute("SELECT 1")
        proxy.silenced("drop")
        began = time.monotonic()
        with pytest.raises(psycopg.OperationalError):
            db.execute("SELECT 1")  # no watchdog here: only the kernel can end this wait
        assert time.monotonic() - began < SILENCE + SLACK


def test_a_performers_long_statement_is_not_the_watchdogs_to_cut(db, connect):
    # A job may rightly wait on the database longer than the worker's bound: its own
    # timeout is what bounds it, not the watchdog.
    ran = []
    worker = jobs.worker(
        connect,
        "default",
        {"long": lambda db, args: ran.append(db.execute("SELECT pg_sleep(%s)", [2 * SILENCE]).fetchone())},
        silent_after=SILENCE,
    )
    try:
        jobs.later(db, "default", "long", {})
        assert worker.wait_until_empty(30), "the job ran and was settled"
    finally:
        worker.stop()
        worker.join()
    assert ran == [("",)], "its statement answered"
