"""No row is held by nobody: whatever ends a job's attempt, its claimed row is let go while its worker lives.

Each test ends an attempt in a way that is neither a success nor an ordinary failure (a
statement the server refuses at settlement, a deadlock with an operator's cancel, a
performer raising SystemExit) and shows, within a bound of a few leases, the job failed
with its reason or worked again, never left claimed by a worker that beats and works it
no more; and the worker keeps every thread it had.
"""

import argparse
import threading
import time

import psycopg
import pytest
from psycopg.conninfo import make_conninfo

import jobs
from tests.jobs.helpers import database_ms, scalar, wait_for, waited_for_release, work_threads

LEASE = 1.0  # seconds: the workers' lease here, so a bound of a few leases is seconds
RETRY_WAIT = 5.0  # seconds: the refused attempt is a failure, retried after the default backoff (3 s)
BOUND = 3 * LEASE  # seconds a row may stay held by a live worker that no longer works it
APP_LOCK = 1.5  # seconds an app's transaction holds the lock a settlement waits on


@pytest.fixture
def refusing(db):
    """Tables an app's jobs write: a child whose foreign key is checked at COMMIT, and a log of the jobs' writes."""
    db.execute("DROP TABLE IF EXISTS refused_children, refused_parents, refused_log")
    db.execute("CREATE TABLE refused_parents (id int PRIMARY KEY)")
    db.execute(
        "CREATE TABLE refused_children (id serial PRIMARY KEY,"
        " parent int REFERENCES refused_parents (id) DEFERRABLE INITIALLY DEFERRED)"
    )
    db.execute("CREATE TABLE refused_log (job bigint, what text)")
    yield db
    db.execute("DROP TABLE IF EXISTS refused_children, refused_parents, refused_log")


def stopped_now(*workers) -> None:
    for worker in workers:
        worker.stop()
    for worker in workers:
        worker.join(10)


def test_a_job_whose_commit_the_server_refuses_is_let_go_and_runs_again(refusing, connect):
    """A deferred foreign key broken by the performer's write is refused at COMMIT (23503), not before."""
    runs = []

    @jobs.policy(backoff=jobs.intervals(0.1))
    def adopt(conn, args):
        runs.append(jobs.current_job().attempt)
        parent = 999 if len(runs) == 1 else None  # no parent 999: the first run's COMMIT is refused
        conn.execute("INSERT INTO refused_children (parent) VALUES (%s)", (parent,))

    worker = jobs.worker(connect, "default", {"adopt": adopt, "quick": lambda conn, args: None}, lease=LEASE)
    try:
        job = jobs.later(refusing, "default", "adopt", {})
        wait_for(lambda: runs, "the first run")
        waited_for_release(
            refusing,
            lambda: scalar(refusing, "SELECT count(*) FROM jobs WHERE id = %s", (job,)) == 0,
            "the job whose COMMIT was refused to run again and settle",
            timeout=BOUND,
        )
        assert scalar(refusing, "SELECT count(*) FROM refused_children") == 1, "the refused run's write rolled back"
        assert runs == [1, 2]
    finally:
        stopped_now(worker)


def test_a_failure_whose_reason_the_server_refuses_is_still_recorded_as_the_jobs_failure(db, connect):
    """A NUL character in an exception's message: the statement that keeps the reason may not hold it as it is."""

    @jobs.policy(attempts=2, backoff=jobs.intervals(0))
    def fetch(conn, args):
        raise ValueError("upstream answered b'\x00\x01'")

    quick = threading.Event()
    performers = {"fetch": fetch, "quick": lambda conn, args: quick.set()}
    worker = jobs.worker(connect, "default", performers, lease=LEASE)
    try:
        job = jobs.later(db, "default", "fetch", {})
        shelf = waited_for_release(db, lambda: jobs.failed(db), "the job to fail for good on the shelf", BOUND)
        assert [shelved["id"] for shelved in shelf] == [job]
        assert "upstream answered" in shelf[0]["failure"], "its own reason, not a crash's"
        jobs.later(db, "default", "quick", {})
        assert quick.wait(BOUND), "the worker works on"
    finally:
        stopped_now(worker)


def test_a_batch_members_settlement_refused_behind_an_apps_lock_is_let_go_and_the_batch_finishes(
    refusing, connect, database_url
):
    """The worker's role has a statement_timeout; the batch's row is locked by an app's cancel of another member."""
    slow_began = threading.Event()

    def slow(conn, args):
        conn.execute("INSERT INTO refused_log VALUES (%s, 'slow')", (jobs.current_job().id,))
        slow_began.set()
        time.sleep(0.5)  # the app's cancel of the other member comes meanwhile

    def quick(conn, args):
        conn.execute("INSERT INTO refused_log VALUES (%s, 'quick')", (jobs.current_job().id,))

    timed = make_conninfo(database_url, options="-c statement_timeout=300")  # 300 ms, as many apps' roles have
    worker = jobs.worker(
        lambda: psycopg.connect(timed), "default", {"slow": slow, "quick": quick}, threads=1, lease=LEASE
    )
    try:
        batch = jobs.batch(refusing, "default", [("slow", {}), ("quick", {})])
        quick_id = scalar(refusing, "SELECT id FROM jobs WHERE batch = %s AND name = 'quick'", (batch,))
        assert slow_began.wait(10)
        with psycopg.connect(database_url) as app, app.transaction():
            assert jobs.cancelled(app, quick_id).shelved == [quick_id]  # locks the batch's row until the app commits
            time.sleep(APP_LOCK)  # the fault: the app does something else before it commits
        waited_for_release(
            refusing, lambda: jobs.batch_status(refusing, batch)["finished"], "the batch to finish", BOUND + RETRY_WAIT
        )
        assert refusing.execute("SELECT what FROM refused_log").fetchall() == [("slow",)], "slow took effect once"
    finally:
        stopped_now(worker)


MEMBERS = 100  # jobs of each batch the operator cancels, a few dozen of them run first
TRIES = 10  # batches cancelled one after another: a deadlock came within the first three


def test_an_operators_cancel_of_a_batchs_jobs_never_deadlocks_with_their_settlement(db, connect):
    """jobs.cancelled(*ids) of every member, as the dashboard's cancel does, while two threads settle them."""
    db.execute("CREATE TABLE IF NOT EXISTS members (job bigint NOT NULL)")
    db.execute("TRUNCATE members")

    def member(conn, args):
        conn.execute("INSERT INTO members VALUES (%s)", (jobs.current_job().id,))
        time.sleep(0.002)

    worker = jobs.worker(connect, "default", {"member": member}, threads=2, lease=LEASE)
    try:
        for attempt in range(TRIES):
            cancelled_as_members_settle(db, started=5 + 5 * (attempt % 7))
        assert scalar(db, "SELECT count(*) FROM members") == scalar(db, "SELECT count(DISTINCT job) FROM members")
    finally:
        stopped_now(worker)


def cancelled_as_members_settle(db, started: int) -> None:
    """Queues a batch, cancels all its jobs once `started` of them ran, and checks that each ran or was cancelled."""
    batch = jobs.batch(db, "default", [("member", {"n": n}) for n in range(MEMBERS)])
    ids = [row[0] for row in db.execute("SELECT id FROM jobs WHERE batch = %s ORDER BY id", (batch,))]
    ran = "SELECT count(*) FROM members WHERE job = ANY(%s)"
    wait_for(lambda: scalar(db, ran, (ids,)) >= started, "members to run")  # two running, the rest waiting
    try:
        jobs.cancelled(db, *ids)
    except psycopg.errors.DeadlockDetected as error:
        raise AssertionError(f"the operator's cancel of batch {batch} deadlocked with a settlement: {error}") from None
    waited_for_release(
        db,
        lambda: (jobs.batch_status(db, batch) or {}).get("finished"),
        f"batch {batch} to finish after the cancel",
        timeout=BOUND + 1.0,  # and deadlock_timeout (1 s) once
    )
    done = {row[0] for row in db.execute("SELECT job FROM members WHERE job = ANY(%s)", (ids,))}
    shelf = {job["id"]: job["failure"] for job in jobs.failed(db, limit=TRIES * MEMBERS) if job["id"] in ids}
    assert set(shelf.values()) <= {jobs.CANCELLED}, "on the shelf as cancelled"
    assert done | set(shelf) == set(ids), "every member ran or was cancelled"


def month(conn, args):
    """A performer with a command line of its own: argparse answers bad input with SystemExit."""
    parser = argparse.ArgumentParser(prog="report")
    parser.add_argument("--month", type=int, required=True)
    parser.parse_args(args["argv"])


def interrupted(conn, args):
    raise KeyboardInterrupt


@pytest.mark.parametrize(
    ("performer", "reason"), [(month, "SystemExit"), (interrupted, "KeyboardInterrupt")], ids=["exit", "interrupt"]
)
def test_a_performer_raising_system_exit_fails_its_job_and_the_worker_keeps_its_threads(db, connect, performer, reason):
    quick = threading.Event()
    worker = jobs.worker(
        connect,
        "default",
        {"report": jobs.policy(attempts=1)(performer), "quick": lambda conn, args: quick.set()},
        threads=2,
        lease=LEASE,
    )
    try:
        wait_for(lambda: len(work_threads()) == 2, "the worker's two work threads")
        job = jobs.later(db, "default", "report", {"argv": ["--month", "thirteenth"]})
        shelf = waited_for_release(db, lambda: jobs.failed(db), "the job to fail with its reason", BOUND)
        assert [shelved["id"] for shelved in shelf] == [job]
        assert reason in shelf[0]["failure"] + shelf[0]["traceback"]
        assert len(work_threads()) == 2, "the worker still has its two work threads"
        jobs.later(db, "default", "quick", {})
        assert quick.wait(BOUND), "the worker works on"
    finally:
        stopped_now(worker)


def test_one_thread_workers_all_live_through_a_job_that_raises_system_exit(db, connect):
    """One thread each: a job that ended its worker's last thread would end every worker it is retried on."""
    performers = {"report": month}
    fleet = [jobs.worker(connect, "default", performers, threads=1, lease=LEASE) for _ in range(3)]
    try:
        beating = "SELECT count(*) FROM job_workers WHERE ended_at IS NULL"
        wait_for(lambda: len(work_threads()) == 3, "three work threads")
        wait_for(lambda: scalar(db, beating) == 3, "the three workers' rows")  # a thread starts before its row
        job = jobs.later(db, "default", "report", {"argv": []})
        reason = "SELECT coalesce(max(failure), '') FROM jobs WHERE id = %s AND claim IS NULL"
        waited_for_release(db, lambda: scalar(db, reason, (job,)), "the first attempt to fail with its reason", BOUND)
        assert "SystemExit" in scalar(db, reason, (job,))
        assert len(work_threads()) == 3, "every worker still has its thread"
        assert scalar(db, beating) == 3, "and beats"
    finally:
        stopped_now(*fleet)


def test_an_on_error_hook_raising_system_exit_leaves_the_worker_beating(db, connect):
    """The hook of a job that timed out: whatever thread runs it, the heartbeat goes on."""

    def hook(job, error):
        raise SystemExit("the alerting client gave up")

    @jobs.policy(attempts=1, timeout=0.2, on_error=hook)
    def stuck(conn, args):
        time.sleep(1.0)

    worker = jobs.worker(connect, "default", {"stuck": stuck}, threads=1, lease=LEASE)
    try:
        jobs.later(db, "default", "stuck", {})
        wait_for(lambda: jobs.failed(db), "the job to time out onto the shelf", timeout=BOUND)
        beat = scalar(db, "SELECT beat_at FROM job_workers WHERE id = %s", (worker.id,))
        since = database_ms(db)
        wait_for(
            lambda: scalar(db, "SELECT beat_at FROM job_workers WHERE id = %s", (worker.id,)) > max(beat, since),
            "the worker to beat again after the hook raised SystemExit",
            timeout=2 * LEASE,
        )
        assert scalar(db, "SELECT ending FROM job_workers WHERE id = %s", (worker.id,)) is None
    finally:
        stopped_now(worker)
