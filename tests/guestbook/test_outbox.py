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
def keyed(app) -> str:
    """Where the pages of the link the server prints at start are, as the person who started it opens them: /KEY."""
    return development.link(app, "http://localhost").removeprefix("http://localhost").rstrip("/")


@pytest.fixture
def outbox(tmp_path, monkeypatch):
    """MAIL_URL unset, so that letters go to an outbox folder of the test's own."""
    monkeypatch.delenv("MAIL_URL")
    monkeypatch.setenv("MAIL_OUTBOX", str(tmp_path))
    return tmp_path


def test_outbox_shows_sent_letters_newest_first_with_clickable_links(keyed, client, visitor, db, outbox):
    visitor.signup("ada@example.com")
    visitor.signup("bo@example.com")
    while jobs.worked(db, mail.QUEUE, visitor.post.performers):
        pass

    page = client.get(f"{keyed}/outbox").get_data(as_text=True)

    assert len(list(outbox.glob("*.eml"))) == 2
    assert page.index("To bo@example.com") < page.index("To ada@example.com")
    assert f'<a href="http://guestbook.test{keyed}/confirm/' in page


def test_outbox_link_confirms_the_account(keyed, client, visitor, db, outbox):
    visitor.signup("ada@example.com")
    jobs.worked(db, mail.QUEUE, visitor.post.performers)
    page = client.get(f"{keyed}/outbox").get_data(as_text=True)
    link = page.split('<a href="http://guestbook.test', 1)[1].split('"', 1)[0]

    visitor.submit(link, password=PASSWORD)

    assert visitor.signin("ada@example.com").status_code == 302


def test_the_outbox_s_links_keep_the_printed_link_and_the_letters_hold_no_key(app, keyed, client, visitor, db, outbox):
    visitor.signup("ada@example.com")
    jobs.worked(db, mail.QUEUE, visitor.post.performers)

    page = client.get(f"{keyed}/outbox").get_data(as_text=True)
    link = re.search(r'<a href="http://guestbook\.test(/[^"]+)"', page).group(1)
    confirm = client.get(link).get_data(as_text=True)

    assert link.startswith(f"{keyed}/confirm/")
    assert f'href="{keyed}/outbox"' in confirm and f'href="{keyed}/jobs/"' in confirm
    assert [development.key(app) in letter.read_text() for letter in outbox.glob("*.eml")] == [False]
    assert "Set-Cookie" not in client.get(f"{keyed}/outbox").headers


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
    jobs.worked(db, mail.QUEUE, visitor.post.performers)

    answer = client.get("/outbox", headers={"Host": host})

    assert answer.status_code == 400
    assert "guestbook.test/confirm/" not in answer.get_data(as_text=True)
    assert visitor.client.post("/signup", data={"email": "bo@example.com"}, headers={"Host": host}).status_code == 400
    assert db.execute("SELECT count(*) FROM accounts").fetchone()[0] == 1


@pytest.mark.parametrize("host", ["127.0.0.1:5000", "localhost:5000", "localhost", "guestbook.test"])
def test_development_answers_its_local_names_and_base_urls(client, keyed, host):
    assert client.get(f"{keyed}/outbox", headers={"Host": host}).status_code == 200


def test_the_outbox_and_the_dashboard_answer_only_under_the_printed_link(app, client, keyed, db, outbox):
    wrong = "/" + "0" * len(development.key(app))  # a key of the right shape, not the one printed
    for path in ("/outbox", "/jobs/", "/jobs/failed", "/jobs/metrics", f"{wrong}/outbox", f"{wrong}/jobs/"):
        assert client.get(path).status_code in (403, 404), path
    assert client.post("/jobs/pause", data={"queue": "mail"}).status_code == 403
    assert client.get(f"{keyed}/outbox").status_code == 200
    assert client.get("/outbox").status_code == 403  # no cookie carries the key from one request to the next

    home = client.get(f"{keyed}/").get_data(as_text=True)

    assert f'href="{keyed}/outbox"' in home and f'href="{keyed}/jobs/"' in home and f'href="{keyed}/signup"' in home
    assert "Set-Cookie" not in client.get(f"{keyed}/outbox").headers
    for path in ("/outbox", "/jobs/", "/jobs/failed", "/jobs/metrics"):
        assert client.get(keyed + path).status_code == 200, path


@pytest.mark.parametrize(
    "path", ["/jobs/", "/jobs/failed", "/jobs/metrics", "/jobs/job/1?args=shown", "/jobs/style.css"]
)
def test_a_rebound_host_name_reaches_no_page_of_the_dashboard(app, keyed, db, path):
    browser = app.test_client(use_cookies=False)  # its cookies are sent by hand, as a browser would send them
    page = browser.get(f"{keyed}/jobs/")
    token = re.search(r'name="csrf" value="([^"]+)"', page.get_data(as_text=True)).group(1)
    cookies = page.headers["Set-Cookie"].split(";")[0]  # the dashboard's CSRF nonce
    rebound = {"Host": "rebind.attacker.example", "Cookie": cookies}

    assert browser.get(keyed + path, headers=rebound).status_code == 400
    form = {"csrf": token, "queue": "mail"}
    assert browser.post(f"{keyed}/jobs/pause", data=form, headers=rebound).status_code == 400
    assert jobs.paused_queues(db) == set()
    assert (
        browser.post(f"{keyed}/jobs/pause", data=form, headers={"Cookie": cookies}).status_code == 303
    )  # the same form, from the local name
