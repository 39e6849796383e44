"""Without a mail server, in development, letters go to the outbox: /outbox shows them, and their links work."""

import pytest
from playwright.sync_api import expect

from .guest import CONFIRMATION, PASSWORD
from .inbox import WAIT
from .local import wait_until

ADA = "ada@example.com"


@pytest.fixture
def guestbook_settings():
    """No MAIL_URL: the guestbook writes its letters to its outbox folder."""
    return {}


def test_letter_in_the_outbox_confirms_the_account(page, guestbook):
    page.goto(f"{guestbook.keyed_url}/signup")  # the pages of the printed link, which show the outbox
    page.get_by_label("Email").fill(ADA)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign up").click()
    expect(page.get_by_role("status")).to_contain_text(f"A letter is on its way to {ADA}")

    # The worker writes the letter a moment after the answer; nothing announces it.
    wait_until(lambda: any(guestbook.outbox.glob("*.eml")), WAIT, "a letter in the outbox folder")
    page.get_by_role("link", name="Outbox").click()
    letter = page.get_by_role("article").filter(has=page.get_by_role("heading", name=CONFIRMATION))
    expect(letter).to_contain_text(f"To {ADA}")
    letter.get_by_role("link").click()

    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Confirm my account").click()
    expect(page.get_by_role("status")).to_have_text("Your account is confirmed. You can sign in now.")
    page.get_by_label("Email").fill(ADA)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("button", name="Sign out")).to_be_visible()
