"""A database that restarts under worker processes, and a listener cut off alone (issue 12, point 5)."""

import threading
import time

import psycopg
import pytest

import jobs
from tests.jobs.helpers import start_worker, stopped, wait_for

pytestmark = pytest.mark.slow

JOBS = 2_000
RESTART_AFTER = 300  # jobs that have taken effect when the server restarts
DRAINED_WITHIN = 60.0  # seconds after the restart by which every job has taken effect
WAKE_FAST = 0.010  # seconds from enqueue to start of a job, a listening worker being idle
RESUMED_WITHIN = 2.0  # seconds after its listener is cut off by which a worker wakes that fast again


def answered(server, query, params=()):
    """The single value a query answers on a fresh connection, or None while the server is down."""
    try:
        with server.connect() as db:
            return db.execute(query, params).fetchone()[0]
    except psycopg.OperationalError:
        return None


def test_a_fast_restart_mid_drain_loses_nothing_and_runs_nothing_twice(private_postgres):
    server = private_postgres
    with server.connect() as db:
        jobs.later_many(db, "default", "effect", [{"n": n, "ms": 2} for n in range(JOBS)])
    workers = [start_worker(server.url, "default", "--threads", "4") for _ in range(2)]
    try:
        wait_for(
            lambda: (answered(server, "SELECT count(*) FROM effects") or 0) >= RESTART_AFTER,
            f"{RESTART_AFTER} jobs to take effect",
        )
        server.restart()
        wait_for(
            lambda: answered(server, "SELECT count(*) FROM effects") == JOBS,
            "every job to take effect",
            timeout=DRAINED_WITHIN,
        )
        wait_for(lambda: answered(server, "SELECT count(*) FROM jobs") == 0, "every job to be settled")
        assert [worker.poll() for worker in workers] == [None, None], "both workers survived the restart"
    finally:
        outputs = [stopped(worker) for worker in workers]
    with server.connect() as db:
        runs = dict(db.execute("SELECT n, runs FROM effects"))
    assert sorted(runs) == list(range(JOBS)), "no job was lost"
    assert [n for n, count in runs.items() if count > 1] == [], "no job took effect twice"
    assert all(worker.returncode == 0 for worker in workers), outputs
    assert any("lost its database connection" in output for output in outputs), "the restart did cut them off"


class Starts:
    """When each job began, by its `n`, as its performer saw it."""

    def __init__(self):
        self.at: dict[int, float] = {}

    def begun(self, db, args):
        self.at[args["n"]] = time.perf_counter()


def latency(db, starts: Starts, n: int) -> float:
    """Seconds from the commit of job `n` to its start."""
    queued = time.perf_counter()
    jobs.later(db, "default", "begun", {"n": n})
    wait_for(lambda: n in starts.at, f"job {n} to start", every=0.001)
    return starts.at[n] - queued


def test_a_listener_cut_off_alone_wakes_its_worker_again_within_two_seconds(private_postgres):
    server = private_postgres
    starts = Starts()
    # Each thread's connection is named after the thread, so the listener's backend can be told apart.

    def connect():
        return psycopg.connect(server.url, application_name=threading.current_thread().name)

    worker = jobs.worker(connect, "default", {"begun": starts.begun}, threads=2)
    with server.connect() as db:
        try:
            wait_for(
                lambda: (
                    db.execute(
                        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                        " AND application_name LIKE 'jobs-%'"
                    ).fetchone()[0]
                    == 4
                ),
                "the listener, the heartbeat and two work threads to connect",
            )
            before = min(latency(db, starts, n) for n in range(20))
            assert before < WAKE_FAST, f"an idle worker woke in {before * 1000:.1f} ms before the cut"
            work_backends = db.execute(
                "SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
                " AND application_name LIKE 'jobs-worker-%' ORDER BY pid"
            ).fetchall()
            cut = time.perf_counter()
            ended = db.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database()"
                " AND application_name = 'jobs-listener'"
            ).fetchall()
            assert ended == [(True,)]
            n, resumed = 100, None
            while resumed is None and time.perf_counter() - cut < RESUMED_WITHIN + 1:
                n += 1
                if latency(db, starts, n) < WAKE_FAST:
                    resumed = time.perf_counter() - cut
            assert resumed is not None and resumed < RESUMED_WITHIN, f"wake-ups resumed after {resumed} s"
            assert (
                db.execute(
                    "SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
                    " AND application_name LIKE 'jobs-worker-%' ORDER BY pid"
                ).fetchall()
                == work_backends
            ), "the work threads kept their connections"
        finally:
            worker.stop()
            assert worker.join(10)
