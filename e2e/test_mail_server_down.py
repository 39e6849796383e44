"""A mail server that is down loses no letter: the sign-up answers, and the letter leaves once the server is back."""

import psycopg
import pytest

import jobs
import mail

from .guest import CONFIRMATION
from .inbox import WAIT, Inbox
from .local import wait_until

ADA = "ada@example.com"
RETRY_INTERVALS = (1, 2, 4)  # seconds between a letter's attempts: four attempts within 7 s


@pytest.fixture
def inbox():
    """An SMTP server that is down when the spec begins: its port is chosen, and nothing listens there yet."""
    inbox = Inbox()
    yield inbox
    inbox.stop()


@pytest.fixture
def guestbook_settings(guestbook_settings):
    """The usual settings, with a retry schedule short enough to watch."""
    return {**guestbook_settings, "MAIL_RETRY_INTERVALS": ",".join(map(str, RETRY_INTERVALS))}


def failed_attempts(database_url: str) -> list[str]:
    """Why each attempt to send a letter of the mail queue has failed so far, as the queue keeps it."""
    with psycopg.connect(database_url) as db:
        return [reason for job in jobs.listed(db, mail.QUEUE) for reason in job["reasons"]]


def test_letter_arrives_once_the_mail_server_is_back(guest, inbox, database_url):
    guest.sign_up(ADA)  # answers that a letter is on its way, though no mail server listens

    wait_until(lambda: failed_attempts(database_url), WAIT, "the letter's first attempt to fail")
    inbox.start()

    inbox.wait_for(to=ADA, subject=CONFIRMATION, timeout=sum(RETRY_INTERVALS) + WAIT)
