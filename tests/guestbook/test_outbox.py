"""The /outbox page of development: the letters the worker wrote, newest first, links clickable."""

import pytest

import jobs
import mail

from .conftest import PASSWORD


@pytest.fixture
def settings(settings):
    return {**settings, "DEVELOPMENT": True}


@pytest.fixture
def outbox(tmp_path, monkeypatch):
    """MAIL_URL unset, so that letters go to an outbox folder of the test's own."""
    monkeypatch.delenv("MAIL_URL")
    monkeypatch.setenv("MAIL_OUTBOX", str(tmp_path))
    return tmp_path


def test_outbox_shows_sent_letters_newest_first_with_clickable_links(client, visitor, db, outbox):
    visitor.signup("ada@example.com")
    visitor.signup("bo@example.com")
    while jobs.worked(db, mail.QUEUE, mail.performers):
        pass

    page = client.get("/outbox").get_data(as_text=True)

    assert len(list(outbox.glob("*.eml"))) == 2
    assert page.index("To bo@example.com") < page.index("To ada@example.com")
    assert '<a href="http://guestbook.test/confirm/' in page


def test_outbox_link_confirms_the_account(client, visitor, db, outbox):
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
    from guestbook import create_app, db as guestbook_db

    app = create_app({"DATABASE_URL": database_url, "SECRET_KEY": "a secret for tests only"})
    try:
        assert app.test_client().get("/outbox").status_code == 404
    finally:
        guestbook_db.closed(app)


@pytest.mark.parametrize("host", ["rebound.example", "rebound.example:5000", "127.0.0.1.rebound.example", "localhost.example"])
def test_development_refuses_host_names_that_are_not_local(client, visitor, db, outbox, host):
    visitor.signup("ada@example.com")
    jobs.worked(db, mail.QUEUE, mail.performers)

    answer = client.get("/outbox", headers={"Host": host})

    assert answer.status_code == 400
    assert "guestbook.test/confirm/" not in answer.get_data(as_text=True)
    assert visitor.client.post("/signup", data={"email": "bo@example.com"}, headers={"Host": host}).status_code == 400
    assert db.execute("SELECT count(*) FROM accounts").fetchone()[0] == 1


@pytest.mark.parametrize("host", ["127.0.0.1:5000", "localhost:5000", "localhost", "guestbook.test"])
def test_development_answers_its_local_names_and_base_urls(client, host):
    assert client.get("/outbox", headers={"Host": host}).status_code == 200
