"""Fixtures of the guestbook tests: the app on the tests' PostgreSQL, a real SMTP server, and helpers.

`post` works the mail queue as the worker beside the server would, and hands back
the letters the SMTP server received; `visitor` fills the site's forms.
"""

import re

import pytest

import jobs
import mail
from guestbook import create_app, upkeep
from guestbook import db as guestbook_db

from ..mail.smtpd import SMTPServer, body_of

BASE_URL = "http://guestbook.test"  # where links in letters point
PASSWORD = "correct horse battery"  # a password the site accepts
LINK = re.compile(re.escape(BASE_URL) + r"(/\S+)")


@pytest.fixture
def smtp(monkeypatch):
    """A running SMTP server named by MAIL_URL, and BASE_URL set for the links of letters."""
    monkeypatch.setenv("BASE_URL", BASE_URL)
    with SMTPServer() as server:
        monkeypatch.setenv("MAIL_URL", server.url)
        yield server


@pytest.fixture
def settings(database_url):
    """The settings the app of a test is made with; a test may change them before asking for `app`."""
    return {"DATABASE_URL": database_url, "SECRET_KEY": "a secret for tests only", "TESTING": True}


@pytest.fixture
def app(settings, db, smtp):
    """The app, on tables emptied for the test (the `db` fixture empties the jobs table)."""
    app = create_app(settings)
    db.execute("TRUNCATE accounts, entries, client_tries RESTART IDENTITY CASCADE")
    yield app
    guestbook_db.closed(app)


@pytest.fixture
def client(app):
    return app.test_client()


class Post:
    """The mail as the tests see it: the queue, the worker run on demand, and the SMTP server's inbox."""

    def __init__(self, db, server, app):
        self.db, self.server = db, server
        self.performers = upkeep.performers_for(app)  # as the worker beside the app's server runs them

    def queued(self) -> list[dict]:
        """The letters waiting in the mail queue, as their jobs' arguments."""
        return [job["args"] for job in jobs.listed(self.db, mail.QUEUE)]

    def delivered(self) -> list:
        """Works the mail queue until nothing is due, as the worker would; returns the letters that arrived."""
        before = len(self.server.letters)
        while (said := jobs.worked(self.db, mail.QUEUE, self.performers)) is not None:
            assert said.startswith("ran"), said
        return self.server.letters[before:]

    def link(self, letter) -> str:
        """The path of the one link in `letter` into the site."""
        (path,) = LINK.findall(body_of(letter))
        return path

    def only_link_to(self, address: str) -> str:
        """Delivers the queue, expects exactly one letter, to `address`, and returns the path of its link."""
        (letter,) = self.delivered()
        assert letter["To"] == address
        return self.link(letter)


@pytest.fixture
def post(db, smtp, app):
    return Post(db, smtp, app)


class Visitor:
    """Fills the site's forms with the test client, carrying the session's CSRF token as a browser would."""

    def __init__(self, client, post):
        self.client, self.post = client, post

    def submit(self, path: str, **fields):
        """POSTs `fields` to `path` with the CSRF token of a form this session was shown."""
        return self.client.post(path, data={"csrf_token": self.csrf_token(), **fields})

    def csrf_token(self) -> str:
        """The token the session's forms carry, read from a rendered form."""
        page = self.client.get("/signin").get_data(as_text=True)
        found = re.search(r'name="csrf_token" value="([^"]+)"', page)
        assert found, "the sign-in page carries no CSRF token"
        return found.group(1)

    def signup(self, email: str, password: str = PASSWORD):
        return self.submit("/signup", email=email, password=password)

    def signin(self, email: str, password: str = PASSWORD):
        return self.submit("/signin", email=email, password=password)

    def signout(self):
        return self.submit("/signout")

    def confirmed_account(self, email: str, password: str = PASSWORD) -> None:
        """Signs up and confirms through the letter's link, leaving the mail queue empty."""
        self.signup(email, password)
        assert self.submit(self.post.only_link_to(email), password=password).status_code == 302

    def signed_in(self, email: str, password: str = PASSWORD) -> None:
        """A confirmed account, signed in."""
        self.confirmed_account(email, password)
        assert self.signin(email, password).status_code == 302


@pytest.fixture
def visitor(client, post):
    return Visitor(client, post)
