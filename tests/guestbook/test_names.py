"""The name an entry is signed with: chosen at sign-up, optional, printable, escaped, and kept across an upgrade."""

import pytest

from guestbook import db as guestbook_db
from guestbook import names

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

    assert '<bdi class="author">Ada Lovelace</bdi>' in newest_entry(client)


@pytest.mark.parametrize("name", [None, "", "   "])
def test_an_account_without_a_name_signs_as_a_guest(client, visitor, name):
    signed_in_as(visitor, "ada@example.com", name)

    visitor.submit("/entries", body="Lovely place!")

    assert f'<bdi class="author">{names.ANONYMOUS}</bdi>' in newest_entry(client)


def test_a_name_is_shown_escaped(client, visitor):
    signed_in_as(visitor, "ada@example.com", '<img src=x onerror="alert(1)">')

    visitor.submit("/entries", body="Hello")

    assert "&lt;img src=x onerror=&#34;alert(1)&#34;&gt;" in newest_entry(client)


@pytest.mark.parametrize(
    "name, status, words",
    [
        ("Ada\u202eecalevol", 422, "printable"),  # a right-to-left override, which would disguise it
        ("Ada\nLovelace", 422, "printable"),
        ("Ada\x07", 422, "printable"),
        ("Ada\u200b", 422, "printable"),
        ("x" * (names.NAME_MAX + 1), 400, f"more than {names.NAME_MAX}"),
        ("Ada\x00", 400, "NUL"),
    ],
)
def test_a_bad_name_is_refused_and_writes_nothing(visitor, db, name, status, words):
    assert_refused(visitor.submit("/signup", email="ada@example.com", password=PASSWORD, name=name), status, words)
    assert written(db) == (0, 0, 0)


def test_a_name_of_name_max_characters_is_taken(visitor, db):
    signed_in_as(visitor, "ada@example.com", "é" * names.NAME_MAX)

    assert db.execute("SELECT display_name FROM accounts").fetchone()[0] == "é" * names.NAME_MAX


def test_a_table_made_before_names_gets_the_column_and_its_entries_sign_as_a_guest(client, visitor, db):
    signed_in_as(visitor, "ada@example.com", "Ada")
    visitor.submit("/entries", body="From before the upgrade")
    db.execute("ALTER TABLE accounts DROP COLUMN display_name; DROP TABLE guestbook_schema")  # the tables as they were

    guestbook_db.prepared(db)  # what every start does

    assert f'<bdi class="author">{names.ANONYMOUS}</bdi>' in newest_entry(client)
    assert "From before the upgrade" in newest_entry(client)


@pytest.mark.parametrize(
    "taken, name",
    [
        ("Alice", "Alice"),  # the same, byte for byte
        ("Alice", "alice"),
        ("Alice", "Alice  "),
        ("Alice Liddell", "Alice   Liddell"),  # a page shows runs of spaces as one
        ("Alice", "\u0410lice"),  # a Cyrillic capital A
        ("Alice", "\uff21\uff4c\uff49\uff43\uff45"),  # fullwidth letters
        ("Alice", "AIice"),  # a capital i for the l
        ("Paypal", "PayPa1"),
        ("Bob", "B\u03bfb"),  # a Greek omicron
    ],
)
def test_a_name_that_looks_like_one_taken_is_refused(app, visitor, post, db, taken, name):
    signed_in_as(visitor, "ada@example.com", taken)
    other = type(visitor)(app.test_client(), post)

    answer = other.submit("/signup", email="eve@example.com", password=PASSWORD, name=name)

    assert_refused(answer, 422, "looks like one that is")
    assert db.execute("SELECT count(*) FROM accounts").fetchone()[0] == 1
    assert post.queued() == []


@pytest.mark.parametrize(
    "invisible",
    [
        "\u034f",  # COMBINING GRAPHEME JOINER
        "\ufe0f",  # VARIATION SELECTOR-16
        "\u180b",  # MONGOLIAN FREE VARIATION SELECTOR ONE
        "\U000e0100",  # VARIATION SELECTOR-17
        "\u17b4",  # KHMER VOWEL INHERENT AQ
    ],
)
def test_a_name_that_differs_from_one_taken_by_an_invisible_character_is_refused(app, visitor, post, db, invisible):
    signed_in_as(visitor, "ada@example.com", "Alice")
    other = type(visitor)(app.test_client(), post)

    answer = other.submit("/signup", email="eve@example.com", password=PASSWORD, name="Alice" + invisible)
    inside = other.submit("/signup", email="eve@example.com", password=PASSWORD, name="Al" + invisible + "ice")

    assert_refused(answer, 422, "looks like one that is")
    assert_refused(inside, 422, "looks like one that is")
    assert db.execute("SELECT count(*) FROM accounts").fetchone()[0] == 1


@pytest.mark.parametrize(
    "name", [names.ANONYMOUS, "A Guest", "a  guest", "\u0430 guest", "a gu\u0435st", "a\u034f guest", "a gu\u17b4est"]
)
def test_the_name_entries_without_one_sign_with_and_its_look_alikes_are_refused(visitor, db, name):
    assert_refused(visitor.submit("/signup", email="eve@example.com", password=PASSWORD, name=name), 422, "reserved")
    assert written(db) == (0, 0, 0)


@pytest.mark.parametrize(
    "name",
    [
        "\u3164",  # HANGUL FILLER: a letter that shows nothing
        "\u2800",  # BRAILLE PATTERN BLANK
        "Ada\u3164",  # looks like "Ada"
        "\uffa0\uffa0",
        "\u115f",
    ],
)
def test_a_name_that_shows_blank_is_refused(visitor, db, name):
    assert_refused(visitor.submit("/signup", email="eve@example.com", password=PASSWORD, name=name), 422, "blank")
    assert written(db) == (0, 0, 0)


def test_a_name_with_a_run_of_combining_marks_is_refused_and_ordinary_accents_are_not(visitor, db):
    zalgo = "Ada" + "\u0301" * 45
    assert_refused(visitor.submit("/signup", email="eve@example.com", password=PASSWORD, name=zalgo), 422, "marks")
    assert written(db) == (0, 0, 0)
    for n, name in enumerate(["Zoë", "Noe\u0308l", "Nguyễn", "Thảo", "กิ่ง", "क्षत्रिय"]):
        assert visitor.submit("/signup", email=f"ok{n}@example.com", password=PASSWORD, name=name).status_code == 302, (
            name
        )


def test_two_accounts_without_names_both_sign_as_a_guest(app, visitor, post, db):
    signed_in_as(visitor, "ada@example.com", None)
    signed_in_as(type(visitor)(app.test_client(), post), "bo@example.com", "")

    assert db.execute("SELECT count(*) FROM accounts").fetchone()[0] == 2


def test_a_right_to_left_name_and_body_are_isolated_from_the_page_around_them(client, visitor):
    signed_in_as(visitor, "ada@example.com", "\u05d0\u05d3\u05d4")  # Hebrew

    visitor.submit("/entries", body="\u05e9\u05dc\u05d5\u05dd")

    entry = newest_entry(client)
    assert '<bdi class="author">\u05d0\u05d3\u05d4</bdi>' in entry
    assert '<p dir="auto">\u05e9\u05dc\u05d5\u05dd</p>' in entry


@pytest.mark.parametrize("control", ["\u202e", "\u202d", "\u2066", "\u2067", "\u2068", "\u2069", "\u200f", "\u061c"])
def test_an_entry_holding_a_bidirectional_control_is_refused_and_writes_nothing(visitor, db, control):
    visitor.signed_in("ada@example.com")

    answer = visitor.submit("/entries", body=f"write to {control}moc.elpmaxe@ecila")

    assert_refused(answer, 422, "reorder")
    assert db.execute("SELECT count(*) FROM entries").fetchone()[0] == 0


def test_names_chosen_before_keys_get_theirs_at_the_start_the_older_account_first(app, visitor, post, db):
    signed_in_as(visitor, "ada@example.com", "Alice")
    signed_in_as(type(visitor)(app.test_client(), post), "bo@example.com", "Bob")
    db.execute("UPDATE accounts SET display_name = '\u0410lice' WHERE email = 'bo@example.com'")  # an old look-alike
    db.execute("UPDATE accounts SET name_key = NULL")  # as accounts were before names had keys

    assert names.keys_made(db) == 1  # what every start does
    assert names.keys_made(db) == 0

    keys = dict(db.execute("SELECT email, name_key IS NOT NULL FROM accounts").fetchall())
    assert keys == {"ada@example.com": True, "bo@example.com": False}
    refused = type(visitor)(app.test_client(), post).submit(
        "/signup", email="eve@example.com", password=PASSWORD, name="alice"
    )
    assert_refused(refused, 422, "looks like one that is")


def test_a_key_made_with_an_invisible_character_is_made_again_and_its_name_s_look_alike_refused(app, visitor, db):
    signed_in_as(visitor, "bo@example.com", "Bob")
    # Bo's account as an earlier version left it: "Alice" and a U+034F, under a key of its own.
    db.execute("UPDATE accounts SET display_name = 'Alice\u034f', name_key = 'alice\u034f'")
    db.execute("DELETE FROM guestbook_schema WHERE version >= 4")  # a database from before step 4

    guestbook_db.prepared(db)
    names.keys_made(db)  # what the next start does

    assert db.execute("SELECT name_key FROM accounts").fetchone()[0] == names.key("Alice")
    refused = type(visitor)(app.test_client(), visitor.post).submit(
        "/signup", email="eve@example.com", password=PASSWORD, name="Alice"
    )
    assert_refused(refused, 422, "looks like one that is")
