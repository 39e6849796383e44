"""A reset letter on its way to the mail server: the worker holds nothing an account's own requests wait on, and
a letter the server turned away is still sent by the job's next attempt.

The mail server here is real (aiosmtpd) and holds the letter until the test lets it go.
"""

import asyncio
import threading

import jobs
import mail
from guestbook import upkeep

from ..mail.smtpd import Inbox
from .conftest import Visitor

ANSWER_WITHIN = mail.TIMEOUT / 2  # seconds a sign-in may take while the server holds the letter: far below its hold


class HoldingInbox(Inbox):
    """An SMTP handler that holds each letter until `released` is set; `holding` says one has come."""

    def __init__(self):
        super().__init__()
        self.holding, self.released = threading.Event(), threading.Event()

    async def handle_DATA(self, server, session, envelope):
        self.holding.set()
        await asyncio.get_running_loop().run_in_executor(None, self.released.wait, mail.TIMEOUT)
        return await super().handle_DATA(server, session, envelope)


class RefusingOnce(Inbox):
    """An SMTP handler that answers the first letter "451 try again later", and takes the next."""

    def __init__(self):
        super().__init__()
        self.refused = 0

    async def handle_DATA(self, server, session, envelope):
        if not self.refused:
            self.refused += 1
            return "451 4.3.0 Try again later"
        return await super().handle_DATA(server, session, envelope)


def in_thread(work) -> threading.Thread:
    """`work()`, started in a thread of its own."""
    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    return thread


def test_a_sign_in_answers_while_the_mail_server_holds_the_account_s_reset_letter(app, visitor, post, smtp, connect):
    visitor.confirmed_account("ada@example.com")
    smtp.inbox = smtp.controller.handler = inbox = HoldingInbox()
    visitor.submit("/resets/new", email="ada@example.com")

    def worked() -> None:
        with connect() as worker:
            worker.autocommit = True
            jobs.worked(worker, mail.QUEUE, post.performers)

    answers = []
    answered = threading.Event()

    def signed_in() -> None:
        answers.append(Visitor(app.test_client(), post).signin("ada@example.com").status_code)
        answered.set()

    sending = in_thread(worked)
    try:
        assert inbox.holding.wait(mail.TIMEOUT), "the reset letter never reached the mail server"
        signing_in = in_thread(signed_in)
        in_time = answered.wait(ANSWER_WITHIN)
        still_held = not inbox.released.is_set() and not inbox.letters
    finally:
        inbox.released.set()
    sending.join(mail.TIMEOUT)
    signing_in.join(mail.TIMEOUT)

    assert in_time and still_held, "the sign-in waited for the mail server to take the account's reset letter"
    assert answers == [302]
    assert [letter["To"] for letter in inbox.letters] == ["ada@example.com"]


def test_a_reset_letter_the_mail_server_turned_away_is_sent_by_the_next_attempt(app, visitor, post, smtp, monkeypatch):
    visitor.confirmed_account("ada@example.com")
    smtp.inbox = smtp.controller.handler = inbox = RefusingOnce()
    monkeypatch.setenv("MAIL_RETRY_INTERVALS", "0")  # the next attempt is due at once
    post.performers = upkeep.performers_for(app)

    visitor.submit("/resets/new", email="ada@example.com")
    said = [jobs.worked(post.db, mail.QUEUE, post.performers) for _ in range(2)]

    assert said[0].startswith("failed write on attempt 1: (451") and said[1].startswith("ran write"), said
    (letter,) = inbox.letters
    assert letter["To"] == "ada@example.com"
    assert visitor.submit(post.link(letter), password="a brand new password").status_code == 302
