"""Bad input in the browser gets a page that says what was wrong, never a 500, and changes nothing.

Here: a confirmation link tampered with, a confirmation with a password other than the
sign-up's, a reset link past its lifetime, and a form sent without its CSRF token.
"""

import pytest
from playwright.sync_api import expect

from .guest import CONFIRMATION, PASSWORD
from .local import wait_until

ADA = "ada@example.com"
RESET_LINK_LIFETIME = 2  # seconds a reset link lives in these specs (RESET_TOKEN_MAX_AGE; an hour by default)
RESET = "Choose a new guestbook password"  # the subject of the reset letter
FORGED_ENTRY = "Posted by another site in Ada's name"


@pytest.fixture
def guestbook_settings(guestbook_settings):
    """The usual settings, with reset links that expire while the spec watches."""
    return {**guestbook_settings, "RESET_TOKEN_MAX_AGE": str(RESET_LINK_LIFETIME)}


def tampered(link: str) -> str:
    """`link` with the first character of its token changed, as a careless or hostile hand might."""
    site, _, token = link.rpartition("/")
    return f"{site}/{'B' if token[0] == 'A' else 'A'}{token[1:]}"


def test_tampered_confirmation_link_is_refused_and_confirms_nothing(page, guest, inbox):
    guest.sign_up(ADA)
    letter = inbox.wait_for(to=ADA, subject=CONFIRMATION)

    answer = page.goto(tampered(letter.link))
    assert answer.status == 400
    expect(page.get_by_role("alert")).to_contain_text("This confirmation link is not valid")

    guest.sign_in(ADA, PASSWORD)
    expect(page.get_by_role("alert")).to_contain_text("Sign-in failed")  # not confirmed: the answer of any failure


def test_an_address_someone_else_signed_up_is_not_confirmed_by_its_owner_s_click(page, guest, inbox):
    guest.sign_up(ADA, "a password the squatter chose")  # not Ada: she never asked for the letter
    letter = inbox.wait_for(to=ADA, subject=CONFIRMATION)

    page.goto(letter.link)
    page.get_by_label("Password").fill(PASSWORD)  # Ada's own password, not the squatter's
    page.get_by_role("button", name="Confirm my account").click()

    expect(page.get_by_role("alert")).to_contain_text("That is not the password this account was signed up with")
    guest.sign_in(ADA, "a password the squatter chose")
    expect(page.get_by_role("heading", name="Confirm your account first")).to_be_visible()


def test_expired_reset_link_is_refused_and_changes_nothing(page, guestbook, guest, inbox):
    guest.confirmed_account(ADA)
    page.goto(f"{guestbook.url}/resets/new")
    page.get_by_label("Email").fill(ADA)
    page.get_by_role("button", name="Send reset link").click()
    letter = inbox.wait_for(to=ADA, subject=RESET)

    # Expiry is the clock's doing: wait until the link says it has expired. Opening it
    # (a GET) only shows the form, and uses nothing up.
    wait_until(lambda: page.request.get(letter.link).status == 400, RESET_LINK_LIFETIME + 5, "the reset link to expire")
    answer = page.goto(letter.link)
    assert answer.status == 400
    expect(page.get_by_role("alert")).to_contain_text("This reset link is not valid: it has expired")

    guest.sign_in(ADA, PASSWORD)
    expect(page.get_by_role("button", name="Sign out")).to_be_visible()


def test_entry_sent_without_its_csrf_token_is_refused_and_saves_nothing(page, guestbook, guest):
    guest.confirmed_account(ADA)
    guest.sign_in(ADA, PASSWORD)

    # The browser's own cookies, so the session is Ada's; but no csrf_token field,
    # as when another site makes her browser post a form of its own.
    answer = page.request.post(f"{guestbook.url}/entries", form={"body": FORGED_ENTRY})
    assert answer.status == 400
    assert "not sent from this site" in answer.text()

    page.goto(guestbook.url)
    expect(page.get_by_role("button", name="Sign out")).to_be_visible()
    expect(page.get_by_text(FORGED_ENTRY)).to_have_count(0)
