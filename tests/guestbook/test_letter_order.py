"""Letters somebody waits for go first: a flood of sign-up letters delays no reset or unlock letter,
and the sign-up letters waiting are bounded as a whole, not only per client."""

import jobs
import mail
from guestbook import accounts, mailer

from .conftest import PASSWORD

FLOOD = 15  # sign-ups queued ahead of the letter a person waits for: with the test's other posts, within CLIENT_TRIES


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
