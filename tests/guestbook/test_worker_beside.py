"""The letters leave from a running worker, as they do beside the server, not only from `jobs.worked`."""

import pytest

import jobs
import mail
from guestbook import upkeep

from ..mail.smtpd import body_of
from .conftest import LINK, PASSWORD

WAIT = 10.0  # seconds a test waits for the worker before it fails


@pytest.fixture
def worker(connect, app):
    running = jobs.worker(
        connect, [mail.QUEUE], upkeep.performers_for(app), poll=0.1
    )  # as the worker beside the server
    yield running
    running.stop()
    running.join(WAIT)


def test_running_worker_sends_the_confirmation_and_its_link_confirms(client, visitor, smtp, worker):
    visitor.signup("ada@example.com")

    assert worker.wait_until_empty(WAIT)
    (letter,) = smtp.letters
    (link,) = LINK.findall(body_of(letter))
    visitor.submit(link, password=PASSWORD)
    assert visitor.signin("ada@example.com").status_code == 302


def test_whole_story_with_a_running_worker(client, visitor, smtp, worker):
    visitor.signup("ada@example.com")
    assert worker.wait_until_empty(WAIT)
    visitor.submit(LINK.findall(body_of(smtp.letters[-1]))[0])
    for _ in range(10):
        visitor.signin("ada@example.com", "not the right password")
    assert worker.wait_until_empty(WAIT)
    unlock = LINK.findall(body_of(smtp.letters[-1]))[0]
    visitor.submit(unlock)
    visitor.submit("/resets/new", email="ada@example.com")
    assert worker.wait_until_empty(WAIT)
    reset = LINK.findall(body_of(smtp.letters[-1]))[0]
    visitor.submit(reset, password="a brand new password")
    assert worker.wait_until_empty(WAIT)

    assert [letter["Subject"] for letter in smtp.letters] == [
        "Confirm your guestbook account",
        "Your guestbook account is locked",
        "Choose a new guestbook password",
        "Your guestbook password was changed",
    ]
    assert visitor.signin("ada@example.com", "a brand new password").status_code == 302
    visitor.submit("/entries", body="Made it through.")
    assert "Made it through." in client.get("/").get_data(as_text=True)
