"""stop(drain=True) ends only when nothing is due: a job whose moment came just before the stop is worked first.

Both ways a job becomes due at a moment of its own are shown: `later(..., at=)` a
moment 150 ms ahead, and a retry 0.2 s after a failed attempt. The worker polls every
few seconds here, so no promotion of its listener comes between the moment and the stop.
"""

import pytest

import jobs
from tests.jobs.helpers import database_ms, scalar, wait_for

POLL = 5.0  # seconds between the listener's chores: none runs during a test, past its first
AHEAD = 150  # ms ahead of now the job queued with at= is due
RETRY = 0.2  # seconds the failed attempt's retry waits


@pytest.fixture
def runs():
    return []


@pytest.fixture
def worker(db, connect, runs):
    """A one-thread worker with a performer `flaky` that fails its first attempt, and `later`; warmed up."""

    @jobs.policy(attempts=3, backoff=jobs.intervals(RETRY, RETRY))
    def flaky(conn, args):
        runs.append(("flaky", jobs.current_job().attempt))
        if jobs.current_job().attempt == 1:
            raise RuntimeError("first attempt fails")

    def later(conn, args):
        runs.append(("later", jobs.current_job().attempt))

    def warm(conn, args):
        pass

    started = jobs.worker(connect, "default", {"flaky": flaky, "later": later, "warm": warm}, threads=1, poll=POLL)
    jobs.later(db, "default", "warm", {})
    wait_for(lambda: scalar(db, "SELECT count(*) FROM jobs") == 0, "the worker to work a first job")
    yield started
    started.stop()
    started.join(10)


def drained(db, worker) -> list:
    """Stops `worker` with drain=True and answers the jobs left in the table once it has ended."""
    worker.stop(drain=True)
    assert worker.join(10), "the drain ended"
    return db.execute("SELECT id, name, attempts, failure FROM jobs").fetchall()


def test_a_drain_works_a_job_whose_moment_came_before_the_stop(db, worker, runs):
    at = database_ms(db) + AHEAD
    jobs.later(db, "default", "later", {}, at=at)
    wait_for(lambda: database_ms(db) > at, "the job's moment")
    left = drained(db, worker)
    assert left == [], f"the drain ended with a due job left: {left}"
    assert runs == [("later", 1)]


def test_a_drain_works_a_retry_whose_backoff_ran_out_before_the_stop(db, worker, runs):
    job = jobs.later(db, "default", "flaky", {})
    wait_for(lambda: scalar(db, "SELECT failure FROM jobs WHERE id = %s", (job,)), "the first attempt to fail")
    due = scalar(db, "SELECT run_at FROM jobs WHERE id = %s", (job,))
    wait_for(lambda: database_ms(db) > due, "the retry's moment")
    left = drained(db, worker)
    assert left == [], f"the drain ended with a due retry left: {left}"
    assert runs == [("flaky", 1), ("flaky", 2)]
