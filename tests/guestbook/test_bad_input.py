"""Bad input of every kind gets a clear page with a 4xx status, and nothing is written."""

import time

import itsdangerous
import pytest

from guestbook import entries, forms, passwords, tokens

from .conftest import PASSWORD


def written(db) -> tuple[int, int, int]:
    """How many accounts, entries and jobs there are."""
    return db.execute(
        "SELECT (SELECT count(*) FROM accounts), (SELECT count(*) FROM entries), (SELECT count(*) FROM jobs)"
    ).fetchone()


def assert_refused(answer, status: int, words: str) -> None:
    """The answer is a page with `status` whose alert says `words`."""
    page = answer.get_data(as_text=True)
    assert answer.status_code == status, page
    assert 'role="alert"' in page and words in page


FORMS = [  # path, fields, the status and words of the refusal
    ("/signup", {"email": "ada@example.com"}, 400, "no password field"),
    ("/signup", {"password": PASSWORD}, 400, "no email field"),
    ("/signup", {"email": "a" * forms.EMAIL_MAX + "@example.com", "password": PASSWORD}, 400, "more than 254"),
    ("/signup", {"email": "ada@example.com", "password": "x" * (passwords.PASSWORD_MAX + 1)}, 400, "more than 128"),
    ("/signup", {"email": "ada\x00@example.com", "password": PASSWORD}, 400, "NUL"),
    (
        "/signup",
        {"email": "ada@example.com\r\nBcc: all@example.com", "password": PASSWORD},
        422,
        "Enter an email address",
    ),
    ("/signin", {"email": "ada@example.com"}, 400, "no password field"),
    ("/signin", {"email": "ada@example.com", "password": "x" * 10_000}, 400, "more than 128"),
    ("/resets/new", {}, 400, "no email field"),
    ("/resets/new", {"email": "not an address"}, 422, "Enter an email address"),
    ("/entries", {}, 400, "no body field"),
    ("/entries", {"body": "x" * (entries.ENTRY_MAX + 1)}, 400, "more than 2000"),
    ("/entries", {"body": "nul \x00 here"}, 400, "NUL"),
    ("/entries", {"body": "   "}, 422, "Write something"),
]


@pytest.mark.parametrize("path, fields, status, words", FORMS)
def test_bad_form_is_refused_and_writes_nothing(visitor, db, path, fields, status, words):
    visitor.signed_in("ada@example.com")
    before = written(db)

    assert_refused(visitor.submit(path, **fields), status, words)
    assert written(db) == before


@pytest.mark.parametrize("token", [None, "", "not the token", "tökén", "x" * 5000])
def test_post_without_the_sessions_csrf_token_is_refused(client, visitor, db, token):
    visitor.csrf_token()  # the session has a token; the form does not carry it
    data = {"email": "ada@example.com", "password": PASSWORD}
    if token is not None:
        data["csrf_token"] = token

    assert_refused(client.post("/signup", data=data), 400, "out of date or was not sent from this site")
    assert written(db) == (0, 0, 0)


def test_post_from_a_session_that_has_no_csrf_token_is_refused(client, db):
    answer = client.post("/signup", data={"csrf_token": "", "email": "ada@example.com", "password": PASSWORD})

    assert_refused(answer, 400, "out of date")
    assert written(db) == (0, 0, 0)


@pytest.mark.parametrize("encoded_email", [b"ada%FF@example.com", b"ada\xff@example.com", b"%C3%28@example.com"])
def test_form_that_is_not_utf8_is_refused(client, visitor, db, encoded_email):
    body = b"csrf_token=" + visitor.csrf_token().encode() + b"&password=" + PASSWORD.encode().replace(b" ", b"+")
    body += b"&email=" + encoded_email

    answer = client.post("/signup", data=body, content_type=forms.FORM_TYPE)

    assert_refused(answer, 400, "not valid UTF-8")
    assert written(db) == (0, 0, 0)


@pytest.mark.parametrize("content_type", ["application/json", "text/plain", "multipart/form-data; boundary=x"])
def test_post_that_is_not_an_ordinary_form_is_refused(client, db, content_type):
    answer = client.post("/signup", data=b"{}", content_type=content_type)

    assert_refused(answer, 415, forms.FORM_TYPE)
    assert written(db) == (0, 0, 0)


def test_body_larger_than_the_limit_is_refused(visitor, db):
    answer = visitor.submit("/signup", email="ada@example.com", password=PASSWORD, padding="x" * forms.CONTENT_MAX)

    assert answer.status_code == 413
    assert written(db) == (0, 0, 0)


def made_token(app, purpose: str, account_id: int, state: str, age: int) -> str:
    """A token as the app makes them, for an account in `state`, signed `age` seconds ago."""
    with app.app_context(), pytest.MonkeyPatch.context() as clock:
        signed_at = int(time.time()) - age
        clock.setattr(itsdangerous.TimestampSigner, "get_timestamp", lambda self: signed_at)
        return tokens.serializer(purpose).dumps([account_id, tokens.fingerprint(purpose, state)])


@pytest.fixture
def confirm_token(app, visitor, post):
    """A genuine confirmation token of a new account."""
    visitor.signup("ada@example.com")
    return post.only_link_to("ada@example.com").removeprefix("/confirm/")


BAD_LINKS = [  # a path made from a genuine confirm token, and what it is
    ("/confirm/{token}x", "tampered signature"),
    ("/confirm/x{token}", "tampered payload"),
    ("/confirm/garbage", "not a token"),
    ("/confirm/" + "x" * 4000, "an overlong token"),
    ("/resets/{token}/edit", "a confirm token used to reset"),
    ("/unlocks/{token}", "a confirm token used to unlock"),
    ("/resets/%FF%FE/edit", "a token that is not UTF-8"),
]


@pytest.mark.parametrize("path, what", BAD_LINKS)
def test_bad_link_shows_a_clear_page_and_changes_nothing(client, visitor, db, confirm_token, path, what):
    path = path.format(token=confirm_token)
    before = db.execute("SELECT confirmed_at, password_digest, locked_at FROM accounts").fetchall()

    assert_refused(client.get(path), 400, "not valid")
    assert_refused(visitor.submit(path, password="a brand new password"), 400, "not valid")
    assert db.execute("SELECT confirmed_at, password_digest, locked_at FROM accounts").fetchall() == before


def test_confirm_link_older_than_three_days_is_refused(app, client, visitor, db, confirm_token):
    email = "ada@example.com"
    old = made_token(app, "confirm", 1, email, age=tokens.CONFIRM_MAX_AGE + 1)
    fresh = made_token(app, "confirm", 1, email, age=tokens.CONFIRM_MAX_AGE - 60)

    assert_refused(visitor.submit(f"/confirm/{old}"), 400, "expired")
    assert db.execute("SELECT confirmed_at FROM accounts").fetchone()[0] is None
    assert visitor.submit(f"/confirm/{fresh}", password=PASSWORD).status_code == 302


def test_token_signed_with_another_secret_is_refused(app, client, confirm_token):
    app.secret_key = "another secret"

    assert client.get(f"/confirm/{confirm_token}").status_code == 400


@pytest.mark.parametrize("before", ["", "0", "-1", "abc", "1.5", str(2**63), "9" * 5000, "١"])
def test_a_page_asked_for_by_an_entry_that_is_no_number_in_range_is_refused(client, before):
    assert_refused(client.get(f"/?before={before}"), 400, "entries are numbered from 1")


def test_unknown_page_is_a_404_page(client):
    assert_refused(client.get("/nowhere"), 404, "not found")
