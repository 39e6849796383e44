"""The job queue's dashboard at /jobs: for the accounts ADMIN_EMAILS names, or anyone in development."""

import re

import pytest

import jobs
import mail
from guestbook import upkeep


@pytest.fixture
def settings(settings):
    return {**settings, "ADMIN_EMAILS": "Ada@example.com, root@example.com"}


def test_a_visitor_who_is_not_signed_in_is_refused(client):
    assert client.get("/jobs/").status_code == 403
    assert 'href="/jobs/"' not in client.get("/").get_data(as_text=True)


def test_an_account_ADMIN_EMAILS_does_not_name_is_refused_and_not_shown_the_link(client, visitor):
    visitor.signed_in("bo@example.com")
    assert client.get("/jobs/").status_code == 403
    assert client.get("/jobs/failed").status_code == 403
    assert 'href="/jobs/"' not in client.get("/").get_data(as_text=True)


def test_an_account_ADMIN_EMAILS_names_sees_the_dashboard_and_the_link_to_it(client, visitor):
    visitor.signed_in("ada@example.com")
    assert 'href="/jobs/"' in client.get("/").get_data(as_text=True)
    page = client.get("/jobs/").get_data(as_text=True)
    assert '<link rel="stylesheet" href="/jobs/style.css">' in page
    assert client.get("/jobs/style.css").status_code == 200


def test_an_admin_retries_a_failed_letter_from_the_dashboard(client, visitor, db):
    visitor.signed_in("ada@example.com")
    job = jobs.later(db, mail.QUEUE, "deliver", {}, 1000)
    db.execute("UPDATE jobs SET max_attempts = 0, failure = 'the mail server was away'")
    shelf = client.get("/jobs/failed").get_data(as_text=True)
    assert "the mail server was away" in shelf
    token = re.search(r'name="csrf" value="([^"]+)"', shelf).group(1)
    answer = client.post("/jobs/retry", data={"csrf": token, "id": str(job)})
    assert "1 of 1 back in the queue" in answer.get_data(as_text=True)
    assert jobs.failed(db) == []


def test_the_dashboard_shows_the_next_run_of_each_upkeep_schedule(client, visitor):
    visitor.signed_in("ada@example.com")
    page = client.get("/jobs/schedules").get_data(as_text=True)
    for schedule in upkeep.schedules:
        row = re.search(rf'<tr><td data-label="Schedule">{schedule.key}</td>(.*?)</tr>', page)
        assert row, f"{schedule.key} is on the schedules page"
        assert re.search(r'data-label="Next run">\d{4}-\d\d-\d\d 03:\d\d:00 UTC<', row.group(1))


class TestDevelopment:
    @pytest.fixture
    def settings(self, settings):
        return {**settings, "DEVELOPMENT": True, "ADMIN_EMAILS": ""}

    def test_anyone_on_the_machine_sees_the_dashboard(self, client):
        assert client.get("/jobs/").status_code == 200
        assert 'href="/jobs/"' in client.get("/").get_data(as_text=True)
