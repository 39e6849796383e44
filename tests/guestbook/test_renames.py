"""The name page: a signed-in account changes the name its entries are signed with, under sign-up's rules."""

import pytest

from guestbook import limits, names

from .conftest import PASSWORD
from .test_bad_input import assert_refused
from .test_name_claims import another
from .test_names import newest_entry, signed_in_as


def name_of(db, email: str = "ada@example.com") -> tuple[str, str | None]:
    return db.execute("SELECT display_name, name_key FROM accounts WHERE email = %s", [email]).fetchone()


def test_a_signed_in_account_changes_its_name_and_its_entries_show_the_new_one(client, visitor, db):
    signed_in_as(visitor, "ada@example.com", "Erin is a fraud")
    visitor.submit("/entries", body="Signed before the change")

    answer = visitor.submit("/name", name="  Ada Lovelace ")

    assert answer.status_code == 302
    assert name_of(db) == ("Ada Lovelace", names.key("Ada Lovelace"))
    assert '<bdi class="author">Ada Lovelace</bdi>' in newest_entry(client)
    assert "Erin is a fraud" not in client.get("/").get_data(as_text=True)


def test_an_empty_name_signs_the_account_s_entries_as_a_guest(client, visitor, db):
    signed_in_as(visitor, "ada@example.com", "Ada")
    visitor.submit("/entries", body="Hello")

    assert visitor.submit("/name", name="").status_code == 302

    assert name_of(db) == ("", None)
    assert f'<bdi class="author">{names.ANONYMOUS}</bdi>' in newest_entry(client)


@pytest.mark.parametrize(
    "name, words",
    [
        ("bob", names.TAKEN),  # another account's, in another case
        ("B\u03bfb", names.TAKEN),  # ...with a Greek omicron
        ("Probe", names.TAKEN),  # claimed by a sign-up a moment ago
        ("A Guest", "reserved"),
        ("Ada\u202e", "printable"),
        ("\u3164", "blank"),
    ],
)
def test_the_name_page_refuses_a_name_sign_up_would_and_changes_nothing(visitor, post, db, name, words):
    signed_in_as(another(visitor), "bo@example.com", "Bob")
    another(visitor).submit("/signup", email="eve@example.com", password=PASSWORD, name="Probe")
    post.delivered()
    signed_in_as(visitor, "ada@example.com", "Ada")

    assert_refused(visitor.submit("/name", name=name), 422, words)
    assert name_of(db) == ("Ada", names.key("Ada"))


def test_an_account_may_take_a_look_alike_of_its_own_name_and_its_old_name_is_free_after(visitor, db):
    signed_in_as(visitor, "ada@example.com", "alice")

    assert visitor.submit("/name", name="Alice").status_code == 302
    assert visitor.submit("/name", name="Ann").status_code == 302

    assert name_of(db) == ("Ann", names.key("Ann"))
    assert (
        another(visitor).submit("/signup", email="bo@example.com", password=PASSWORD, name="Alice").status_code == 302
    )


def test_the_name_page_shows_the_present_name_and_sends_a_visitor_not_signed_in_to_sign_in(client, visitor, db):
    assert client.get("/name").location == "/signin"
    assert visitor.submit("/name", name="Ada").location == "/signin"
    signed_in_as(visitor, "ada@example.com", "Ada Lovelace")

    page = client.get("/name").get_data(as_text=True)

    assert 'name="name" value="Ada Lovelace"' in page and 'name="csrf_token"' in page


@pytest.mark.parametrize("method", ["GET", "HEAD", "OPTIONS"])
def test_a_safe_method_with_a_name_in_its_body_changes_nothing(client, visitor, db, method):
    signed_in_as(visitor, "ada@example.com", "Ada")

    answer = client.open("/name", method=method, data={"name": "Mallory", "csrf_token": visitor.csrf_token()})

    assert answer.status_code == 200
    assert name_of(db) == ("Ada", names.key("Ada"))


def test_posts_to_the_name_page_are_counted_with_the_client_s_tries(visitor, db):
    signed_in_as(visitor, "ada@example.com", "Ada")
    visitor.client.environ_base["REMOTE_ADDR"] = "192.0.2.7"  # a client with no tries yet

    tries = [visitor.submit("/name", name="a guest").status_code for _ in range(limits.CLIENT_TRIES)]

    assert tries == [422] * limits.CLIENT_TRIES
    assert visitor.submit("/name", name="Ann").status_code == 429
    assert name_of(db) == ("Ada", names.key("Ada"))


def test_a_name_posted_without_the_session_s_csrf_token_changes_nothing(visitor, db):
    signed_in_as(visitor, "ada@example.com", "Ada")

    answer = visitor.client.post("/name", data={"name": "Mallory", "csrf_token": "not the token"})

    assert_refused(answer, 400, "not sent from this site")
    assert name_of(db) == ("Ada", names.key("Ada"))
