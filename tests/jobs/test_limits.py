"""Limits on a queue, decided in the claim (limits.py): a job over its queue's limit is never claimed."""

import bisect
import re

import pytest

import jobs
from jobs.store import limits
from tests.jobs.helpers import database_ms, killed_and_replaced, scalar, start_worker, stopped, wait_for
from tests.jobs.test_processes import worker_connections

SECOND = 1000  # ms
RATE = 50  # jobs a second, in the tests of several worker processes


def queued(db, count, queue="mail"):
    with db.transaction():
        return [jobs.later(db, queue, "record", {"n": n}) for n in range(count)]


def test_a_rate_claims_no_more_than_its_window_allows_and_counts_no_attempt(db):
    queued(db, 5)
    jobs.limited(db, "mail", rate=(2, 1.0))
    now = database_ms(db)
    taken = [limits.claimed(db, "mail", now) for _ in range(3)]
    assert [len(claim.jobs) for claim in taken] == [1, 1, 0]
    assert taken[2].room_in == 1.0
    assert scalar(db, "SELECT count(*) FROM jobs WHERE attempts = 0") == 3
    assert len(limits.claimed(db, "mail", now + SECOND - 1).jobs) == 0  # the window still holds both
    assert len(limits.claimed(db, "mail", now + SECOND).jobs) == 1


def test_the_plain_claim_takes_nothing_of_a_limited_queue(db):
    queued(db, 2)
    jobs.limited(db, "mail", rate=(1, 1.0))
    assert jobs.store.claims.claimed(db, "mail", limit=10) == []
    jobs.unlimited(db, "mail")
    assert len(jobs.store.claims.claimed(db, "mail", limit=10)) == 2


# Every claim of the queue "mail" as its limit counted it: the moment the claim wrote in
# the window's starts (the same for each job it took), or, where no limit counted it,
# the moment it updated the row.
CLAIMS_LOGGED = """
CREATE TABLE IF NOT EXISTS claims_logged (job bigint NOT NULL, at bigint NOT NULL);
TRUNCATE claims_logged;
CREATE OR REPLACE FUNCTION claim_logged() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO claims_logged VALUES (NEW.id, coalesce(
        (SELECT starts[cardinality(starts)] FROM job_limits WHERE queue = NEW.queue),
        floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint));
    RETURN NULL;
END $$;
CREATE OR REPLACE TRIGGER claim_logged AFTER UPDATE OF attempts ON jobs
    FOR EACH ROW WHEN (NEW.attempts = OLD.attempts + 1 AND NEW.queue = 'mail') EXECUTE FUNCTION claim_logged();
"""


@pytest.fixture
def claims(runs):
    """Logs the claims of the queue "mail" in claims_logged (see CLAIMS_LOGGED) while the test runs."""
    runs.execute(CLAIMS_LOGGED)
    yield runs
    runs.execute("DROP TRIGGER claim_logged ON jobs")


def busiest(moments, window):
    """The most moments in any half-open window [m, m + window) of ms."""
    moments = sorted(moments)
    return max(bisect.bisect_left(moments, m + window) - n for n, m in enumerate(moments))


def test_four_processes_of_eight_threads_start_at_most_the_rate_in_any_window(claims, database_url):
    jobs.limited(claims, "mail", rate=(RATE, 1.0))
    workers = [start_worker(database_url, "mail", "--threads", "8") for _ in range(4)]
    try:
        wait_for(lambda: worker_connections(claims) == 4 * (8 + 2), "four workers with ten connections each")
        queued(claims, 250)
        wait_for(lambda: scalar(claims, "SELECT count(*) FROM runs") >= 4 * RATE, "four windows' jobs", timeout=20)
    finally:
        outputs = [stopped(worker) for worker in workers]
    moments = [row[0] for row in claims.execute("SELECT at FROM claims_logged ORDER BY at")]
    in_three_windows = sum(1 for moment in moments if moment < moments[0] + 3 * SECOND)
    print(f"busiest window {busiest(moments, SECOND)}, first three windows {in_three_windows}")
    assert busiest(moments, SECOND) <= RATE
    assert in_three_windows >= 0.95 * 3 * RATE  # the rate achieved while jobs waited
    assert scalar(claims, "SELECT count(*) FROM runs WHERE attempt > 1") == 0
    assert all(worker.returncode == 0 for worker in workers), outputs


SPANS = "CREATE TABLE IF NOT EXISTS spans (job bigint, key text, began timestamptz, ended timestamptz); TRUNCATE spans"
# The most spans in work at one moment: at each span's beginning, those begun and not ended.
MOST_AT_ONCE = """
SELECT max((SELECT count(*) FROM spans AS other WHERE other.began <= span.began AND span.began < other.ended))
FROM spans AS span
"""


def test_four_processes_keep_at_most_the_concurrency_in_work_and_reach_it(runs, database_url):
    runs.execute(SPANS)
    jobs.limited(runs, "mail", concurrency=3)
    workers = [start_worker(database_url, "mail", "--threads", "4") for _ in range(4)]
    try:
        wait_for(lambda: worker_connections(runs) == 4 * (4 + 2), "four workers with six connections each")
        with runs.transaction():
            for _ in range(24):
                jobs.later(runs, "mail", "span", {"seconds": 0.1})
        wait_for(lambda: scalar(runs, "SELECT count(*) FROM spans") == 24, "every job", timeout=20)
    finally:
        outputs = [stopped(worker) for worker in workers]
    assert scalar(runs, MOST_AT_ONCE) == 3
    assert all(worker.returncode == 0 for worker in workers), outputs


def test_the_slot_of_a_killed_worker_comes_back_when_its_lease_runs_out(runs, database_url):
    jobs.limited(runs, "mail", concurrency=1)
    waiting = []
    hung = killed_and_replaced(
        runs,
        database_url,
        "mail",
        lambda: jobs.later(runs, "mail", "slow_first_time", {"seconds": 60}),
        meanwhile=lambda: waiting.append(jobs.later(runs, "mail", "record", {})),
    )
    assert sorted(runs.execute("SELECT job, attempt FROM runs").fetchall()) == [(hung, 2), (waiting[0], 1)]


@pytest.mark.parametrize(
    ("options", "said"),
    [
        ({}, "limit 'mail' by a rate, a concurrency, a number per key or several"),
        ({"rate": (0, 1.0)}, "a rate is (jobs, seconds)"),
        ({"rate": (14, 0)}, "a rate is (jobs, seconds)"),
        ({"rate": (14, "1s")}, "a rate is (jobs, seconds)"),
        ({"rate": 14}, "a rate is (jobs, seconds)"),
        ({"rate": (True, 1.0)}, "a rate is (jobs, seconds)"),
        ({"concurrency": 0}, "a concurrency is 1 to"),
        ({"concurrency": 2.5}, "a concurrency is 1 to"),
        ({"concurrency": 10**400}, f"a concurrency is 1 to {limits.CONCURRENCY_MAX} jobs at once"),
        ({"rate": (10**400, 1.0)}, f"a rate is (jobs, seconds) with 1 to {limits.RATE_MAX} jobs"),
        ({"rate": (14, 1e300)}, f"in more than 0 s and {limits.WINDOW_MAX} s at the most"),
        ({"rate": (14, float("inf"))}, f"in more than 0 s and {limits.WINDOW_MAX} s at the most"),
        ({"rate": (14, float("nan"))}, "a rate is (jobs, seconds)"),
    ],
)
def test_a_limit_that_makes_no_sense_is_refused_and_changes_nothing(db, options, said):
    jobs.limited(db, "mail", rate=(14, 1.0))
    with pytest.raises(ValueError, match=re.escape(said)):
        jobs.limited(db, "mail", **options)
    assert db.execute("SELECT rate, per_ms, concurrency FROM job_limits").fetchall() == [(14, 1000, None)]
