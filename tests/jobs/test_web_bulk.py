"""Bulk actions of the dashboard (jobs.web.bulk) on a list's filtered set, through WSGI, on a real PostgreSQL.

The preview counts what the action would take and changes nothing; the action takes
every job that matches, a chunk per transaction, and says where to go on when its
time ran out; a POST needs its CSRF token, and a state the action cannot take is refused.
"""

import re

import pytest
from werkzeug.test import Client

import jobs
import jobs.web
from jobs.store import shelf
from tests.jobs.test_web import OPERATOR, T, everything, get, operator, posted, shelved


@pytest.fixture
def client(connect):
    """A browser of the dashboard, mounted at the root, whose requests get in when they carry OPERATOR."""
    return Client(jobs.web.app(connect, authorize=operator))


def test_the_preview_counts_the_jobs_that_match_and_changes_nothing(client, db):
    for _ in range(3):
        shelved(db)
    shelved(db, queue="reports")
    before = everything(db)
    list_page = get(client, "/jobs?state=failed&queue=mail").text
    assert 'href="/bulk?action=retry&amp;state=failed&amp;queue=mail"' in list_page
    page = get(client, "/bulk?action=retry&state=failed&queue=mail").text
    assert "3 failed jobs on mail would be back in the queue, 1,000 per transaction." in page
    assert '<button type="submit">Retry them</button>' in page
    assert everything(db) == before


def test_a_bulk_retry_takes_every_job_that_matches_a_chunk_per_transaction(client, db, monkeypatch):
    monkeypatch.setattr("jobs.web.bulk.BULK_CHUNK", 2)
    chunks = []
    retried = shelf.retried
    monkeypatch.setattr(shelf, "retried", lambda db, *ids: chunks.append(len(ids)) or retried(db, *ids))
    for _ in range(5):
        shelved(db)
    other = shelved(db, queue="reports")
    answer = posted(client, "/bulk", {"action": "retry", "state": "failed", "queue": "mail"}).text
    assert "5 of 5 failed jobs on mail back in the queue." in answer
    assert chunks == [2, 2, 1]
    assert [job["id"] for job in jobs.failed(db)] == [other]


def test_a_bulk_cancel_takes_the_jobs_a_filter_by_name_matches(client, db):
    notes = [jobs.later(db, "mail", "note", {}, T) for _ in range(2)]
    letter = jobs.later(db, "mail", "deliver", {}, T)
    answer = posted(client, "/bulk", {"action": "cancel", "state": "due", "name": "note"}).text
    assert "2 of 2 due jobs named note cancelled." in answer
    assert sorted(job["id"] for job in jobs.failed(db)) == notes
    assert [row[0] for row in db.execute("SELECT id FROM jobs WHERE attempts < max_attempts")] == [letter]


def test_a_bulk_discard_by_an_argument_s_value_leaves_the_others(client, db):
    ada = shelved(db, args={"to": "ada@example.com"})
    bob = shelved(db, args={"to": "bob@example.com"})
    answer = posted(client, "/bulk", {"action": "discard", "state": "failed", "q": "ada@example.com"}).text
    assert "1 of 1 failed jobs with an argument ada@example.com discarded." in answer
    assert [job["id"] for job in jobs.failed(db)] == [bob] and ada != bob


def test_a_bulk_action_whose_time_ran_out_says_so_and_goes_on_from_there(client, db, monkeypatch):
    monkeypatch.setattr("jobs.web.bulk.BULK_CHUNK", 2)
    monkeypatch.setattr("jobs.web.bulk.BULK_SECONDS", 0)
    for _ in range(3):
        shelved(db)
    answer = posted(client, "/bulk", {"action": "discard", "state": "failed"}).text
    assert "2 of 2 failed jobs discarded." in answer and "stopped: more may match" in answer
    after = re.search(r'name="after" value="([^"]+)"', answer).group(1)
    answer = posted(client, "/bulk", {"action": "discard", "state": "failed", "after": after}).text
    assert "1 of 1 failed jobs discarded." in answer and "Go on" not in answer
    assert jobs.failed(db) == []


@pytest.mark.parametrize(
    "query",
    ["action=retry&state=due", "action=cancel&state=failed", "action=explode&state=failed", "action=retry"],
)
def test_a_bulk_action_on_a_state_it_cannot_take_is_refused_and_changes_nothing(client, db, query):
    shelved(db)
    jobs.later(db, "mail", "note", {}, T)
    before = everything(db)
    assert get(client, f"/bulk?{query}").status_code == 400
    form = dict(part.split("=") for part in query.split("&"))
    assert posted(client, "/bulk", form).status_code == 400
    assert everything(db) == before


def test_a_bulk_action_needs_its_csrf_token_and_authorization(client, db):
    shelved(db)
    before = everything(db)
    assert client.post("/bulk", data={"action": "discard", "state": "failed"}, environ_base=OPERATOR).status_code == 403
    assert client.get("/bulk?action=discard&state=failed").status_code == 403
    assert everything(db) == before
