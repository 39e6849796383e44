"""The /outbox page of development: the letters the worker wrote, newest first, links clickable."""

import re

import pytest

import jobs
import mail
from guestbook import development

from .conftest import PASSWORD


@pytest.fixture
def settings(settings):
    return {**settings, "DEVELOPMENT": True}


@pytest.fixture
def keyed(app, client):
    """The client has opened the link the server prints at start, as the person who started it does."""
    assert client.get(development.link(app, "http://localhost")).status_code == 302
    return client


@pytest.fixture
def outbox(tmp_path, monkeypatch):
    """MAIL_URL unset, so that letters go to an outbox folder of the test's own."""
    monkeypatch.delenv("MAIL_URL")
    monkeypatch.setenv("MAIL_OUTBOX", str(tmp_path))
    return tmp_path


def test_outbox_shows_sent_letters_newest_first_with_clickable_links(keyed, client, visitor, db, outbox):
    visitor.signup("ada@example.com")
    visitor.signup("bo@example.com")
    while jobs.worked(db, mail.QUEUE, mail.performers):
        pass

    page = client.get("/outbox").get_data(as_text=True)

    assert len(list(outbox.glob("*.eml"))) == 2
    assert page.index("To bo@example.com") < page.index("To ada@example.com")
    assert '<a href="http://guestbook.test/confirm/' in page


def test_outbox_link_confirms_the_account(keyed, client, visitor, db, outbox):
    visitor.signup("ada@example.com")
    jobs.worked(db, mail.QUEUE, mail.performers)
    page = client.get("/outbox").get_data(as_text=True)
    link = page.split('<a href="http://guestbook.test', 1)[1].split('"', 1)[0]

    visitor.submit(link, password=PASSWORD)

    assert visitor.signin("ada@example.com").status_code == 302


def test_development_cookies_are_not_secure(visitor):
    visitor.confirmed_account("ada@example.com")

    assert "Secure" not in visitor.signin("ada@example.com").headers["Set-Cookie"]


def test_outbox_is_not_found_outside_development(database_url, db, smtp):
    from guestbook import create_app
    from guestbook import db as guestbook_db

    app = create_app({"DATABASE_URL": database_url, "SECRET_KEY": "a secret for tests only"})
    try:
        assert app.test_client().get("/outbox").status_code == 404
    finally:
        guestbook_db.closed(app)


@pytest.mark.parametrize(
    "host", ["rebound.example", "rebound.example:5000", "127.0.0.1.rebound.example", "localhost.example"]
)
def test_development_refuses_host_names_that_are_not_local(client, visitor, db, outbox, host):
    visitor.signup("ada@example.com")
    jobs.worked(db, mail.QUEUE, mail.performers)

    answer = client.get("/outbox", headers={"Host": host})

    assert answer.status_code == 400
    assert "guestbook.test/confirm/" not in answer.get_data(as_text=True)
    assert visitor.client.post("/signup", data={"email": "bo@example.com"}, headers={"Host": host}).status_code == 400
    assert db.execute("SELECT count(*) FROM accounts").fetchone()[0] == 1


@pytest.mark.parametrize("host", ["127.0.0.1:5000", "localhost:5000", "localhost", "guestbook.test"])
def test_development_answers_its_local_names_and_base_urls(app, host):
    browser = app.test_client(use_cookies=False)  # the cookie is sent as a browser would send it to `host`
    cookie = f"{development.COOKIE}={development.key(app)}"
    assert browser.get("/outbox", headers={"Host": host, "Cookie": cookie}).status_code == 200


def test_the_outbox_and_the_dashboard_answer_only_the_browser_that_opened_the_printed_link(app, client, db, outbox):
    for path in ("/outbox", "/jobs/", "/jobs/failed", "/jobs/metrics", "/?key=not-the-key"):
        assert client.get(path).status_code == 403, path
    assert client.post("/jobs/pause", data={"queue": "mail"}).status_code == 403

    opened = client.get(development.link(app, "http://localhost") + "&page=1")

    assert (opened.status_code, opened.headers["Location"]) == (302, "/?page=1")  # the key leaves the address bar
    assert "HttpOnly" in opened.headers["Set-Cookie"] and "SameSite=Strict" in opened.headers["Set-Cookie"]
    for path in ("/outbox", "/jobs/", "/jobs/failed", "/jobs/metrics"):
        assert client.get(path).status_code == 200, path


@pytest.mark.parametrize(
    "path", ["/jobs/", "/jobs/failed", "/jobs/metrics", "/jobs/job/1?args=shown", "/jobs/style.css"]
)
def test_a_rebound_host_name_reaches_no_page_of_the_dashboard(app, db, path):
    browser = app.test_client(use_cookies=False)  # its cookies are sent by hand, as a browser would send them
    key = f"{development.COOKIE}={development.key(app)}"
    page = browser.get("/jobs/", headers={"Cookie": key})
    token = re.search(r'name="csrf" value="([^"]+)"', page.get_data(as_text=True)).group(1)
    cookies = f"{key}; {page.headers['Set-Cookie'].split(';')[0]}"  # the key and the dashboard's CSRF nonce
    rebound = {"Host": "rebind.attacker.example", "Cookie": cookies}

    assert browser.get(path, headers=rebound).status_code == 400
    assert browser.post("/jobs/pause", data={"csrf": token, "queue": "mail"}, headers=rebound).status_code == 400
    assert jobs.paused_queues(db) == set()
    assert (
        browser.post("/jobs/pause", data={"csrf": token, "queue": "mail"}, headers={"Cookie": cookies}).status_code
        == 200
    )  # the same form, from the local name
