"""The listener's chores fail alone: a refused or a slow one is logged, and the others, the heartbeat and
the timeout watch among them, still run on their timers."""

import threading

import psycopg

import jobs
from jobs.runtime import supervisor
from tests.jobs.helpers import PRIVATE, granted, scalar, wait_for


def test_a_chore_the_database_refuses_stops_no_other(db, private_url, app_role, caplog):
    """An app role without a grant on job_schedules: the schedules chore is refused on every poll,
    while promotion still runs and a job past its timeout is still let go."""
    granted(db, "SELECT, INSERT, UPDATE, DELETE", PRIVATE)
    with psycopg.connect(private_url, autocommit=True) as owner:
        owner.execute("REVOKE ALL ON job_schedules FROM jobs_app")
        release = threading.Event()
        schedule = jobs.every("tick", every=3600, queue="default", name="noop")
        worker = jobs.worker(
            lambda: psycopg.connect(app_role(PRIVATE)),
            "default",
            {"stuck": lambda conn, args: release.wait(20), "noop": lambda conn, args: None},
            timeout=0.5,
            lease=2.0,
            poll=0.1,
            schedules=[schedule],
        )
        try:
            stuck = jobs.later(owner, "default", "stuck", {})
            wait_for(lambda: worker.counts.timed_out == 1, "the stuck job's timeout to fire")
            assert scalar(owner, "SELECT attempts FROM jobs WHERE id = %s", (stuck,)) == 1
            later = jobs.later(owner, "default", "noop", {}, jobs.now_ms() + 200)
            wait_for(
                lambda: scalar(owner, "SELECT count(*) FROM jobs WHERE id = %s", (later,)) == 0,
                "a scheduled job to be promoted and run",
            )
            assert "42501 permission denied for table job_schedules" in caplog.text
        finally:
            release.set()
            worker.stop()
            worker.join(10)


def test_a_chore_stuck_on_a_lock_holds_up_neither_the_heartbeat_nor_the_timeout_watch(db, connect):
    """The schedules chore waits on a lock an operator's transaction holds on job_schedules."""
    release = threading.Event()
    schedule = jobs.every("tock", every=3600, queue="default", name="noop")
    with connect() as locker:
        locker.execute("LOCK TABLE job_schedules IN ACCESS EXCLUSIVE MODE")  # held until the end of the test
        worker = jobs.worker(
            connect,
            "default",
            {"stuck": lambda conn, args: release.wait(20)},
            timeout=0.5,
            lease=2.0,
            poll=0.1,
            schedules=[schedule],
        )
        try:
            wait_for(
                lambda: (
                    scalar(
                        db,
                        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                        " AND wait_event_type = 'Lock' "
                        "AND query LIKE '%%job_schedules%%'",
                    )
                    >= 1
                ),
                "the schedules chore to wait",
            )
            stuck = jobs.later(db, "default", "stuck", {})
            wait_for(lambda: worker.counts.timed_out == 1, "the stuck job's timeout to fire")
            assert scalar(db, "SELECT attempts FROM jobs WHERE id = %s", (stuck,)) == 1
        finally:
            release.set()
            locker.rollback()
            worker.stop()
            worker.join(10)


def test_a_listener_cut_off_inside_a_timeouts_give_back_keeps_the_replacement_thread(db, connect, monkeypatch):
    real = supervisor.recorded_failure
    cut = []

    def cut_off_once(listener_db, *args, **kwargs):
        if not cut:
            cut.append(1)
            listener_db.execute("SELECT pg_terminate_backend(pg_backend_pid())")  # its own backend goes
        return real(listener_db, *args, **kwargs)

    monkeypatch.setattr(supervisor, "recorded_failure", cut_off_once)
    release = threading.Event()
    ran = []
    performers = {"stuck": lambda conn, args: release.wait(20), "quick": lambda conn, args: ran.append(1)}
    worker = jobs.worker(connect, "default", performers, threads=1, timeout=0.5, poll=0.1)
    try:
        stuck = jobs.later(db, "default", "stuck", {})
        wait_for(lambda: cut, "the timeout to fire")
        jobs.later(db, "default", "quick", {})
        wait_for(lambda: ran, "a quick job queued after it to run on the replacement thread")
        wait_for(
            lambda: scalar(db, "SELECT failure FROM jobs WHERE id = %s", (stuck,)).startswith("timed out"),
            "the stuck job's timeout to be recorded once the listener is back",
        )
    finally:
        release.set()
        worker.stop()
        assert worker.join(10) is True


def test_a_worker_that_may_not_record_itself_claims_nothing_and_says_why(db, private_url, app_role, caplog):
    """Without its row in job_workers no other worker could tell it had died, and its jobs would be held for good."""
    granted(db, "SELECT, INSERT, UPDATE, DELETE", PRIVATE)
    with psycopg.connect(private_url, autocommit=True) as owner:
        owner.execute("REVOKE ALL ON job_workers FROM jobs_app")
        job = jobs.later(owner, "default", "noop", {})
        worker = jobs.worker(
            lambda: psycopg.connect(app_role(PRIVATE)), "default", {"noop": lambda conn, args: None}, poll=0.1
        )
        try:
            wait_for(lambda: "42501 permission denied for table job_workers" in caplog.text, "the refusal logged")
            assert owner.execute("SELECT attempts FROM jobs WHERE id = %s", (job,)).fetchone() == (0,)
        finally:
            worker.stop()
            assert worker.join(10)
