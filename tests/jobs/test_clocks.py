"""Workers on machines whose clocks disagree: every lease is read on the database's clock."""

import time

import jobs
from tests.jobs.helpers import PROJECT, scalar, start_worker, stopped, wait_for
from tests.jobs.performers import STARTS

AHEAD = 60  # seconds the second worker's clock runs fast: twice the lease
HELD = 8  # seconds the job runs


def test_a_worker_whose_clock_runs_fast_does_not_take_a_live_lease(db, database_url):
    db.execute(STARTS)
    db.execute("TRUNCATE starts")
    honest = start_worker(database_url, "default")
    fast = None
    try:
        job = jobs.later(db, "default", "started_then_held", {"seconds": HELD})
        wait_for(lambda: scalar(db, "SELECT count(*) FROM starts") == 1, "the first worker to start the job")
        fast = start_worker(
            database_url,
            "default",
            env={"PYTHONPATH": f"{PROJECT / 'tests' / 'jobs' / 'clock_ahead'}:{PROJECT}", "CLOCK_AHEAD": str(AHEAD)},
        )
        wait_for(
            lambda: (
                scalar(
                    db,
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                    " AND application_name = 'jobs worker'",
                )
                == 6
            ),
            "the fast worker to connect while the job runs",
        )
        wait_for(lambda: scalar(db, "SELECT count(*) FROM jobs WHERE id = %s", (job,)) == 0, "the job to finish")
    finally:
        outputs = [stopped(process) for process in (honest, fast) if process is not None]
    assert scalar(db, "SELECT count(*) FROM starts") == 1, outputs


def database_now(db) -> int:
    return scalar(db, "SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint")


def test_jobs_queued_for_now_are_due_by_the_databases_clock_not_this_machines(db, monkeypatch):
    real = time.time_ns
    monkeypatch.setattr(time, "time_ns", lambda: real() + 3600 * 1_000_000_000)  # this machine is an hour fast
    jobs.later(db, "default", "greet", {"n": 1})
    jobs.later_many(db, "default", "greet", [{"n": 2}, {"n": 3}])
    moments = [row[0] for row in db.execute("SELECT run_at FROM jobs WHERE NOT scheduled")]
    assert len(moments) == 3
    assert all(abs(moment - database_now(db)) < 60_000 for moment in moments)
    ran = []
    while jobs.worked(db, "default", {"greet": lambda _, args: ran.append(args["n"])}):
        pass
    assert ran == [1, 2, 3]
