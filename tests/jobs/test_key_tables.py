"""The unique keys and the concurrency keys hold by tables of their own (schema step 15), not by unique indexes of
jobs: a table split into partitions, as the held-snapshot design needs, can hold no unique index over all of them.

Each test drops the index that kept the promise before, in a schema of its own, and shows the promise kept.
"""

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo

import jobs
from jobs.store import claims, schema
from tests.jobs.helpers import PRIVATE, scalar


@pytest.fixture
def owner(private_url):
    """An autocommit connection to a schema of the test's own, whose jobs have no unique index but their ids'."""
    with psycopg.connect(private_url, autocommit=True) as conn:
        conn.execute("DROP INDEX jobs_unique_key, jobs_key_slot_in_work")
        yield conn


def test_a_unique_key_queues_one_job_while_it_waits_or_runs_and_another_once_it_ended(owner):
    first = jobs.later(owner, "default", "noop", {}, unique="report")
    assert first is not None
    assert jobs.later(owner, "default", "noop", {}, unique="report") is None, "the key is taken while it waits"
    [held] = claims.claimed(owner, "default")
    assert jobs.later(owner, "default", "noop", {}, unique="report") is None, "and while it runs"
    claims.finished(owner, [held])
    assert jobs.later(owner, "default", "noop", {}, unique="report") not in (None, first), "free once it ended"


def test_a_job_on_the_shelf_stays_there_while_another_holds_its_unique_key(owner):
    doomed = jobs.later(owner, "default", "noop", {}, unique="report")
    [held] = claims.claimed(owner, "default")
    claims.attempt_failed(owner, held, claims.FailedAttempt("broken"), 0, held.attempt)  # failed for good
    waiting = jobs.later(owner, "default", "noop", {}, unique="report")
    assert waiting is not None, "a job failed for good holds no key"
    assert jobs.retried(owner, doomed) == 0, "its key is taken"
    jobs.discarded(owner, doomed)
    assert scalar(owner, "SELECT job FROM job_unique_keys WHERE unique_key = 'report'") == waiting


def test_two_jobs_of_one_key_are_never_under_a_claim_at_once(owner):
    ids = [jobs.later(owner, "default", "noop", {}, key="account 7") for _ in range(2)]
    taken = claims.claimed(owner, "default", limit=2)
    assert [job.id for job in taken] == ids[:1], "one claim may not take both"
    assert claims.claimed(owner, "default") == [], "nor a second claim the other while the first runs"
    claims.finished(owner, taken)
    assert [job.id for job in claims.claimed(owner, "default")] == ids[1:], "its turn once the first ended"


def test_a_second_claim_of_a_taken_key_is_refused_even_when_its_snapshot_saw_the_key_free(owner, private_url):
    first, second = (jobs.later(owner, "default", "noop", {}, key="account 7") for _ in range(2))
    owner.execute("UPDATE jobs SET claim = 1 WHERE id = %s", (first,))  # as a claim side by side would leave it
    with psycopg.connect(private_url, autocommit=True) as other:
        other.execute("DELETE FROM job_keys_held")  # what a snapshot from before that claim saw
        other.execute("INSERT INTO job_keys_held (key, key_slot, job) VALUES ('account 7', 0, %s)", (first,))
        with pytest.raises(psycopg.errors.UniqueViolation):
            other.execute("UPDATE jobs SET claim = 2 WHERE id = %s", (second,))


def test_truncating_jobs_frees_every_key(owner):
    jobs.later(owner, "default", "noop", {}, unique="report", key="account 7")
    claims.claimed(owner, "default")
    owner.execute("TRUNCATE jobs")
    left = "SELECT (SELECT count(*) FROM job_unique_keys) + (SELECT count(*) FROM job_keys_held)"
    assert scalar(owner, left) == 0
    assert jobs.later(owner, "default", "noop", {}, unique="report") is not None


def test_the_step_fills_the_tables_from_the_jobs_waiting_and_claimed_before_it(db, database_url):
    db.execute(sql.SQL("DROP SCHEMA IF EXISTS {0} CASCADE; CREATE SCHEMA {0}").format(sql.Identifier(PRIVATE)))
    try:
        url = make_conninfo(database_url, options=f"-c search_path={PRIVATE}")
        with psycopg.connect(url, autocommit=True) as before:
            schema.upgraded(before, 14)
            unique = jobs.later(before, "default", "noop", {}, unique="report")
            keyed = jobs.later(before, "default", "noop", {}, key="account 7")
            jobs.later(before, "default", "noop", {}, key="account 7")
            # claimed as an older copy's claim leaves them: the unique job and the first keyed one
            before.execute("UPDATE jobs SET claim = 1, attempts = 1 WHERE id = ANY(%s)", ([unique, keyed],))
            schema.upgraded(before)
            assert before.execute("SELECT unique_key, job FROM job_unique_keys").fetchall() == [("report", unique)]
            held = before.execute("SELECT key, key_slot, job FROM job_keys_held").fetchall()
            assert held == [("account 7", 0, keyed)]
            assert jobs.later(before, "default", "noop", {}, unique="report") is None
    finally:
        db.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(PRIVATE)))
