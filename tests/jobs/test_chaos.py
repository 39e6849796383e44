"""The fast paths under chaos: 20,000 jobs on four processes, random failures, one process killed."""

import random
import signal

import jobs
from tests.jobs.helpers import scalar, start_worker, stopped, wait_for
from tests.jobs.performers import RUNS
from tests.jobs.test_processes import worker_connections

JOBS = 20_000
FAILING = 0.1  # the share of jobs whose first attempt fails
SETTLE_WAIT = 240.0  # seconds the jobs may take to settle: each writes, so each commits on its own


def test_twenty_thousand_jobs_settle_exactly_once_despite_failures_and_a_killed_worker(db, database_url):
    db.execute(RUNS)
    db.execute("TRUNCATE runs")
    chance = random.Random(20_000)
    fails = [chance.random() < FAILING for _ in range(JOBS)]
    workers = [start_worker(database_url, "default", "--lease", "2") for _ in range(4)]
    try:
        wait_for(lambda: worker_connections(db) == 12, "four workers with three connections each")
        jobs.later_many(db, "default", "chaotic", [{"n": n, "fails": fail} for n, fail in enumerate(fails)])
        wait_for(lambda: scalar(db, "SELECT count(*) FROM runs") >= JOBS // 4, "a quarter of the jobs to run")
        workers[0].send_signal(signal.SIGKILL)
        wait_for(lambda: scalar(db, "SELECT count(*) FROM jobs") == 0, "every job to settle", timeout=SETTLE_WAIT)
    finally:
        for worker in workers:
            stopped(worker)
    assert scalar(db, "SELECT count(*) FROM runs") == JOBS, "no job ran twice, none was lost"
    assert scalar(db, "SELECT count(DISTINCT job) FROM runs") == JOBS
    first_attempts = dict(db.execute("SELECT (j.n)::int, r.attempt FROM runs r, LATERAL (SELECT r.job - 1 AS n) j"))
    retried = [n for n, fail in enumerate(fails) if fail]
    assert all(first_attempts[n] >= 2 for n in retried), "a job that failed ran again, on its next attempt"
    assert sum(fails) > JOBS * FAILING * 0.8
