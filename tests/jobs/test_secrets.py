"""A job's arguments may hold secrets (a signed link, say): the log names a job by id, name and queue only."""

import logging
import threading

import jobs
from jobs.store import claims
from jobs.store.claims import Hold
from tests.jobs.helpers import scalar, wait_for

T = 1_000_000  # the moment the tests work their queues at, in ms since the epoch
SECRET = "s3cr3t-t0ken"
ARGS = {"link": f"https://example.test/reset?token={SECRET}", "nested": [{"token": SECRET}]}


@jobs.policy(
    attempts=2, backoff=jobs.intervals(0), on_error=lambda job, error: logging.getLogger("app").info("%r", job)
)
def broken(db, args):
    raise RuntimeError("the link has expired")


def hook_breaks(job, error):
    raise KeyError("the hook broke")


@jobs.policy(attempts=1, on_error=hook_breaks)
def with_a_broken_hook(db, args):
    raise RuntimeError("it broke")


def taken_over(db, args):
    db.execute("UPDATE jobs SET claim = 42, worker = 42 WHERE id = %s", (jobs.current_job().id,))


PERFORMERS = {
    "deliver": lambda *_: None,
    "broken": broken,
    "with_a_broken_hook": with_a_broken_hook,
    "taken_over": taken_over,
}


def assert_never_logged(caplog, secret):
    assert secret not in caplog.text
    for record in caplog.records:
        assert secret not in record.getMessage() and secret not in repr(record.args), record


def test_settling_a_job_in_any_way_logs_its_id_name_and_queue_but_never_its_arguments(db, caplog):
    for name in [*PERFORMERS, "nobody_performs_this"]:
        jobs.later(db, "mail", name, ARGS, T)
    with caplog.at_level(logging.DEBUG):
        while jobs.worked(db, "mail", PERFORMERS, T):
            pass
    assert_never_logged(caplog, SECRET)
    for words in [
        "job 1 (deliver on mail) ran deliver",
        "job 2 (broken on mail) failed on attempt 1",
        "job 2 (broken on mail) failed for good on attempt 2",
        "on_error of job 3 (with_a_broken_hook on mail) raised",
        "lease lost",
        "job 5 (nobody_performs_this on mail) failed on attempt 1",
    ]:
        assert words in caplog.text
    assert "Job(id=2, queue='mail', name='broken'" in caplog.text, "a job's repr leaves its arguments out"


def test_a_lost_lease_and_the_reaper_log_a_job_without_its_arguments(db, connect, caplog):
    lost = jobs.later(db, "mail", "lost", ARGS, T)
    db.execute("UPDATE jobs SET max_attempts = 1")
    claims.claimed(db, "mail", T, hold=Hold(lease=1))  # a worker that died on the job's last attempt, long ago
    inside, release = threading.Event(), threading.Event()

    def hold(conn, args):
        inside.set()
        release.wait(10)

    with caplog.at_level(logging.DEBUG):
        worker = jobs.worker(connect, "slow", {"hold": hold}, lease=0.4)
        try:
            held = jobs.later(db, "slow", "hold", ARGS)
            assert inside.wait(10)
            db.execute("UPDATE jobs SET claim = 42, worker = 42 WHERE id = %s", (held,))  # another worker (42) took it
            release.set()
            wait_for(lambda: "another worker holds job" in caplog.text, "the settlement to find its lease lost")
            wait_for(lambda: jobs.failed(db), "the reaper to shelve the lost job")
        finally:
            release.set()
            worker.stop()
            assert worker.join(10)
    assert_never_logged(caplog, SECRET)
    assert f"lease lost: another worker holds job {held} (hold on slow)" in caplog.text
    assert f"job {lost} (lost on mail) failed for good: its worker stopped during the last attempt" in caplog.text
    assert scalar(db, "SELECT claim FROM jobs WHERE id = %s", (held,)) == 42
