"""On a phone's screen (390 px wide) nothing runs past the edge, and the pages keep to their Content-Security-Policy.

A long address in the header, a signed link in the outbox and an entry without a
space must all wrap; the stylesheet is the site's own file, so the policy's
style-src 'self' lets it apply and the browser reports no violation.
"""

import pytest
from playwright.sync_api import expect

from .guest import CONFIRMATION, PASSWORD
from .inbox import WAIT
from .local import wait_until

PHONE = {"width": 390, "height": 844}  # CSS pixels of a common phone held upright
LONG_ADDRESS = "a.rather.long.name.for.a.phone.screen@example.com"
LONG_ENTRY = "w" * 300  # one word, longer than any screen is wide


@pytest.fixture
def guestbook_settings():
    """No MAIL_URL: the letters, and their long links, are shown at /outbox."""
    return {}


def fits_the_screen(page) -> None:
    """Asserts that the page is no wider than the screen, and every button lies within it."""
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"], page.url
    for button in page.get_by_role("button").all():
        box = button.bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"], button.inner_text()


def test_pages_fit_a_phone_screen_and_pass_their_policy(page, guestbook):
    violations = []
    page.on("console", lambda message: "Content Security Policy" in message.text and violations.append(message.text))
    page.set_viewport_size(PHONE)
    page.goto(f"{guestbook.keyed_url}/signup")  # the pages of the printed link, which show the outbox
    page.get_by_label("Email").fill(LONG_ADDRESS)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign up").click()
    expect(page.get_by_role("status")).to_contain_text("A letter is on its way")

    wait_until(lambda: any(guestbook.outbox.glob("*.eml")), WAIT, "a letter in the outbox folder")
    page.get_by_role("link", name="Outbox").click()
    letter = page.get_by_role("article").filter(has=page.get_by_role("heading", name=CONFIRMATION))
    expect(letter.get_by_role("link")).to_be_visible()
    fits_the_screen(page)
    letter.get_by_role("link").click()
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Confirm my account").click()

    page.get_by_label("Email").fill(LONG_ADDRESS)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.get_by_label("Your entry").fill(LONG_ENTRY)
    page.get_by_role("button", name="Sign", exact=True).click()
    expect(page.get_by_role("status")).to_have_text("Thank you for signing the guestbook.")
    fits_the_screen(page)

    assert page.evaluate("getComputedStyle(document.body).maxWidth") == "640px"  # the stylesheet applied
    assert violations == []
