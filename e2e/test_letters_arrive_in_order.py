"""Letters leave in the order they were queued: one worker on the mail queue sends them one after another."""

import pytest

from .guest import CONFIRMATION
from .inbox import WAIT, Inbox

GUESTS = [f"guest{n}@example.com" for n in range(1, 6)]
SECONDS_PER_LETTER = 0.6  # slower than a sign-up, so the letters wait in the queue behind each other


@pytest.fixture
def inbox():
    """An SMTP server that takes SECONDS_PER_LETTER to accept each letter."""
    inbox = Inbox(seconds_per_letter=SECONDS_PER_LETTER).start()
    yield inbox
    inbox.stop()


def test_once_a_letter_has_arrived_every_letter_queued_before_it_has_too(guest, inbox):
    for email in GUESTS:
        guest.sign_up(email)

    inbox.wait_for(to=GUESTS[-1], subject=CONFIRMATION, timeout=len(GUESTS) * SECONDS_PER_LETTER + WAIT)
    assert [letter.to for letter in inbox.letters(subject=CONFIRMATION)] == GUESTS
