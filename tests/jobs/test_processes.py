"""Worker processes sharing a queue, and one killed mid-job: every job runs exactly once."""

import signal

import jobs
from tests.jobs.helpers import exited, killed_and_replaced, scalar, start_worker, stopped, wait_for
from tests.jobs.performers import STARTS


def worker_connections(db):
    return scalar(
        db,
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'jobs worker'",
    )


def test_six_worker_processes_run_two_hundred_jobs_exactly_once(runs, database_url):
    workers = [start_worker(database_url, "default") for _ in range(6)]
    try:
        wait_for(lambda: worker_connections(runs) == 18, "six workers with three connections each")
        with runs.transaction():
            for n in range(200):
                jobs.later(runs, "default", "record", {"n": n})
        wait_for(lambda: scalar(runs, "SELECT count(*) FROM jobs") == 0, "the queue to drain")
    finally:
        outputs = [stopped(worker) for worker in workers]
    assert scalar(runs, "SELECT count(*) FROM runs") == 200
    assert scalar(runs, "SELECT count(DISTINCT job) FROM runs") == 200
    assert all(worker.returncode == 0 for worker in workers), outputs


def test_job_of_a_killed_worker_returns_when_its_lease_runs_out(runs, database_url):
    job = killed_and_replaced(
        runs, database_url, "default", lambda: jobs.later(runs, "default", "slow_first_time", {"seconds": 60})
    )
    assert runs.execute("SELECT job, attempt FROM runs").fetchall() == [(job, 2)]


def test_sigterm_lets_the_job_in_hand_finish_and_exits_zero(runs, database_url):
    runs.execute(STARTS)
    runs.execute("TRUNCATE starts")
    worker = start_worker(database_url, "default")
    job = jobs.later(runs, "default", "started_then_held", {"seconds": 1, "record": True})
    wait_for(lambda: scalar(runs, "SELECT count(*) FROM starts WHERE job = %s", (job,)) == 1, "the job to start")
    worker.send_signal(signal.SIGTERM)
    output = exited(worker)
    assert worker.returncode == 0, output
    assert scalar(runs, "SELECT count(*) FROM runs WHERE job = %s", (job,)) == 1
    assert jobs.listed(runs) == []
