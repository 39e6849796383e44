"""A job's attempt budget is known wherever its fate is decided: a job allowed N attempts never starts an N+1th.

The claim writes the attempts the performer's policy allows on the row, so after a cut
connection (the lapse), a dead worker (the lease runs out) or a reap, the row itself
says that the attempt that was cut short was its last.
"""

import os
import signal
import threading

import jobs
from jobs.store import claims
from jobs.store.claims import Hold
from tests.jobs.helpers import scalar, start_worker, stopped, wait_for
from tests.jobs.performers import RUNS, STARTS


def ended(db, job) -> bool:
    """Whether `job` is gone from the table or on the shelf: nothing will run it any more."""
    return not scalar(
        db, "SELECT count(*) FROM jobs WHERE id = %s AND (attempts < max_attempts OR claim IS NOT NULL)", (job,)
    )


def test_the_claim_writes_the_attempts_the_performers_policy_allows(db):
    once = jobs.policy(attempts=1)(lambda conn, args: None)
    jobs.later(db, "default", "once", {})
    jobs.later(db, "default", "plain", {})
    budgets = claims.budgets_of({"once": once, "plain": lambda conn, args: None})
    held = claims.claimed(db, "default", limit=2, hold=Hold(budgets=budgets))
    assert [(job.name, job.attempt, job.max_attempts) for job in held] == [("once", 1, 1), ("plain", 1, jobs.ATTEMPTS)]


def test_a_job_allowed_one_attempt_whose_connection_is_cut_mid_job_never_starts_again(db, connect):
    started, cut = [], threading.Event()

    @jobs.policy(attempts=1)
    def charge(conn, args):
        started.append(jobs.current_job().attempt)  # the payment provider is called: outside the database
        cut.wait(30)
        conn.execute("SELECT 1")  # the connection is gone by now

    worker = jobs.worker(connect, "default", {"charge": charge}, lease=1)  # the reaper looks every half lease
    try:
        job = jobs.later(db, "default", "charge", {})
        wait_for(lambda: started, "the job to start")
        db.execute("SELECT pg_terminate_backend(%s)", (worker.supervisor.threads()[0].backend.running[0],))
        cut.set()
        wait_for(lambda: ended(db, job), "the job to end")
    finally:
        cut.set()
        worker.stop()
        worker.join(10)
    assert started == [1], "started once"
    [shelved] = jobs.failed(db)
    assert (shelved["id"], shelved["failure"]) == (job, "its worker stopped during the last attempt")


def test_a_job_allowed_one_attempt_whose_worker_is_killed_never_starts_again(db, database_url):
    for made in (RUNS, STARTS):
        db.execute(made)
    db.execute("TRUNCATE runs, starts")
    first = start_worker(database_url, "default", "--lease", "2")
    second = None
    try:
        job = jobs.later(db, "default", "once", {"seconds": 30, "record": True})
        wait_for(lambda: scalar(db, "SELECT count(*) FROM starts") == 1, "the job to start")
        os.kill(first.pid, signal.SIGKILL)
        first.wait(30)
        second = start_worker(database_url, "default", "--lease", "2")
        wait_for(lambda: ended(db, job), "the job to end, once its lease ran out")
        assert scalar(db, "SELECT count(*) FROM starts") == 1, "no other worker started it again"
        [shelved] = jobs.failed(db)
        assert (shelved["id"], shelved["failure"]) == (job, "its worker stopped during the last attempt")
    finally:
        stopped(first)
        if second is not None:
            stopped(second)
