"""Jobs that end without finishing: past their timeout, or at a shutdown past its grace period."""

import signal
import threading
import time

import jobs
from jobs.store import claims, flows
from tests.jobs.helpers import exited, scalar, start_worker, stopped, wait_for
from tests.jobs.performers import RUNS, STARTS

# The line a worker logs as it ends, with what it did (workers.Worker.join).
STOP_LINE = (
    "the worker stopped: {done} job(s) done, {failed} failed for good, {again} to be tried again, "
    "{back} given back to the queue"
)


def tables(db):
    for made in (RUNS, STARTS):
        db.execute(made)
    db.execute("TRUNCATE runs, starts")


def test_a_job_past_its_timeout_fails_is_retried_and_its_thread_is_replaced(db, database_url):
    tables(db)
    worker = start_worker(database_url, "default", "--threads", "1")
    try:
        hung = jobs.later(db, "default", "hangs_first_time", {})
        wait_for(lambda: scalar(db, "SELECT count(*) FROM starts") == 1, "the first attempt to start")
        after = jobs.later(db, "default", "record", {})
        wait_for(
            lambda: scalar(db, "SELECT count(*) FROM runs WHERE job = %s", (after,)) == 1,
            "the job queued behind it to run on the thread that replaced the stuck one",
        )
        wait_for(lambda: scalar(db, "SELECT count(*) FROM jobs") == 0, "the timed-out job's second attempt")
    finally:
        output = stopped(worker)
    assert db.execute("SELECT attempt FROM runs WHERE job = %s", (hung,)).fetchall() == [(2,)], (
        "the first attempt's write was rolled back, the second's committed"
    )
    assert f"job {hung} (hangs_first_time on default) ran past its timeout of 1 s" in output
    assert "failed on attempt 1, again in 0 s: timed out after 1 s" in output
    assert worker.returncode == 0, output


def test_a_performer_sees_its_deadline_and_is_told_when_it_has_passed(db, connect):
    seen, done = {}, threading.Event()

    @jobs.policy(attempts=1, timeout=0.3)
    def patient(conn, args):
        job = jobs.current_job()
        seen["left"] = job.deadline - time.monotonic()
        seen["told"] = job.cancelled.wait(10)
        done.set()

    worker = jobs.worker(connect, "default", {"patient": patient})
    try:
        job = jobs.later(db, "default", "patient", {})
        assert done.wait(10)
        shelf = wait_for(lambda: jobs.failed(db), "the job to fail for good")
    finally:
        worker.stop()
        worker.join(10)
    assert 0 < seen["left"] <= 0.3 and seen["told"] is True
    assert [(j["id"], j["failure"]) for j in shelf] == [(job, "timed out after 0.3 s")]
    assert worker.counts.timed_out == 1 and worker.counts.failed == 1


def started_job(db, database_url, *options):
    """A worker process, and the id of a 60 s job it has started."""
    tables(db)
    worker = start_worker(database_url, "default", *options)
    job = jobs.later(db, "default", "started_then_held", {"seconds": 60})
    wait_for(lambda: scalar(db, "SELECT count(*) FROM starts") == 1, "the job to start")
    return worker, job


def given_back(db, job) -> bool:
    """Whether `job` waits in the queue again, due now, its claim gone."""
    return scalar(
        db,
        "SELECT claim IS NULL AND NOT scheduled AND run_at <= %s FROM jobs WHERE id = %s",
        (jobs.now_ms() + 1000, job),
    )


def test_sigterm_gives_back_a_job_still_running_when_the_grace_period_ends(db, database_url):
    worker, job = started_job(db, database_url, "--grace", "1")
    began = time.monotonic()
    worker.send_signal(signal.SIGTERM)
    output = exited(worker, timeout=40)
    assert worker.returncode == 0, output
    assert 1 <= time.monotonic() - began < 30, "the grace period ended it, not the job of 60 s"
    assert given_back(db, job), "another worker may take it at once, without waiting out the lease"
    assert scalar(db, "SELECT attempts FROM jobs WHERE id = %s", (job,)) == 0, "a shutdown spends no attempt"
    assert STOP_LINE.format(done=0, failed=0, again=0, back=1) in output, output


def test_a_second_signal_gives_everything_back_at_once(db, database_url):
    worker, job = started_job(db, database_url, "--grace", "60")
    began = time.monotonic()
    worker.send_signal(signal.SIGTERM)
    worker.send_signal(signal.SIGINT)  # as a person pressing Ctrl-C after the deploy's SIGTERM
    output = exited(worker, timeout=40)
    assert worker.returncode == 0, output
    assert time.monotonic() - began < 30, "at once, not after the grace of 60 s"
    assert given_back(db, job)


def test_sigterm_lets_a_job_that_ends_within_the_grace_period_finish(db, database_url):
    tables(db)
    worker = start_worker(database_url, "default", "--grace", "30")
    try:
        job = jobs.later(db, "default", "hold", {"seconds": 2})
        wait_for(lambda: scalar(db, "SELECT claim IS NOT NULL FROM jobs WHERE id = %s", (job,)), "the job to start")
        worker.send_signal(signal.SIGTERM)
        worker.wait(timeout=30)
    finally:
        output = stopped(worker)
    assert worker.returncode == 0, output
    assert scalar(db, "SELECT count(*) FROM runs WHERE job = %s", (job,)) == 1
    assert scalar(db, "SELECT count(*) FROM jobs") == 0
    assert STOP_LINE.format(done=1, failed=0, again=0, back=0) in output, output


def test_a_job_given_back_is_due_as_it_was_before_its_claim(db):
    """So it keeps its place ahead of jobs queued since, and a schedule's job keeps its tick."""
    due = jobs.now_ms() - 5_000
    first = jobs.later(db, "default", "noop", {}, at=due)
    second = jobs.later(db, "default", "noop", {})
    [claimed] = claims.claimed(db, "default")
    assert claimed.id == first
    flows.given_back(db, [claimed])
    assert scalar(db, "SELECT run_at FROM jobs WHERE id = %s", (first,)) == due
    assert [job.id for job in claims.claimed(db, "default", limit=2)] == [first, second]
