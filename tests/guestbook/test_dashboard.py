"""The job queue's dashboard at /jobs: for the accounts an operator granted it, or anyone in development."""

import logging
import re
import subprocess
import sys

import pytest

import jobs
import mail
from guestbook import create_app, development, headers, sessions, upkeep
from guestbook import db as guestbook_db
from guestbook.__main__ import main

from ..mail.smtpd import body_of, free_port
from .conftest import Visitor
from .served import ROOT, WAIT, environment
from .test_headers import assert_denies_every_feature


@pytest.fixture
def operator(database_url, monkeypatch, capsys):
    """Runs `python -m guestbook admins ...` in this process, on the tests' database; answers (exit status, output)."""
    monkeypatch.setenv("DATABASE_URL", database_url)

    def ran(*args):
        status = main(["admins", *args])
        return status, capsys.readouterr().out.strip()

    return ran


@pytest.fixture
def admin(visitor, operator):
    """Ada, a confirmed account signed in, whom an operator granted the dashboard."""
    visitor.confirmed_account("ada@example.com")
    assert operator("add", "Ada@example.com")[0] == 0
    assert visitor.signin("ada@example.com").status_code == 302


def test_a_visitor_who_is_not_signed_in_is_refused(client):
    assert client.get("/jobs/").status_code == 403
    assert 'href="/jobs/"' not in client.get("/").get_data(as_text=True)


def test_an_account_no_operator_granted_is_refused_and_not_shown_the_link(client, visitor):
    visitor.signed_in("bo@example.com")
    assert client.get("/jobs/").status_code == 403
    assert client.get("/jobs/failed").status_code == 403
    assert 'href="/jobs/"' not in client.get("/").get_data(as_text=True)


def test_an_address_once_named_in_ADMIN_EMAILS_gets_nothing_by_signing_up(app, client, visitor, monkeypatch):
    monkeypatch.setenv("ADMIN_EMAILS", "ada@example.com")
    app.config["ADMIN_EMAILS"] = "ada@example.com"  # as the app read it before grants were an operator's act
    visitor.signed_in("ada@example.com")
    assert client.get("/jobs/").status_code == 403


def test_serve_refuses_to_start_while_ADMIN_EMAILS_is_set(database_url, tmp_path):
    env = environment(DATABASE_URL=database_url, PYTHONPATH=str(ROOT), ADMIN_EMAILS="ada@example.com")
    done = subprocess.run(
        [sys.executable, "-m", "guestbook", "serve", "--development", "--port", str(free_port())],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=WAIT,
    )
    assert done.returncode == 2
    assert "grant it to a confirmed account with `python -m guestbook admins add ADDRESS`" in done.stderr


def test_an_operator_grants_only_a_confirmed_account(visitor, operator):
    assert operator("add", "nobody@example.com") == (
        1,
        "no confirmed account has the address nobody@example.com: it must sign up and confirm first",
    )
    visitor.signup("ada@example.com")  # unconfirmed: whoever signed up may not own the address
    assert operator("add", "ada@example.com")[0] == 1
    assert operator("list") == (0, "no account may see the dashboard")


def test_an_operator_takes_the_dashboard_back_from_the_admin_s_next_request(client, admin, operator):
    assert client.get("/jobs/").status_code == 200
    assert operator("list")[1].startswith("ada@example.com  since ")
    assert operator("remove", "ada@example.com") == (
        0,
        "ada@example.com may no longer see the dashboard, from its next request on",
    )
    assert client.get("/jobs/").status_code == 403
    assert 'href="/jobs/"' not in client.get("/").get_data(as_text=True)
    assert operator("remove", "ada@example.com") == (1, "ada@example.com could not see the dashboard")


def test_an_account_an_operator_granted_sees_the_dashboard_and_the_link_to_it(client, admin):
    assert 'href="/jobs/"' in client.get("/").get_data(as_text=True)
    page = client.get("/jobs/").get_data(as_text=True)
    assert '<link rel="stylesheet" href="/jobs/style.css">' in page
    assert client.get("/jobs/style.css").status_code == 200


def test_an_admin_retries_a_failed_letter_from_the_dashboard(client, admin, db):
    job = jobs.later(db, mail.QUEUE, "deliver", {}, 1000)
    db.execute("UPDATE jobs SET max_attempts = 0, failure = 'the mail server was away'")
    shelf = client.get("/jobs/failed").get_data(as_text=True)
    assert "the mail server was away" in shelf
    token = re.search(r'name="csrf" value="([^"]+)"', shelf).group(1)
    answer = client.post("/jobs/retry", data={"csrf": token, "id": str(job)}, follow_redirects=True)
    assert "1 of 1 back in the queue" in answer.get_data(as_text=True)
    assert jobs.failed(db) == []


def test_the_dashboard_shows_the_next_run_of_each_upkeep_schedule(client, admin):
    page = client.get("/jobs/schedules").get_data(as_text=True)
    for schedule in upkeep.schedules:
        row = re.search(rf'<tr><td data-label="Schedule">{schedule.key}</td>(.*?)</tr>', page)
        assert row, f"{schedule.key} is on the schedules page"
        assert re.search(r'data-label="Next run">\d{4}-\d\d-\d\d 03:\d\d:00 UTC<', row.group(1))


def test_a_refused_visitor_gets_the_guestbook_s_page_saying_who_may_see_the_dashboard(client, visitor):
    visitor.signed_in("bo@example.com")
    for path in ("/jobs/", "/jobs/failed", "/jobs/style.css"):
        answer = client.get(path)
        page = answer.get_data(as_text=True)
        assert answer.status_code == 403, path
        assert 'href="/static/guestbook.css"' in page and "an operator granted" in page, path
    assert client.post("/jobs/pause", data={"queue": "mail"}).status_code == 403


class TestDevelopment:
    @pytest.fixture
    def settings(self, settings):
        return {**settings, "DEVELOPMENT": True}

    def test_a_browser_without_the_key_is_told_of_the_printed_link_and_shown_no_link_it_cannot_open(self, client):
        answer = client.get("/jobs/")
        page = answer.get_data(as_text=True)
        assert answer.status_code == 403
        assert 'href="/static/guestbook.css"' in page and "the link the server printed when it started" in page
        home = client.get("/").get_data(as_text=True)
        assert 'href="/jobs/"' not in home and 'href="/outbox"' not in home

    def test_the_pages_under_the_printed_link_show_the_dashboard(self, app, client):
        keyed = development.link(app, "http://localhost").removeprefix("http://localhost").rstrip("/")
        assert client.get("/jobs/").status_code == 403
        assert client.get(f"{keyed}/jobs/").status_code == 200
        home = client.get(f"{keyed}/").get_data(as_text=True)
        assert f'href="{keyed}/jobs/"' in home and f'href="{keyed}/outbox"' in home


def everything_said_of(client, token, job, database_url) -> list[str]:
    """The dashboard's pages with `job` waiting, then cancelled onto the shelf, and what `python -m jobs` says then.

    The fifth is the job's page with ?args=shown while it waits; the last is `python -m jobs failed --full`.
    """
    pages = [
        "/jobs/",
        "/jobs/queues.fragment",
        "/jobs/failed",
        f"/jobs/job/{job}",
        f"/jobs/job/{job}?args=shown",
        "/jobs/metrics",
        "/jobs/batches",
        "/jobs/schedules",
        "/",
    ]
    seen = [client.get(path) for path in pages]
    assert client.post("/jobs/cancel", data={"csrf": token, "id": str(job)}).status_code == 303  # onto the shelf
    seen += [client.get(path) for path in pages]
    assert [(path, answer.status_code) for path, answer in zip(pages * 2, seen, strict=True)] == [
        (path, 200) for path in pages * 2
    ]
    said = [
        subprocess.run(
            [sys.executable, "-m", "jobs", *command],
            env=environment(DATABASE_URL=database_url, PYTHONPATH=str(ROOT)),
            capture_output=True,
            text=True,
            timeout=WAIT,
        )
        for command in (["status"], ["failed"], ["failed", "--full"])
    ]
    return [answer.get_data(as_text=True) for answer in seen] + [done.stdout + done.stderr for done in said]


def test_a_reset_letter_waiting_on_a_paused_queue_holds_no_link_to_show(
    app, client, admin, post, db, database_url, caplog
):
    caplog.set_level(logging.DEBUG)
    token = re.search(r'name="csrf" value="([^"]+)"', client.get("/jobs/").get_data(as_text=True)).group(1)
    assert client.post("/jobs/pause", data={"csrf": token, "queue": mail.QUEUE}).status_code == 303
    stranger = Visitor(app.test_client(), post)
    assert stranger.submit("/resets/new", email="ada@example.com").status_code == 302
    ((asked, args),) = db.execute("SELECT id, args FROM jobs WHERE queue = %s", [mail.QUEUE]).fetchall()

    assert args == {"kind": "reset", "account": 1, "to": "ada@example.com", "client": "127.0.0.1"}  # no link to hide
    reset = everything_said_of(client, token, asked, database_url)  # the job `write`, waiting, then on the shelf
    assert client.post("/jobs/retry", data={"csrf": token, "id": str(asked)}).status_code == 303
    assert jobs.worked(db, mail.QUEUE, post.performers) == "ran write"  # as the worker does once resumed
    (letter,) = post.server.letters[-1:]
    secret = re.search(r"/resets/([^/\s]+)/edit", body_of(letter)).group(1)  # made as the letter left
    assert [text for text in reset if secret in text] == []
    assert "&quot;account&quot;: 1" in reset[4] and "write" in reset[-1]  # shown whole, and listed on the shelf
    assert secret not in caplog.text


@pytest.mark.parametrize(
    "headers",
    [
        {"Sec-Fetch-Mode": "cors", "Sec-Fetch-Dest": "empty"},  # a script's fetch
        {jobs.web.REFRESH_HEADER: "1"},
    ],
)  # a browser that sends no Fetch Metadata
def test_the_queues_page_s_refresh_does_not_keep_an_unattended_session_alive(client, admin, db, headers):
    db.execute("UPDATE sessions SET seen_at = now() - make_interval(secs => %s)", [sessions.SEEN_EVERY + 5])
    before = db.execute("SELECT seen_at FROM sessions").fetchone()[0]

    for _ in range(3):
        assert client.get("/jobs/queues.fragment", headers=headers).status_code == 200

    assert db.execute("SELECT seen_at FROM sessions").fetchone()[0] == before
    assert client.get("/jobs/", headers={"Sec-Fetch-Mode": "navigate"}).status_code == 200  # the person looks
    assert db.execute("SELECT seen_at FROM sessions").fetchone()[0] > before
    db.execute("UPDATE sessions SET seen_at = now() - make_interval(secs => %s)", [sessions.SESSION_IDLE + 1])
    assert client.get("/jobs/queues.fragment", headers=headers).status_code == 403  # idle: the session has ended


def test_the_dashboard_s_answers_carry_the_guestbook_s_headers(client, admin):
    answer = client.get("/jobs/")
    assert answer.headers["Strict-Transport-Security"] == f"max-age={headers.HSTS_MAX_AGE}"
    assert (answer.headers["X-Frame-Options"], answer.headers["Referrer-Policy"]) == ("DENY", "no-referrer")
    assert "script-src 'self'" in answer.headers["Content-Security-Policy"]  # its own policy, for its script
    assert_denies_every_feature(answer.headers.get("Permissions-Policy", ""), "/jobs/")


def test_a_dashboard_form_from_another_session_or_another_site_is_refused(client, visitor, admin, db):
    token = re.search(r'name="csrf" value="([^"]+)"', client.get("/jobs/").get_data(as_text=True)).group(1)
    elsewhere = client.post(
        "/jobs/pause", data={"csrf": token, "queue": "mail"}, headers={"Origin": "https://attacker.example"}
    )
    visitor.signout()
    assert visitor.signin("ada@example.com").status_code == 302  # a new session: the old page's token is not its own
    stale = client.post(
        "/jobs/pause", data={"csrf": token, "queue": "mail"}, headers={"Origin": "http://guestbook.test"}
    )

    assert (elsewhere.status_code, stale.status_code) == (403, 403)
    assert jobs.paused_queues(db) == set()
    token = re.search(r'name="csrf" value="([^"]+)"', client.get("/jobs/").get_data(as_text=True)).group(1)
    fresh = client.post(
        "/jobs/pause", data={"csrf": token, "queue": "mail"}, headers={"Origin": "http://guestbook.test"}
    )
    assert fresh.status_code == 303


def test_the_dashboard_s_csrf_cookie_is_secure_behind_a_proxy_that_ends_https(settings, admin, post, monkeypatch):
    monkeypatch.setenv("BASE_URL", "https://guestbook.example")  # as production always is; the app itself sees http
    served = create_app(settings)
    try:
        browser = Visitor(served.test_client(), post)
        assert browser.signin("ada@example.com").status_code == 302
        assert "; Secure" in browser.client.get("/jobs/").headers["Set-Cookie"]
    finally:
        guestbook_db.closed(served)
