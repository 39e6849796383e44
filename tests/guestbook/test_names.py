"""The name an entry is signed with: chosen at sign-up, optional, printable, escaped, and kept across an upgrade."""

import pytest

from guestbook import db as guestbook_db, names

from .conftest import PASSWORD
from .test_bad_input import assert_refused, written


def signed_in_as(visitor, email: str, name: str | None) -> None:
    """Signs up with `name` (no name field at all when None), confirms, and signs in."""
    fields = {"email": email, "password": PASSWORD} | ({} if name is None else {"name": name})
    assert visitor.submit("/signup", **fields).status_code == 302
    visitor.submit(visitor.post.only_link_to(email), password=PASSWORD)
    assert visitor.signin(email).status_code == 302


def newest_entry(client) -> str:
    page = client.get("/").get_data(as_text=True)
    return page.split('<article class="entry">', 1)[1].split("</article>", 1)[0]


def test_an_entry_says_the_name_chosen_at_sign_up(client, visitor):
    signed_in_as(visitor, "ada@example.com", "  Ada Lovelace ")

    visitor.submit("/entries", body="Lovely place!")

    assert '<span class="author">Ada Lovelace</span>' in newest_entry(client)


@pytest.mark.parametrize("name", [None, "", "   "])
def test_an_account_without_a_name_signs_as_a_guest(client, visitor, name):
    signed_in_as(visitor, "ada@example.com", name)

    visitor.submit("/entries", body="Lovely place!")

    assert f'<span class="author">{names.ANONYMOUS}</span>' in newest_entry(client)


def test_a_name_is_shown_escaped(client, visitor):
    signed_in_as(visitor, "ada@example.com", '<img src=x onerror="alert(1)">')

    visitor.submit("/entries", body="Hello")

    assert "&lt;img src=x onerror=&#34;alert(1)&#34;&gt;" in newest_entry(client)


@pytest.mark.parametrize("name, status, words", [
    ("Ada\u202eecalevol", 422, "printable"),  # a right-to-left override, which would disguise it
    ("Ada\nLovelace", 422, "printable"),
    ("Ada\x07", 422, "printable"),
    ("Ada\u200b", 422, "printable"),
    ("x" * (names.NAME_MAX + 1), 400, f"more than {names.NAME_MAX}"),
    ("Ada\x00", 400, "NUL"),
])
def test_a_bad_name_is_refused_and_writes_nothing(visitor, db, name, status, words):
    assert_refused(visitor.submit("/signup", email="ada@example.com", password=PASSWORD, name=name), status, words)
    assert written(db) == (0, 0, 0)


def test_a_name_of_name_max_characters_is_taken(visitor, db):
    visitor.submit("/signup", email="ada@example.com", password=PASSWORD, name="é" * names.NAME_MAX)

    assert db.execute("SELECT display_name FROM accounts").fetchone()[0] == "é" * names.NAME_MAX


def test_a_table_made_before_names_gets_the_column_and_its_entries_sign_as_a_guest(client, visitor, db):
    signed_in_as(visitor, "ada@example.com", "Ada")
    visitor.submit("/entries", body="From before the upgrade")
    db.execute("ALTER TABLE accounts DROP COLUMN display_name; DROP TABLE guestbook_schema")  # the tables as they were

    guestbook_db.prepared(db)  # what every start does

    assert f'<span class="author">{names.ANONYMOUS}</span>' in newest_entry(client)
    assert "From before the upgrade" in newest_entry(client)
