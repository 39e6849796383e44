"""A slow mail server slows no one down: the sign-up answers at once, and its letter follows."""

import time

import pytest
from playwright.sync_api import expect

from .guest import CONFIRMATION, PASSWORD
from .inbox import WAIT, Inbox

ADA = "ada@example.com"
SECONDS_PER_LETTER = 3.0  # how long the slow mail server takes to accept a letter
ANSWER_WITHIN = 1.0  # seconds: far below SECONDS_PER_LETTER, and far above a sign-up's own work


@pytest.fixture
def inbox():
    """An SMTP server that takes SECONDS_PER_LETTER to accept each letter."""
    inbox = Inbox(seconds_per_letter=SECONDS_PER_LETTER).start()
    yield inbox
    inbox.stop()


def test_signup_answers_at_once_and_the_letter_still_arrives(page, guestbook, inbox):
    page.goto(f"{guestbook.url}/signup")
    page.get_by_label("Email").fill(ADA)
    page.get_by_label("Password").fill(PASSWORD)

    pressed = time.monotonic()
    page.get_by_role("button", name="Sign up").click()
    expect(page.get_by_role("status")).to_contain_text(f"A letter is on its way to {ADA}")
    assert time.monotonic() - pressed < ANSWER_WITHIN

    inbox.wait_for(to=ADA, subject=CONFIRMATION, timeout=SECONDS_PER_LETTER + WAIT)
