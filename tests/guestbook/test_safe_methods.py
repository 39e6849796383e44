"""Safe methods change nothing: a HEAD, GET or OPTIONS of any page, with any body, only reads.

Mail scanners open the links of letters, some with HEAD first; only the button's POST,
with its CSRF token, acts. Every other method is refused with a 405 where a route does
not take it, and never reaches a view.
"""

import pytest

from guestbook import accounts

from .conftest import PASSWORD

NEW_PASSWORD = "a brand new password"
SAFE = ("HEAD", "GET", "OPTIONS")


def scanned(client, link: str, **body) -> None:
    """Opens `link` as a mail scanner does: every safe method, each with `body` as a form."""
    for method in SAFE:
        assert client.open(link, method=method, data=body).status_code < 400, method


def state(db) -> list[tuple]:
    """Everything an account's links or forms could change, and the jobs table's size."""
    rows = db.execute(
        "SELECT email, password_digest, confirmed_at, failed_signins, locked_at FROM accounts ORDER BY id"
    )
    return [*rows.fetchall(), db.execute("SELECT count(*) FROM jobs").fetchone()]


def test_scanner_opening_a_confirm_link_confirms_nothing_until_the_button(client, visitor, post, db):
    visitor.signup("ada@example.com")
    link = post.only_link_to("ada@example.com")

    scanned(client, link)

    assert db.execute("SELECT confirmed_at FROM accounts").fetchone()[0] is None
    assert visitor.submit(link, password=PASSWORD).status_code == 302
    assert db.execute("SELECT confirmed_at FROM accounts").fetchone()[0] is not None


def test_scanner_opening_an_unlock_link_unlocks_nothing_until_the_button(client, visitor, post):
    visitor.confirmed_account("ada@example.com")
    for _ in range(accounts.LOCK_AFTER):
        visitor.signin("ada@example.com", "not the right password")
    link = post.only_link_to("ada@example.com")

    scanned(client, link)

    assert visitor.signin("ada@example.com").status_code == 401
    assert visitor.submit(link).status_code == 302
    assert visitor.signin("ada@example.com").status_code == 302


def test_safe_methods_with_a_password_do_not_reset_it(client, visitor, post):
    visitor.confirmed_account("ada@example.com")
    visitor.submit("/resets/new", email="ada@example.com")
    link = post.only_link_to("ada@example.com")

    scanned(client, link, password=NEW_PASSWORD, csrf_token=visitor.csrf_token())

    assert visitor.signin("ada@example.com", NEW_PASSWORD).status_code == 401
    assert visitor.submit(link, password=NEW_PASSWORD).status_code == 302


@pytest.mark.parametrize("method", SAFE)
@pytest.mark.parametrize(
    "path, fields",
    [
        ("/signup", {"email": "bo@example.com", "password": PASSWORD}),
        ("/signin", {"email": "ada@example.com", "password": PASSWORD}),
        ("/resets/new", {"email": "ada@example.com"}),
    ],
)
def test_safe_method_with_a_form_body_acts_on_nothing(client, visitor, db, method, path, fields):
    visitor.confirmed_account("ada@example.com")
    before = state(db)

    answer = client.open(path, method=method, data=fields)

    assert answer.status_code == 200
    assert state(db) == before
    with client.session_transaction() as session:
        assert "account_id" not in session


@pytest.mark.parametrize("method", ["PUT", "PATCH", "DELETE"])
@pytest.mark.parametrize("path", ["/signup", "/signin", "/resets/new", "/entries", "/signout"])
def test_other_methods_are_refused_with_405_and_act_on_nothing(visitor, db, method, path):
    visitor.signed_in("ada@example.com")
    before = state(db)
    fields = {"csrf_token": visitor.csrf_token(), "email": "bo@example.com", "password": PASSWORD, "body": "Hi"}

    answer = visitor.client.open(path, method=method, data=fields)

    assert answer.status_code == 405
    assert 'role="alert"' in answer.get_data(as_text=True)
    assert state(db) == before
    assert db.execute("SELECT count(*) FROM entries").fetchone()[0] == 0
