"""A performer let go (its timeout) or cancelled while it runs still counts against its queue's limit and its key.

Python cannot stop a thread, so such a performer goes on calling whatever the limit
protects after its row was settled without it. Three worker processes share a queue
limited to one job at a time (or a key that runs one at a time), and every job runs
past its timeout: no two performers may overlap, let go or not.
"""

import pytest

import jobs
from jobs.store import control, limits
from tests.jobs.helpers import database_ms, scalar, start_worker, stopped, wait_for
from tests.jobs.test_limits import MOST_AT_ONCE, SPANS
from tests.jobs.test_processes import worker_connections

TIMEOUT = "0.5"  # seconds a job may run, for the workers of these tests
SPAN = 2.5  # seconds each performer runs: past TIMEOUT and a POLL_INTERVAL, so it is let go, and claims follow


def three_workers(runs, database_url):
    """Three worker processes of one thread each on "mail", every job's timeout TIMEOUT."""
    workers = [start_worker(database_url, "mail", "--timeout", TIMEOUT) for _ in range(3)]
    wait_for(lambda: worker_connections(runs) == 3 * (1 + 2), "three workers with three connections each")
    return workers


@pytest.mark.parametrize(
    ("limit", "key"),
    [({"concurrency": 1}, None), ({"per_key": 1}, "tenant-1"), (None, "tenant-1")],
    ids=["concurrency", "per-key", "key-of-an-unlimited-queue"],
)
def test_performers_let_go_for_their_timeout_still_count_until_they_return(runs, database_url, limit, key):
    runs.execute(SPANS)
    if limit:
        jobs.limited(runs, "mail", **limit)
    workers = three_workers(runs, database_url)
    try:
        with runs.transaction():
            for _ in range(3):
                jobs.later(runs, "mail", "span", {"seconds": SPAN}, key=key)
        wait_for(lambda: scalar(runs, "SELECT count(*) FROM spans") >= 3, "three performers", timeout=30)
    finally:
        outputs = [stopped(worker) for worker in workers]
    assert scalar(runs, MOST_AT_ONCE) == 1, runs.execute("SELECT * FROM spans ORDER BY began").fetchall()
    assert any("ran past its timeout of 0.5 s" in output for output in outputs), outputs


def test_a_performer_cancelled_while_it_runs_still_counts_until_it_returns(runs, database_url):
    runs.execute(SPANS)
    jobs.limited(runs, "mail", concurrency=1)
    workers = three_workers(runs, database_url)
    try:
        first = jobs.later(runs, "mail", "span", {"seconds": SPAN})
        wait_for(lambda: scalar(runs, "SELECT attempts FROM jobs WHERE id = %s", (first,)) == 1, "its claim")
        jobs.later(runs, "mail", "span", {"seconds": 0.1})
        assert jobs.cancelled(runs, first).signalled == [first]
        wait_for(lambda: jobs.failed(runs), "the cancelled job on the shelf")  # at once, as before
        wait_for(lambda: scalar(runs, "SELECT count(*) FROM spans") == 2, "both performers")
    finally:
        outputs = [stopped(worker) for worker in workers]
    assert scalar(runs, MOST_AT_ONCE) == 1, runs.execute("SELECT * FROM spans ORDER BY began").fetchall()
    assert [job["failure"] for job in jobs.failed(runs)] == ["cancelled"], outputs


def let_go_by(db, worker: int, ended: bool) -> None:
    """Writes a worker's row, and a performer of "mail" it let go of while it runs (key "tenant-1", slot 0)."""
    now = database_ms(db)
    db.execute(
        "INSERT INTO job_workers (id, host, pid, queues, threads, lease, version, started_at, beat_at, ended_at)"
        " VALUES (%s, 'elsewhere', 1, '{mail}', 1, 30000, %s, %s, %s, %s)",
        (worker, jobs.store.schema.VERSION, now, now, now if ended else None),
    )
    db.execute(
        "INSERT INTO job_let_go (job, claim, worker, queue, key, key_slot) VALUES (0, 1, %s, 'mail', 'tenant-1', 0)",
        (worker,),
    )


@pytest.mark.parametrize(("ended", "taken"), [(False, 0), (True, 1)], ids=["live", "gone"])
def test_a_let_go_performer_counts_while_its_worker_lives_and_not_once_a_reaper_found_it_gone(db, ended, taken):
    db.execute("TRUNCATE job_let_go")
    let_go_by(db, 7, ended)
    control.let_go_pruned(db)  # the reaper's pass, which deletes only what workers gone or stopped left
    jobs.limited(db, "mail", concurrency=1)
    jobs.later(db, "mail", "record", {})
    assert len(limits.claimed(db, "mail").jobs) == taken
    jobs.later(db, "other", "record", {}, key="tenant-1")
    assert len(jobs.store.claims.claimed(db, "other", limit=10)) == taken, "its key too, in any queue"
