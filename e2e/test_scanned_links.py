"""A mail scanner that opens a letter's link first (HEAD, then GET, with no cookies) changes nothing.

Only the person's press of the button the page shows confirms the account or sets a
new password; the link is not used up by the scanner, and works for them after it.
"""

import pytest
from playwright.sync_api import expect

from .guest import CONFIRMATION, PASSWORD, SIGNIN_FAILED

ADA = "ada@example.com"
NEW_PASSWORD = "a new and better passphrase"
RESET = "Choose a new guestbook password"  # the subject of the reset letter


@pytest.fixture
def scanner(playwright):
    """A client of its own, as a mail provider's link checker is: no browser, no cookies of the person."""
    scanner = playwright.request.new_context()
    yield scanner
    scanner.dispose()


def scanned(scanner, link: str, **form) -> None:
    """Opens `link` as a scanner does: HEAD, then GET, each answered without an error (and `form` sent along)."""
    for method in ("HEAD", "GET"):
        answer = scanner.fetch(link, method=method, form=form or None)
        assert answer.status == 200, f"{method} {link}: {answer.status}"


def test_scanned_confirmation_link_confirms_nothing_until_the_button_is_pressed(page, guest, inbox, scanner):
    guest.sign_up(ADA)
    letter = inbox.wait_for(to=ADA, subject=CONFIRMATION)

    scanned(scanner, letter.link)

    guest.sign_in(ADA, PASSWORD)
    expect(page.get_by_role("alert")).to_contain_text("Sign-in failed")  # not confirmed: the answer of any failure
    page.goto(letter.link)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Confirm my account").click()
    expect(page.get_by_role("status")).to_have_text("Your account is confirmed. You can sign in now.")
    guest.sign_in(ADA, PASSWORD)
    expect(page.get_by_role("button", name="Sign out")).to_be_visible()


def test_scanned_reset_link_sets_no_password_until_the_person_chooses_one(page, guestbook, guest, inbox, scanner):
    guest.confirmed_account(ADA)
    page.goto(f"{guestbook.url}/resets/new")
    page.get_by_label("Email").fill(ADA)
    page.get_by_role("button", name="Send reset link").click()
    letter = inbox.wait_for(to=ADA, subject=RESET)

    scanned(scanner, letter.link, password=NEW_PASSWORD)  # even with a password in the body

    guest.sign_in(ADA, NEW_PASSWORD)
    expect(page.get_by_role("alert")).to_contain_text(SIGNIN_FAILED)
    page.goto(letter.link)
    page.get_by_label("New password").fill(NEW_PASSWORD)
    page.get_by_role("button", name="Set new password").click()
    expect(page.get_by_role("status")).to_contain_text("Your password is changed")
    guest.sign_in(ADA, NEW_PASSWORD)
    expect(page.get_by_role("button", name="Sign out")).to_be_visible()
