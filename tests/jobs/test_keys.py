"""Unique jobs and concurrency keys, enforced by the table's indexes rather than by reading first."""

import threading

import jobs
from jobs.store import claims
from jobs.store.claims import Hold
from tests.jobs.helpers import WAIT, scalar, start_worker, stopped, wait_for
from tests.jobs.test_processes import worker_connections


def test_a_second_job_with_a_waiting_unique_key_is_not_queued(db):
    first = jobs.later(db, "default", "sync", {"account": 1}, unique="sync:1")
    assert isinstance(first, int)
    assert jobs.later(db, "default", "sync", {"account": 1}, unique="sync:1") is None
    assert jobs.later(db, "default", "sync", {"account": 2}, unique="sync:2") is not None
    assert len(jobs.listed(db)) == 2


def test_a_job_refused_for_its_unique_key_wakes_no_worker(db, connect):
    jobs.later(db, "default", "sync", {}, unique="sync")
    with connect() as listener:
        listener.autocommit = True
        listener.execute("LISTEN jobs")
        assert jobs.later(db, "default", "sync", {}, unique="sync") is None
        jobs.later(db, "other", "sync", {})  # its notification comes after any the refused job sent
        heard = [note.payload for note in listener.notifies(timeout=WAIT, stop_after=1)]
    assert heard == ["other"]


def test_a_unique_key_is_free_again_once_its_job_has_run(db):
    jobs.later(db, "default", "sync", {}, unique="sync")
    assert jobs.worked(db, "default", {"sync": lambda *_: None}) == "ran sync"
    assert jobs.later(db, "default", "sync", {}, unique="sync") is not None


def test_unique_holds_under_concurrent_later_calls_from_many_threads(db, connect):
    answers, start = [], threading.Barrier(8)

    def queue_one():
        with connect() as conn:
            conn.autocommit = True
            start.wait()
            for _ in range(10):
                answers.append(jobs.later(conn, "default", "sync", {}, unique="only-one"))

    threads = [threading.Thread(target=queue_one) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len([a for a in answers if a is not None]) == 1
    assert scalar(db, "SELECT count(*) FROM jobs WHERE unique_key = 'only-one'") == 1


def test_jobs_sharing_a_concurrency_key_never_run_at_once_across_six_workers(runs, database_url):
    runs.execute("CREATE TABLE IF NOT EXISTS spans (job bigint, key text, began timestamptz, ended timestamptz)")
    runs.execute("TRUNCATE spans")
    workers = [start_worker(database_url, "default", "--threads", "2") for _ in range(6)]
    try:
        wait_for(lambda: worker_connections(runs) == 24, "six workers with four connections each")
        with runs.transaction():
            for n in range(40):
                jobs.later(runs, "default", "span", {"seconds": 0.02}, key=f"account-{n % 2}")
            for _ in range(20):
                jobs.later(runs, "default", "span", {"seconds": 0.02})
        wait_for(lambda: scalar(runs, "SELECT count(*) FROM jobs") == 0, "the queue to drain")
    finally:
        for worker in workers:
            stopped(worker)
    assert scalar(runs, "SELECT count(*) FROM spans") == 60
    overlaps = scalar(
        runs,
        """
        SELECT count(*) FROM spans a JOIN spans b
        ON a.key = b.key AND a.job < b.job AND a.began < b.ended AND b.began < a.ended""",
    )
    assert overlaps == 0
    unkeyed_overlaps = scalar(
        runs,
        """
        SELECT count(*) FROM spans a JOIN spans b
        ON a.key IS NULL AND b.key IS NULL AND a.job < b.job AND a.began < b.ended AND b.began < a.ended""",
    )
    assert unkeyed_overlaps > 0, "jobs without a key still run side by side"


def test_a_job_in_its_last_attempt_still_holds_its_unique_key(db):
    jobs.later(db, "default", "sync", {}, unique="sync")
    db.execute("UPDATE jobs SET max_attempts = 1")
    (claimed,) = claims.claimed(db, "default", jobs.now_ms())
    assert claimed.attempt == claimed.max_attempts
    assert jobs.later(db, "default", "sync", {}, unique="sync") is None


def test_two_due_jobs_of_one_key_in_a_batch_are_claimed_one_at_a_time(db):
    jobs.later(db, "default", "sync", {"n": 1}, key="account-1")
    jobs.later(db, "default", "sync", {"n": 2}, key="account-1")
    jobs.later(db, "default", "sync", {"n": 3})
    first = claims.claimed(db, "default", jobs.now_ms(), limit=10)
    assert [job.args["n"] for job in first] == [1]
    assert [job.args["n"] for job in claims.claimed(db, "default", jobs.now_ms(), limit=10)] == [3]


def test_a_keyed_job_whose_worker_died_is_claimed_again_once_its_key_is_freed(db, connect):
    jobs.later(db, "default", "sync", {"n": 1}, key="account-1")
    jobs.later(db, "default", "sync", {"n": 2}, key="account-1")
    claims.claimed(db, "default", jobs.now_ms(), hold=Hold(lease=0.001))  # its worker dies
    assert claims.claimed(db, "default", jobs.now_ms() + 10) == [], "the lost claim still holds the key"
    assert claims.keys_freed(db, jobs.now_ms() + 10) == 1
    (next_one,) = claims.claimed(db, "default", jobs.now_ms() + 10, limit=10)  # one of the key at a time
    assert claims.claimed(db, "default", jobs.now_ms() + 10, limit=10) == []
    assert claims.finished(db, [next_one]) == {next_one.id}
    (last,) = claims.claimed(db, "default", jobs.now_ms() + 20, limit=10)
    assert {(next_one.args["n"], next_one.attempt), (last.args["n"], last.attempt)} == {(2, 1), (1, 2)}
