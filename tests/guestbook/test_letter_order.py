"""Letters somebody waits for go first: a flood of sign-up letters delays no reset or unlock letter,
even at the mail provider's rate (MAIL_RATE), and the sign-up letters waiting are bounded as a whole,
not only per client."""

import time

import pytest

import jobs
import mail
from guestbook import accounts, create_app, mailer, tokens
from tests.jobs.helpers import wait_for

from .conftest import PASSWORD

FLOOD = 15  # sign-ups queued ahead of the letter a person waits for: with the test's other posts, within CLIENT_TRIES
RATE = 5  # letters a second, the mail rate of the test that sends at one


def flooded(visitor) -> None:
    """Sign-ups of FLOOD new addresses, their letters left waiting."""
    for n in range(FLOOD):
        assert visitor.signup(f"bulk{n}@example.com").status_code == 302


def subjects(post) -> list[str]:
    """The subjects of the letters the mail queue sends, in the order they arrive."""
    return [letter["Subject"] for letter in post.delivered()]


def test_a_reset_asked_behind_a_flood_of_sign_ups_is_sent_first(visitor, post):
    visitor.confirmed_account("owner@example.com")
    flooded(visitor)
    assert visitor.submit("/resets/new", email="owner@example.com").status_code == 302
    sent = subjects(post)
    assert sent[0] == "Choose a new guestbook password", sent
    assert len(sent) == FLOOD + 1


def test_an_unlock_letter_goes_ahead_of_a_flood_of_sign_ups(visitor, post):
    visitor.confirmed_account("owner@example.com")
    flooded(visitor)
    for _ in range(accounts.LOCK_AFTER):
        assert visitor.signin("owner@example.com", "not the password at all").status_code == 401
    sent = subjects(post)
    assert sent[0] == "Your guestbook account is locked", sent


def test_sign_ups_wait_while_too_many_letters_wait(db, settings, visitor, post, client, app):
    app.config["LETTERS_WAITING_MAX"] = 3
    visitor.confirmed_account("owner@example.com")
    for n in range(3):
        assert visitor.signup(f"bulk{n}@example.com").status_code == 302
    for email in ("new@example.com", "owner@example.com"):  # the same answer, whether the address is taken or not
        answer = visitor.signup(email)
        assert answer.status_code == 503, answer.get_data(as_text=True)
        assert answer.headers["Retry-After"] == str(mailer.BACKLOG_RETRY_AFTER)
        assert "Too many letters are waiting" in answer.get_data(as_text=True)
    assert accounts.by_email(db, "new@example.com") is None  # nothing written
    assert len(jobs.listed(db, mail.QUEUE)) == 3
    # A reset letter is not held back by the sign-ups' bound: it goes ahead of them.
    assert visitor.submit("/resets/new", email="owner@example.com").status_code == 302
    assert subjects(post)[0] == "Choose a new guestbook password"
    assert visitor.signup("new@example.com", PASSWORD).status_code == 302  # once they are sent, sign-ups are back


def test_at_the_mail_rate_a_reset_behind_a_flood_is_sent_first_and_the_flood_at_the_rate(visitor, post, db, connect):
    mailer.rate_kept(db, RATE)
    visitor.confirmed_account("owner@example.com")
    flooded(visitor)
    assert visitor.submit("/resets/new", email="owner@example.com").status_code == 302
    asked, before = time.monotonic(), len(post.server.letters)
    worker = jobs.worker(connect, mail.QUEUE, post.performers, threads=4)
    try:
        wait_for(lambda: len(post.server.letters) > before, "the first letter")
        first_after = time.monotonic() - asked
        wait_for(lambda: len(post.server.letters) == before + FLOOD + 1, "every letter")
        all_after = time.monotonic() - asked
    finally:
        worker.stop()
        assert worker.join(10)
    subjects = [letter["Subject"] for letter in post.server.letters[before:]]
    # Its job, first in line, queues the letter itself, also at AWAITED: meanwhile the other
    # threads take sign-up letters, at most the rest of that second's RATE.
    assert "Choose a new guestbook password" in subjects[: RATE + 1], subjects
    assert first_after < tokens.RESET_MAX_AGE
    assert all_after >= (FLOOD + 1 - RATE) / RATE  # no more than RATE letters started in any second


@pytest.mark.parametrize(("setting", "rate"), [(None, mailer.MAIL_RATE), ("14", 14)])
def test_mail_rate_is_read_from_the_environment(monkeypatch, settings, db, smtp, setting, rate):
    if setting is not None:
        monkeypatch.setenv("MAIL_RATE", setting)
    assert create_app(settings).config["MAIL_RATE"] == rate


def test_a_mail_rate_that_is_no_whole_number_is_named(monkeypatch, settings, db, smtp):
    monkeypatch.setenv("MAIL_RATE", "14/s")
    with pytest.raises(ValueError, match="MAIL_RATE takes a whole number"):
        create_app(settings)


def test_a_mail_rate_of_zero_lifts_the_mail_queue_s_limit(db):
    mailer.rate_kept(db, RATE)
    assert [q["limit_rate"] for q in jobs.status(db)] == [RATE]
    mailer.rate_kept(db, 0)
    assert jobs.status(db) == []
