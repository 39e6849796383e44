"""A job's page of the dashboard (jobs.web.detail) and its run now, through WSGI, on a real PostgreSQL.

The page says when the job was queued and how long each failed attempt ran; run now
makes a job that waits for a later moment due, and leaves every other job alone.
"""

import re

import pytest
from werkzeug.test import Client

import jobs
import jobs.web
from jobs.store import claims
from jobs.store.claims import FailedAttempt, Hold
from jobs.web import html
from tests.jobs.performers import doomed
from tests.jobs.test_web import T, get, operator, posted, shelved

HOUR = 3_600_000  # ms


@pytest.fixture
def client(connect):
    """A browser of the dashboard, mounted at the root, whose requests get in when they carry OPERATOR."""
    return Client(jobs.web.app(connect, authorize=operator))


def row(db, id: int) -> tuple:
    """What run now may change of a job."""
    return db.execute("SELECT run_at, scheduled, attempts, claim FROM jobs WHERE id = %s", (id,)).fetchone()


def test_a_job_s_page_says_when_it_was_queued(client, db):
    id = jobs.later(db, "mail", "note", {}, T)
    (queued_at,) = db.execute("SELECT queued_at FROM jobs WHERE id = %s", (id,)).fetchone()
    assert abs(queued_at - jobs.now_ms()) < HOUR, "the database's moment of the insert"
    assert f"<dt>Queued at</dt><dd>{html.moment(queued_at)}</dd>" in get(client, f"/job/{id}").text
    many = jobs.later_many(db, "mail", "note", [{}])
    assert many == 1 and db.execute("SELECT count(*) FROM jobs WHERE queued_at IS NULL").fetchone() == (0,)


def test_a_job_s_page_says_how_long_each_failed_attempt_ran(client, db):
    id = jobs.later(db, "mail", "doomed", {}, T)
    jobs.worked(db, "mail", {"doomed": doomed}, T)
    page = get(client, f"/job/{id}").text
    assert re.search(r"<li>[^<]*doomed[^<]*<span class=\"muted\">\(ran \d+ ms, failed for good at ", page), page
    again = jobs.later(db, "mail", "note", {}, T)
    (job,) = claims.claimed(db, "mail", T)
    assert job.id == again
    claims.attempt_failed(db, job, FailedAttempt("slow and wrong", ran=2.5), 60_000, 5, T)
    assert '<li>slow and wrong <span class="muted">(ran 2.5 s)</span></li>' in get(client, f"/job/{again}").text


def test_each_failed_attempt_says_the_moment_the_table_keeps_of_it(client, db):
    now = jobs.now_ms()
    id = jobs.later(db, "mail", "note", {}, now)
    for reason, wait in (("first", 0), ("second", HOUR)):  # due again at once, then an hour from now
        (job,) = claims.claimed(db, "mail", now)
        claims.attempt_failed(db, job, FailedAttempt(reason, ran=0.25), wait, 5, now)
    page = get(client, f"/job/{id}").text
    due = html.moment(row(db, id)[0])
    assert '<li>first <span class="muted">(ran 250 ms)</span></li>' in page
    assert f'<li>second <span class="muted">(ran 250 ms, next attempt due at {due})</span></li>' in page
    assert "the table keeps no moment of its own for each" in page
    shelf = shelved(db)
    (failed_at,) = db.execute("SELECT run_at FROM jobs WHERE id = %s", (shelf,)).fetchone()
    assert f"failed for good at {html.moment(failed_at)})</span></li>" in get(client, f"/job/{shelf}").text


def test_run_now_makes_a_job_for_later_due_and_the_due_list_shows_it(client, db):
    id = jobs.later(db, "mail", "note", {}, jobs.now_ms() + HOUR)
    assert "Run now" in get(client, f"/job/{id}").text
    answer = posted(client, "/run-now", {"id": str(id)}).text
    assert f"Job {id} is due now" in answer
    run_at, scheduled, _, _ = row(db, id)
    assert not scheduled and run_at <= jobs.now_ms()
    assert f'<a href="/job/{id}">{id}</a>' in get(client, "/jobs?state=due").text


def test_run_now_makes_a_retry_that_waits_out_its_backoff_due(client, db):
    id = jobs.later(db, "mail", "note", {}, T)
    (job,) = claims.claimed(db, "mail", T)
    claims.attempt_failed(db, job, FailedAttempt("try again"), HOUR, 5, T)
    assert f"Job {id} is due now" in posted(client, "/run-now", {"id": str(id)}).text
    run_at, scheduled, attempts, _ = row(db, id)
    assert (scheduled, attempts) == (False, 1) and run_at <= jobs.now_ms()


def test_run_now_leaves_a_due_job_one_in_work_and_one_on_the_shelf_alone(client, db):
    failed = shelved(db)
    held = jobs.later(db, "mail", "note", {}, T)
    claims.claimed(db, "mail", hold=Hold(worker=7))
    due = jobs.later(db, "mail", "note", {}, T)
    for id in (failed, held, due, 999):
        before = row(db, id) if id != 999 else None
        answer = posted(client, "/run-now", {"id": str(id)}).text
        assert f"Job {id} waits for no later moment" in answer and "nothing changed" in answer
        assert (row(db, id) if id != 999 else None) == before
    assert "Run now" not in get(client, f"/job/{due}").text
