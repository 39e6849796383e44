"""Jobs for later: out of the claim's index until their moment, and the claim an index lookup however many wait."""

import threading

from psycopg import sql

import jobs
from jobs.store import claims

WAITING = 100_000  # rows waiting in the future or failed for good, for the plan test


def test_a_job_for_later_is_not_claimed_before_its_moment_and_is_promoted_after(db):
    later_on = jobs.now_ms() + 60_000
    jobs.later(db, "default", "greet", {}, later_on)
    assert jobs.listed(db)[0]["scheduled"] is True
    assert claims.claimed(db, "default", jobs.now_ms()) == []
    assert claims.promoted(db, later_on - 1) == []
    assert claims.promoted(db, later_on) == ["default"]
    assert [job.name for job in claims.claimed(db, "default", later_on)] == ["greet"]


def test_worked_at_a_moment_runs_what_is_due_by_then(db):
    jobs.later(db, "default", "greet", {}, jobs.now_ms() + 3_600_000)
    assert jobs.worked(db, "default", {"greet": lambda *_: None}) is None
    assert jobs.worked(db, "default", {"greet": lambda *_: None}, jobs.now_ms() + 3_600_000) == "ran greet"


def test_an_idle_worker_starts_a_scheduled_job_within_a_poll_of_its_moment(db, connect):
    began = []
    ran = threading.Event()
    worker = jobs.worker(connect, "default", {"greet": lambda *_: (began.append(jobs.now_ms()), ran.set())}, poll=0.2)
    try:
        moment = jobs.now_ms() + 500
        jobs.later(db, "default", "greet", {}, moment)
        assert ran.wait(10)
    finally:
        worker.stop()
        worker.join(10)
    assert moment <= began[0] < moment + 2000


def test_a_retry_after_a_wait_is_scheduled_and_one_at_once_is_not(db):
    @jobs.policy(backoff=jobs.intervals(0, 60))
    def broken(_, args):
        raise RuntimeError("broken")

    jobs.later(db, "default", "broken", {})
    jobs.worked(db, "default", {"broken": broken})
    assert jobs.listed(db)[0]["scheduled"] is False, "again at once: ready for the claim"
    jobs.worked(db, "default", {"broken": broken})
    assert jobs.listed(db)[0]["scheduled"] is True, "again in a minute: waits for its promotion"


def test_the_claim_reads_an_index_beside_many_waiting_and_failed_jobs(db):
    moment = jobs.now_ms()
    jobs.later_many(db, "default", "tomorrow", [{}] * (WAITING // 2), moment + 86_400_000)
    jobs.later_many(db, "default", "broken", [{}] * (WAITING // 2), moment - 60_000)
    db.execute("UPDATE jobs SET attempts = max_attempts WHERE name = 'broken'")
    jobs.later(db, "default", "due", {}, moment - 1000)
    db.execute("VACUUM ANALYZE jobs")
    params = {
        "queue": "default",
        "now": moment,
        "lease": 1000,
        "claim": 0,
        "worker": None,
        "held": None,
        "budgets": "{}",
    }
    db.execute("SET plan_cache_mode = force_generic_plan")  # the plan a prepared claim may settle on
    explain = sql.SQL("EXPLAIN ") + claims.claim_statement(1)
    plan = "\n".join(row[0] for row in db.execute(explain, params, prepare=True))
    db.execute("RESET plan_cache_mode")
    assert "Index Scan using jobs_ready" in plan
    # jobs is never read whole; job_let_go, all but always empty, is (the key test reads it once a statement).
    assert "Seq Scan on jobs " not in plan, plan
    (claimed,) = claims.claimed(db, "default", moment)
    assert claimed.name == "due"
    assert claims.claimed(db, "default", moment) == []
