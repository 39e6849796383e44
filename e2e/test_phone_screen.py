"""On a phone's screen (390 px wide) nothing runs past the edge, and the pages keep to their Content-Security-Policy.

A long address in the header, a signed link in the outbox and an entry without a
space must all wrap; the stylesheet is the site's own file, so the policy's
style-src 'self' lets it apply and the browser reports no violation. The dashboard's
queues page, its pulse charts drawn, fits too; its screenshot is kept in the spec's
folder under test-results/.
"""

from pathlib import Path

import pytest
from playwright.sync_api import expect

import jobs.store.pulse
import mail

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
    page.get_by_role("button", name="Add my entry").click()
    expect(page.get_by_role("status")).to_have_text("Thank you for signing the guestbook.")
    fits_the_screen(page)

    assert page.evaluate("getComputedStyle(document.body).maxWidth") == "640px"  # the stylesheet applied
    assert violations == []


def test_the_dashboard_s_queues_page_and_its_pulse_fit_a_phone_screen(page, guestbook, output_path):
    violations = []
    page.on("console", lambda message: "Content Security Policy" in message.text and violations.append(message.text))
    page.set_viewport_size(PHONE)
    page.goto(f"{guestbook.keyed_url}/signup")
    page.get_by_label("Email").fill(LONG_ADDRESS)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign up").click()
    expect(page.get_by_role("status")).to_contain_text("A letter is on its way")

    def drawn() -> bool:
        page.goto(f"{guestbook.keyed_url}/jobs/")  # the pulse is drawn at each load
        return page.get_by_role("heading", name=mail.QUEUE, exact=True).count() == 1

    wait_until(drawn, 3 * jobs.store.pulse.PULSE_EVERY, "the worker's counts to reach the queues page")
    charts = page.locator("svg.pulse-chart")
    expect(charts).to_have_count(2)
    for chart in charts.all():
        box = chart.bounding_box()
        assert 0 <= box["x"] and box["x"] + box["width"] <= PHONE["width"], "a chart within the screen"
        assert box["width"] >= PHONE["width"] / 2, "and as wide as the screen allows, to be read"
    fits_the_screen(page)
    page.screenshot(path=Path(output_path) / "queues-on-a-phone.png", full_page=True)
    assert violations == []
