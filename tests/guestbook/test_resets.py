"""Password resets: the same answer for any address, one letter per five minutes, and a link that works once."""

import base64
import logging
import re
from email import message_from_bytes
from email.policy import default

import psycopg
import pytest

import jobs
import mail
from guestbook import accounts, mailer, resets

from ..mail.smtpd import body_of
from .conftest import PASSWORD

NEW_PASSWORD = "a brand new password"


def reset_link(visitor, post, email="ada@example.com") -> str:
    """Asks for a reset letter and returns the path of its link."""
    visitor.submit("/resets/new", email=email)
    return post.only_link_to(email)


def test_reset_letter_links_to_the_new_password_form(client, visitor, post):
    visitor.confirmed_account("ada@example.com")

    link = reset_link(visitor, post)

    assert link.startswith("/resets/") and link.endswith("/edit")
    assert "Set new password" in client.get(link).get_data(as_text=True)


def test_reset_answers_the_same_for_known_and_unknown_addresses(client, visitor, post):
    visitor.confirmed_account("ada@example.com")

    known = visitor.submit("/resets/new", email="ada@example.com")
    known_page = client.get("/signin").get_data(as_text=True).replace("ada@example.com", "ADDRESS")
    unknown = visitor.submit("/resets/new", email="bo@example.com")
    unknown_page = client.get("/signin").get_data(as_text=True).replace("bo@example.com", "ADDRESS")

    assert (known.status_code, known.location) == (unknown.status_code, unknown.location) == (302, "/signin")
    assert known_page == unknown_page
    assert [letter["To"] for letter in post.delivered()] == ["ada@example.com"]


def test_at_most_one_reset_letter_per_account_every_five_minutes(visitor, post, db):
    visitor.confirmed_account("ada@example.com")
    for _ in range(3):
        visitor.submit("/resets/new", email="ada@example.com")
    assert len(post.delivered()) == 1

    db.execute("UPDATE accounts SET reset_sent_at = reset_sent_at - make_interval(secs => %s)", [accounts.RESET_EVERY])
    visitor.submit("/resets/new", email="ada@example.com")

    assert len(post.delivered()) == 1


def test_reset_sets_the_password_and_queues_a_letter_saying_so(visitor, post):
    visitor.confirmed_account("ada@example.com")
    link = reset_link(visitor, post)

    answer = visitor.submit(link, password=NEW_PASSWORD)

    assert (answer.status_code, answer.location) == (302, "/signin")
    (letter,) = post.delivered()
    assert letter["Subject"] == "Your guestbook password was changed"
    assert visitor.signin("ada@example.com", PASSWORD).status_code == 401
    assert visitor.signin("ada@example.com", NEW_PASSWORD).status_code == 302


def test_the_password_changed_letter_breaks_its_lines_only_between_sentences(visitor, post):
    visitor.confirmed_account("ada@example.com")
    visitor.submit(reset_link(visitor, post), password=NEW_PASSWORD)

    (letter,) = post.delivered()
    lines = letter.get_body(("plain",)).get_content().splitlines()

    assert [line for line in lines if line and not line.endswith((".", ":")) and not line.startswith("http")] == []


def test_the_new_password_form_names_the_account_for_password_managers(client, visitor, post):
    visitor.confirmed_account("ada@example.com")

    page = client.get(reset_link(visitor, post)).get_data(as_text=True)

    assert '<input type="email" value="ada@example.com" autocomplete="username" readonly hidden>' in page


@pytest.mark.parametrize("path", ["/resets/new", "/signin", "/signup"])
def test_a_page_s_title_is_its_heading(client, path):
    page = client.get(path).get_data(as_text=True)

    heading = re.search(r"<h1>(.*?)</h1>", page).group(1)
    assert f"<title>{heading} · Guestbook</title>" in page


def test_second_use_of_reset_link_is_refused(client, visitor, post):
    visitor.confirmed_account("ada@example.com")
    link = reset_link(visitor, post)
    visitor.submit(link, password=NEW_PASSWORD)

    assert client.get(link).status_code == 400
    assert visitor.submit(link, password="yet another password").status_code == 400
    assert visitor.signin("ada@example.com", NEW_PASSWORD).status_code == 302


def test_expired_reset_link_is_refused(settings, app, client, visitor, post):
    visitor.confirmed_account("ada@example.com")
    link = reset_link(visitor, post)
    app.config["RESET_TOKEN_MAX_AGE"] = -1  # every link is past its age now

    assert client.get(link).status_code == 400
    assert visitor.submit(link, password=NEW_PASSWORD).status_code == 400


def test_reset_token_does_not_reveal_the_password_digest(visitor, post, db):
    visitor.confirmed_account("ada@example.com")
    link = reset_link(visitor, post)
    digest = db.execute("SELECT password_digest FROM accounts").fetchone()[0]

    payload = link.split("/")[2].split(".")[0]
    text = base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)).decode()
    assert digest not in text and digest.split("$")[-1] not in text


def test_reset_ends_every_other_session_of_the_account(app, visitor, post):
    visitor.signed_in("ada@example.com")
    elsewhere = type(visitor)(app.test_client(), post)
    link = reset_link(elsewhere, post)

    elsewhere.submit(link, password=NEW_PASSWORD)
    post.delivered()

    assert "ada@example.com" not in visitor.client.get("/").get_data(as_text=True)


def test_reset_unlocks_a_locked_account(visitor, post):
    visitor.confirmed_account("ada@example.com")
    for _ in range(accounts.LOCK_AFTER):
        visitor.signin("ada@example.com", "not the right password")
    post.delivered()
    link = reset_link(visitor, post)

    visitor.submit(link, password=NEW_PASSWORD)

    assert visitor.signin("ada@example.com", NEW_PASSWORD).status_code == 302


def test_reset_with_a_short_password_is_refused_and_keeps_the_link(visitor, post):
    visitor.confirmed_account("ada@example.com")
    link = reset_link(visitor, post)

    assert visitor.submit(link, password="short").status_code == 422
    assert visitor.submit(link, password=NEW_PASSWORD).status_code == 302


def test_reset_to_a_common_password_or_one_holding_the_address_is_refused_and_keeps_the_link(visitor, post, db):
    visitor.confirmed_account("grace@example.com")
    link = reset_link(visitor, post, "grace@example.com")
    before = db.execute("SELECT password_digest FROM accounts").fetchone()[0]

    common = visitor.submit(link, password="qwerty123456")
    named = visitor.submit(link, password="grace is my password")
    pattern = visitor.submit(link, password="Welcome12345")

    assert common.status_code == named.status_code == pattern.status_code == 422
    assert "one of the most common" in common.get_data(as_text=True)
    assert "the name your address begins with" in named.get_data(as_text=True)
    assert "a pattern that guessers try early" in pattern.get_data(as_text=True)
    assert db.execute("SELECT password_digest FROM accounts").fetchone()[0] == before
    assert visitor.submit(link, password=NEW_PASSWORD).status_code == 302


def test_a_reset_job_holds_no_link_the_letter_is_written_when_it_leaves(client, visitor, post):
    visitor.confirmed_account("ada@example.com")
    visitor.submit("/resets/new", email="ada@example.com")
    (asked,) = post.queued()

    # What the letter is written from, and nothing a reader of the queue could use.
    assert asked == {"kind": "reset", "account": 1, "to": "ada@example.com", "client": "127.0.0.1"}
    link = post.only_link_to("ada@example.com")
    assert client.get(link).status_code == 200
    visitor.submit(link, password=NEW_PASSWORD)
    (changed,) = post.queued()
    assert changed["expires"] is None  # "your password was changed" carries no link that dies


def test_a_second_reset_request_while_the_first_waits_is_the_same_letter(visitor, post, db):
    visitor.confirmed_account("ada@example.com")
    db.execute("UPDATE accounts SET reset_sent_at = now() - interval '1 day'")
    for _ in range(3):
        assert visitor.submit("/resets/new", email="ada@example.com").status_code == 302

    assert len(post.queued()) == 1
    assert [letter["To"] for letter in post.delivered()] == ["ada@example.com"]


def test_a_client_with_its_letters_waiting_is_told_to_come_back_whatever_the_address(visitor, post):
    visitor.confirmed_account("ada@example.com")
    for n in range(mailer.AWAITED_PER_CLIENT):
        assert visitor.submit("/resets/new", email=f"someone{n}@example.com").status_code == 302

    for email in ("ada@example.com", "bo@example.com"):  # the same answer, whether the address has an account or not
        answer = visitor.submit("/resets/new", email=email)
        assert answer.status_code == 429, answer.get_data(as_text=True)
        assert answer.headers["Retry-After"] == str(mailer.AWAITED_RETRY_AFTER)
        assert resets.TOO_MANY in answer.get_data(as_text=True)
    assert len(post.queued()) == mailer.AWAITED_PER_CLIENT  # nothing more queued
    post.delivered()
    assert visitor.submit("/resets/new", email="ada@example.com").status_code == 302  # once they went, it may ask


def statements_of(monkeypatch, request) -> list[str]:
    """The SQL statements `request()` sends, in order, with the rows they change."""
    sent = []
    execute = psycopg.Connection.execute

    def recorded(self, query, params=None, **kwargs):
        cursor = execute(self, query, params, **kwargs)
        command = (cursor.statusmessage or "").split(" ", 1)[0]
        sent.append((str(query), None if command == "SELECT" else cursor.rowcount))
        return cursor

    with monkeypatch.context() as patched:
        patched.setattr(psycopg.Connection, "execute", recorded)
        request()
    return sent


def test_a_reset_request_takes_the_same_path_for_known_and_unknown_addresses(visitor, post, db, monkeypatch):
    visitor.confirmed_account("ada@example.com")
    visitor.csrf_token()  # the session's token exists before either request is recorded

    known = statements_of(monkeypatch, lambda: visitor.submit("/resets/new", email="ada@example.com"))
    unknown = statements_of(monkeypatch, lambda: visitor.submit("/resets/new", email="bo@example.com"))

    assert [query for query, _ in known] == [query for query, _ in unknown]
    assert [changed for _, changed in known] == [changed for _, changed in unknown]  # the same rows written
    assert [letter["To"] for letter in post.delivered()] == ["ada@example.com"]  # and the worker sends one letter


class QuotingFilter:
    """A content filter's SMTP handler: it refuses every letter with a 554 that quotes its link's lines as they came.

    On the wire the letter is quoted-printable, so those lines hold the link cut by soft
    line breaks ("=" and a line end): pieces of the token, none of them a whole run of it.
    """

    def __init__(self):
        self.answers: list[str] = []
        self.bodies: list[str] = []  # what each letter said, as its reader would have read it

    async def handle_DATA(self, server, session, envelope):
        self.bodies.append(body_of(message_from_bytes(envelope.original_content, policy=default)))
        lines = envelope.original_content.split(b"\r\n\r\n", 1)[1].split(b"\r\n")
        start = next(n for n, line in enumerate(lines) if b"://" in line)
        self.answers.append(
            "554 5.7.1 Link refused by content filter: " + " ".join(line.decode() for line in lines[start : start + 3])
        )
        return self.answers[-1]


def pieces(secret: str, size: int = 8) -> set[str]:
    """Every run of `size` characters of `secret`."""
    return {secret[n : n + size] for n in range(len(secret) - size + 1)}


def test_a_mail_server_that_quotes_the_refused_reset_letter_leaves_no_piece_of_its_link_anywhere(
    visitor, post, db, smtp, caplog
):
    visitor.confirmed_account("ada@example.com")
    content_filter = smtp.controller.handler = QuotingFilter()
    visitor.submit("/resets/new", email="ada@example.com")

    with caplog.at_level(logging.INFO, logger="jobs"):
        while jobs.worked(db, mail.QUEUE, post.performers) is not None:
            pass

    token = re.search(r"/resets/(\S+)/edit", content_filter.bodies[-1]).group(1)
    (answer,) = content_filter.answers
    assert any(piece in answer for piece in pieces(token)), "the refusal quotes the link"
    (shelved,) = jobs.failed(db, mail.QUEUE)
    assert shelved["failure"].startswith("the mail server refused the letter: 554")
    kept = {
        "the failure": shelved["failure"],
        "the traceback": shelved["traceback"],
        "the reasons": " ".join(shelved["reasons"]),
        "the log": caplog.text,
    }
    for where, text in kept.items():
        found = sorted(piece for piece in pieces(token) if piece in text)
        assert not found, f"{where} holds pieces of the reset token: {found[:3]}"


def squatted(visitor, post, name: str) -> str:
    """Ada's address signed up by someone else with `name`; the path of the reset link she then asks for."""
    visitor.submit("/signup", email="ada@example.com", password="the squatter's own password", name=name)
    post.delivered()  # the confirmation letter she never asked for
    return reset_link(visitor, post)


def test_the_reset_of_an_account_never_confirmed_sets_the_name_chosen_on_its_form(client, visitor, post, db):
    link = squatted(visitor, post, "Ada is a fraud")

    form = client.get(link).get_data(as_text=True)
    visitor.submit(link, password=NEW_PASSWORD, name="Ada")

    assert 'name="name"' in form
    assert db.execute("SELECT display_name, confirmed_at IS NOT NULL FROM accounts").fetchone() == ("Ada", True)
    visitor.signin("ada@example.com", NEW_PASSWORD)
    visitor.submit("/entries", body="my first entry")
    page = client.get("/").get_data(as_text=True)
    assert '<bdi class="author">Ada</bdi>' in page and "fraud" not in page


def test_the_reset_of_an_account_never_confirmed_without_a_name_clears_the_squatter_s(visitor, post, db):
    link = squatted(visitor, post, "Ada is a fraud")

    assert visitor.submit(link, password=NEW_PASSWORD).status_code == 302

    assert db.execute("SELECT display_name, name_key FROM accounts").fetchone() == ("", None)


def test_the_reset_of_an_account_never_confirmed_refuses_a_name_sign_up_would_and_keeps_the_link(visitor, post, db):
    visitor.confirmed_account("bo@example.com")
    visitor.submit("/signup", email="eve@example.com", password=PASSWORD, name="Bob")  # Eve's claim on it
    post.delivered()
    link = squatted(visitor, post, "Ada is a fraud")

    taken = visitor.submit(link, password=NEW_PASSWORD, name="bob")
    reserved = visitor.submit(link, password=NEW_PASSWORD, name="A guest")

    assert (taken.status_code, reserved.status_code) == (422, 422)
    assert "taken" in taken.get_data(as_text=True) and "reserved" in reserved.get_data(as_text=True)
    assert db.execute("SELECT confirmed_at FROM accounts WHERE email = 'ada@example.com'").fetchone()[0] is None
    assert visitor.submit(link, password=NEW_PASSWORD, name="Ada").status_code == 302


def test_the_reset_of_a_confirmed_account_asks_no_name_and_keeps_its_own(client, visitor, post, db):
    visitor.submit("/signup", email="ada@example.com", password=PASSWORD, name="Ada")
    visitor.submit(post.only_link_to("ada@example.com"), password=PASSWORD)
    link = reset_link(visitor, post)

    form = client.get(link).get_data(as_text=True)
    visitor.submit(link, password=NEW_PASSWORD, name="Mallory")

    assert 'name="name"' not in form
    assert db.execute("SELECT display_name FROM accounts").fetchone()[0] == "Ada"
