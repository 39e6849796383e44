"""A primary that fails over to its standby, as Patroni or a managed service's Multi-AZ does it.

Each test starts a primary and a synchronous streaming standby of its own
(private_pg.py: initdb, then pg_basebackup -R), and workers reach them as apps do,
through a multi-host URL that asks for the server that accepts writes. The primary
stops as a machine that loses its power would; the standby is promoted.
"""

import logging
import threading

import psycopg
import pytest

import jobs
from tests.jobs.helpers import WAIT, exited, scalar, start_worker, stopped, wait_for
from tests.jobs.performers import RUNS, STARTS
from tests.jobs.private_pg import RETRY_EVERY, removed, started

RATE = 100  # jobs a second the producer queues while the primary fails over
BEFORE = 100  # jobs run before the primary stops
QUEUED = 400  # jobs the producer has committed when it stops
APPLICATION = "jobs failover"  # how the in-process worker's connections show in pg_stat_activity


@pytest.fixture
def pair():
    """A primary with the jobs tables, and its synchronous standby, both started; removed afterwards."""
    primary = started()
    standby = None
    try:
        with primary.connect() as db:
            jobs.prepared(db)
            db.execute(RUNS)
            db.execute(STARTS)
        standby = started(standby_of=primary)
        with primary.connect() as db:
            wait_for(
                lambda: scalar(db, "SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'"),
                "the standby to stream",
            )
            db.execute("ALTER SYSTEM SET synchronous_standby_names = '*'")
            db.execute("SELECT pg_reload_conf()")
            wait_for(
                lambda: scalar(db, "SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync'"),
                "the standby to be synchronous",
            )
        yield primary, standby
    finally:
        for server in (standby, primary):
            if server is not None:
                removed(server)


def either(primary, standby) -> str:
    """The multi-host URL of an app: both servers, the one that accepts writes chosen at each connect."""
    return (
        f"postgresql://postgres@127.0.0.1:{primary.port},127.0.0.1:{standby.port}/postgres"
        "?target_session_attrs=read-write"
    )


class Producer:
    """Queues a job RATE times a second on `url`, reconnecting when cut off; `committed` lists those whose commit
    returned."""

    def __init__(self, url: str):
        self.url = url
        self.committed: list[int | None] = []  # the ids jobs.later returned (None only for a unique key, never here)
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        db = None
        while not self.stopping.is_set():
            try:
                db = db or psycopg.connect(self.url, autocommit=True)
                self.committed.append(jobs.later(db, "default", "record", {}))
                self.stopping.wait(1 / RATE)  # the producer's pace, not a wait for a condition
            except psycopg.OperationalError:
                db = None  # the commit's fate is unknown: the job is not counted as committed
                self.stopping.wait(RETRY_EVERY)


def test_a_worker_on_a_multi_host_url_resumes_after_a_failover_and_loses_or_repeats_no_job(pair):
    primary, standby = pair
    worker = start_worker(either(primary, standby), "default", "--threads", "2")
    producer = Producer(either(primary, standby))
    producer.thread.start()
    try:
        with primary.connect() as db:
            wait_for(lambda: scalar(db, "SELECT count(*) FROM runs") >= BEFORE, "the first jobs to run")
        primary.crashed()
        standby.promote()
        wait_for(lambda: len(producer.committed) >= QUEUED, "the producer to queue its jobs", timeout=60)
        producer.stopping.set()
        producer.thread.join(WAIT)
        with standby.connect() as db:
            wait_for(
                lambda: (
                    scalar(db, "SELECT count(*) FROM runs WHERE job = ANY(%s)", (producer.committed,))
                    == len(producer.committed)
                ),
                "every committed job to run on the promoted standby",
                timeout=60,
            )
            twice = db.execute("SELECT job FROM runs GROUP BY job HAVING count(*) > 1").fetchall()
    finally:
        producer.stopping.set()
        output = stopped(worker)
    assert twice == [], "no job ran twice"
    assert worker.returncode == 0, output
    assert "lost its database connection" in output


def test_a_worker_started_on_a_standby_exits_3_and_says_why(pair):
    primary, standby = pair
    worker = start_worker(standby.url, "default")
    output = exited(worker)
    assert worker.returncode == 3, output
    assert "the worker cannot work: 25006 cannot execute UPDATE in a read-only transaction" in output


def test_a_running_worker_whose_reconnection_reaches_a_standby_reconnects_until_it_finds_the_primary(pair, caplog):
    caplog.set_level(logging.WARNING, logger="jobs")
    primary, standby = pair
    server = {"url": primary.url}  # where the name the worker connects to points: a stale DNS record, say
    ran = []
    worker = jobs.worker(
        lambda: psycopg.connect(server["url"], application_name=APPLICATION),
        "default",
        {"note": lambda db, args: ran.append(args["n"])},
        threads=2,
        poll=0.1,
    )
    try:
        with primary.connect() as db:
            jobs.later(db, "default", "note", {"n": 1})
            wait_for(lambda: ran == [1], "the first job, on the primary")
            server["url"] = standby.url
            db.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database()"
                " AND application_name = %s",
                [APPLICATION],
            )
            wait_for(
                lambda: any("read-only" in r.getMessage() for r in caplog.records), "the worker to reach the standby"
            )
            server["url"] = primary.url
            jobs.later(db, "default", "note", {"n": 2})
            wait_for(lambda: ran == [1, 2], "the job queued once the name points at the primary again")
    finally:
        worker.stop()
        worker.join(10)
