"""Sign-up and confirmation: the account, its letter, and the link that confirms it."""

import time

import pytest

import jobs
import mail
from guestbook import accounts, auth, letters, tokens
from guestbook import db as guestbook_db

from ..mail.smtpd import body_of
from .conftest import PASSWORD


def test_signup_queues_a_confirmation_letter_that_the_worker_sends(visitor, post):
    answer = visitor.signup("ada@example.com")

    assert answer.status_code == 302
    assert [letter["to"] for letter in post.queued()] == ["ada@example.com"]
    (letter,) = post.delivered()
    assert letter["Subject"] == "Confirm your guestbook account"
    assert letter["Message-ID"] and letter["Date"]
    assert post.link(letter).startswith("/confirm/")


def test_confirmation_letter_is_written_when_it_leaves_and_expires_with_its_link(app, db, visitor, post):
    visitor.signup("ada@example.com")
    (asked,) = post.queued()
    assert asked == {"kind": "confirmation", "account": 1, "to": "ada@example.com"}  # no link waits in the queue

    start = time.time()
    letter = letters.writers(app)["confirmation"](db, asked)  # as the worker writes it when its turn comes

    assert start + tokens.CONFIRM_MAX_AGE <= letter.expires <= time.time() + tokens.CONFIRM_MAX_AGE + 1


def test_signup_answers_before_any_letter_is_sent(visitor, smtp):
    visitor.signup("ada@example.com")

    assert smtp.letters == []


def test_confirmation_link_line_stands_alone_in_the_letter(visitor, post):
    visitor.signup("ada@example.com")
    (letter,) = post.delivered()

    lines = body_of(letter).splitlines()
    assert any(line.startswith("http://guestbook.test/confirm/") and " " not in line for line in lines)


def test_signup_shows_that_a_letter_is_on_its_way(client, visitor):
    visitor.signup("ada@example.com")

    page = client.get("/signin").get_data(as_text=True)
    assert 'role="status"' in page and "A letter is on its way to ada@example.com" in page


def test_taken_address_gets_the_same_answer_and_a_letter_saying_so(client, visitor, post):
    visitor.signup("ada@example.com")
    post.delivered()
    first_page = client.get("/signin").get_data(as_text=True)

    again = visitor.signup("Ada@Example.com", "another long password")

    assert again.status_code == 302 and again.location == "/signin"
    assert client.get("/signin").get_data(as_text=True) == first_page
    (letter,) = post.delivered()
    assert letter["Subject"] == "You already have a guestbook account"


def test_thirty_signups_of_a_taken_address_send_its_owner_one_letter(client, visitor, post, db):
    visitor.signup("ada@example.com")
    post.delivered()

    answers = []
    for n in range(30):
        client.environ_base["REMOTE_ADDR"] = f"192.0.2.{n}"  # from many clients, as a flood would come
        answers.append(visitor.signup("ada@example.com", "another long password").status_code)

    assert answers == [302] * 30
    (letter,) = post.delivered()
    assert letter["Subject"] == "You already have a guestbook account"
    db.execute(
        "UPDATE accounts SET signup_again_sent_at = signup_again_sent_at - make_interval(secs => %s)",
        [accounts.SIGNUP_AGAIN_EVERY],
    )
    visitor.signup("ada@example.com", "another long password")
    assert [letter["Subject"] for letter in post.delivered()] == ["You already have a guestbook account"]


def test_confirm_link_shows_a_button_and_only_the_post_confirms(client, visitor, post, db):
    visitor.signup("ada@example.com")
    link = post.only_link_to("ada@example.com")

    page = client.get(link)

    assert page.status_code == 200 and "Confirm my account" in page.get_data(as_text=True)
    assert db.execute("SELECT confirmed_at FROM accounts").fetchone()[0] is None
    assert visitor.submit(link, password=PASSWORD).status_code == 302
    assert db.execute("SELECT confirmed_at FROM accounts").fetchone()[0] is not None


def test_the_owner_s_click_never_confirms_an_account_whose_password_someone_else_chose(client, visitor, post, db):
    visitor.signup("ada@example.com", "the squatter's own password")  # someone who is not Ada, before she signs up
    link = post.only_link_to("ada@example.com")

    page = client.get(link).get_data(as_text=True)
    pressed = visitor.submit(link)  # Ada presses Confirm on a letter she never asked for
    guessed = visitor.submit(link, password=PASSWORD)  # ...and tries the password she would have chosen

    assert 'type="password"' in page and 'autocomplete="current-password"' in page
    assert (pressed.status_code, guessed.status_code) == (400, 401)  # 400: the form's password field is missing
    assert "not the password" in guessed.get_data(as_text=True)
    assert db.execute("SELECT confirmed_at FROM accounts").fetchone()[0] is None
    squatter = visitor.signin("ada@example.com", "the squatter's own password")  # still unconfirmed: no way in
    assert squatter.status_code == 401 and auth.SIGNIN_FAILED in squatter.get_data(as_text=True)
    with client.session_transaction() as session:
        assert "account_id" not in session and "session_id" not in session


def test_the_password_of_the_sign_up_confirms_the_account(visitor, post, db):
    visitor.signup("ada@example.com")
    link = post.only_link_to("ada@example.com")

    answer = visitor.submit(link, password=PASSWORD)

    assert answer.status_code == 302
    assert db.execute("SELECT confirmed_at FROM accounts").fetchone()[0] is not None


def test_wrong_passwords_on_the_confirm_form_count_toward_the_lock_with_sign_in_s(visitor, post, db):
    visitor.signup("ada@example.com")
    link = post.only_link_to("ada@example.com")
    half = accounts.LOCK_AFTER // 2

    confirms = [visitor.submit(link, password=f"guess {n} of the link's holder").status_code for n in range(half)]
    signins = [visitor.signin("ada@example.com", f"guess {n}").status_code for n in range(half, accounts.LOCK_AFTER)]
    right = visitor.submit(link, password=PASSWORD)  # the sign-up's password, once the account is locked

    assert confirms + signins == [401] * accounts.LOCK_AFTER and right.status_code == 401
    assert db.execute("SELECT confirmed_at, locked_at IS NOT NULL FROM accounts").fetchone() == (None, True)
    (letter,) = post.delivered()
    assert letter["Subject"] == "Your guestbook account is locked"
    assert visitor.submit(post.link(letter)).status_code == 302  # unlocked, the right password confirms it
    assert visitor.submit(link, password=PASSWORD).status_code == 302


def test_confirming_twice_is_harmless(visitor, post, db):
    visitor.signup("ada@example.com")
    link = post.only_link_to("ada@example.com")
    visitor.submit(link, password=PASSWORD)
    first = db.execute("SELECT confirmed_at FROM accounts").fetchone()[0]

    again = visitor.submit(link)

    assert again.status_code == 302
    assert db.execute("SELECT confirmed_at FROM accounts").fetchone()[0] == first


def test_confirmed_account_can_sign_in(client, visitor):
    visitor.confirmed_account("ada@example.com")

    answer = visitor.signin("ada@example.com")

    assert answer.status_code == 302
    assert "ada@example.com" in client.get("/").get_data(as_text=True)


@pytest.mark.parametrize(
    "email, password, problem",
    [
        ("not an address", PASSWORD, "Enter an email address"),
        ("", PASSWORD, "Enter an email address"),
        ("ada@example.com", "short", "at least 12 characters"),
        ("ada@example.com", "x" * 11, "at least 12 characters"),
        ("ada@example.com", "qwerty123456", "one of the most common"),
        ("ada@example.com", "1q2w3e4r5t6y", "one of the most common"),
        ("ada@example.com", " Qwerty123456 ", "one of the most common"),
        ("grace@example.com", "grace hopper 1906", "without “grace” in it"),
        ("grace@example.com", "my name is GRACE!", "the name your address begins with"),
        ("ada.lovelace.1815@example.com", "ada.lovelace.1815", "the name your address begins with"),
    ],
)
def test_signup_with_unusable_details_is_refused_and_writes_nothing(visitor, db, email, password, problem):
    answer = visitor.signup(email, password)

    assert answer.status_code == 422
    assert problem in answer.get_data(as_text=True)
    assert db.execute("SELECT count(*) FROM accounts").fetchone()[0] == 0
    assert jobs.listed(db) == []


@pytest.mark.parametrize(
    "email",
    [
        "=?utf-8?q?victim?=@=?utf-8?q?evil=2Eexample?=",  # a mail server would be handed victim@evil.example
        "=?utf-8?q?ada=0D=0Abcc=3Dall?=@example.com",  # an encoded CR LF, which the worker could never send
        "ada\x01@example.com",
        "ada\x1b@example.com",
        "zoé@example.com",
        "ada@exämple.com",
    ],
)
def test_signup_with_an_address_that_is_not_sent_as_it_reads_is_refused_and_queues_nothing(visitor, db, email):
    answer = visitor.signup(email)

    assert answer.status_code == 422
    assert "Enter an email address" in answer.get_data(as_text=True)
    assert db.execute("SELECT count(*) FROM accounts").fetchone()[0] == 0
    assert jobs.listed(db) == []


def test_a_short_address_name_in_a_password_is_fine(visitor):
    assert visitor.signup("bo@example.com", "bottles of rum").status_code == 302


def test_password_of_twelve_and_of_128_characters_are_accepted(visitor, db):
    assert visitor.signup("short@example.com", "wide river 4").status_code == 302
    assert visitor.signup("long@example.com", "wide river 4 stones " * 6 + "and more").status_code == 302
    assert db.execute("SELECT count(*) FROM accounts").fetchone()[0] == 2


@pytest.mark.parametrize(
    "password",
    [
        "aaaaaaaaaaaa",
        "123456789012",
        "passwordpassword",
        "Password123!",
        "guestbook123",
        "Welcome12345",
        "abcdefghijkl",
        "qwertyuiopas",
        "Guestbook2026!",
        "x" * 128,
    ],
)
def test_signup_with_a_password_of_a_guessable_pattern_is_refused_and_writes_nothing(visitor, db, password):
    answer = visitor.signup("ada@example.com", password)

    assert answer.status_code == 422
    assert "a pattern that guessers try early" in answer.get_data(as_text=True)
    assert db.execute("SELECT count(*) FROM accounts").fetchone()[0] == 0


def test_signup_whose_insert_fails_at_commit_queues_no_letter(app, visitor, db):
    # A deferred constraint trigger fails the insert when the transaction commits,
    # after the letter was queued on it: the letter must go with the account.
    db.execute("""
        CREATE FUNCTION refuse_account() RETURNS trigger LANGUAGE plpgsql AS
        $$ BEGIN RAISE EXCEPTION 'accounts are refused today'; END $$;
        CREATE CONSTRAINT TRIGGER refuse_accounts AFTER INSERT ON accounts
        DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION refuse_account();
    """)
    try:
        with pytest.raises(Exception, match="accounts are refused today"):
            visitor.signup("ada@example.com")
    finally:
        db.execute("DROP TRIGGER refuse_accounts ON accounts; DROP FUNCTION refuse_account()")

    assert db.execute("SELECT count(*) FROM accounts").fetchone()[0] == 0
    assert jobs.listed(db, mail.QUEUE) == []


def test_accounts_table_of_an_earlier_version_gains_the_moments_of_throttled_letters(app, db):
    db.execute("ALTER TABLE accounts DROP COLUMN confirmation_again_at, DROP COLUMN signup_again_sent_at")
    db.execute("DROP TABLE guestbook_schema")  # an earlier version kept no record of its steps

    guestbook_db.prepared(db)

    columns = db.execute("SELECT column_name FROM information_schema.columns WHERE table_name = 'accounts'").fetchall()
    assert {"confirmation_again_at", "signup_again_sent_at"} <= {name for (name,) in columns}
