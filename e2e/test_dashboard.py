"""The queue's dashboard at /jobs: a letter that failed for good while the mail server was down is retried there, and arrives."""

import psycopg
import pytest
from playwright.sync_api import expect

import jobs
import mail

from .guest import CONFIRMATION
from .inbox import WAIT, Inbox
from .local import wait_until

ADA = "ada@example.com"
RETRY_INTERVALS = "1"  # one wait of a second: two attempts, then the letter has failed for good
REFRESH = 15_000  # ms the spec waits for the queues page to show a change, three of its refreshes


@pytest.fixture
def inbox():
    """An SMTP server that is down when the spec begins: its port is chosen, and nothing listens there yet."""
    inbox = Inbox()
    yield inbox
    inbox.stop()


@pytest.fixture
def guestbook_settings(guestbook_settings):
    return {**guestbook_settings, "MAIL_RETRY_INTERVALS": RETRY_INTERVALS}


def shelved_reasons(database_url: str) -> list[str]:
    """The last reason of each letter on the failed shelf."""
    with psycopg.connect(database_url) as db:
        return [job["failure"] for job in jobs.failed(db, mail.QUEUE)]


def test_a_letter_that_failed_for_good_is_retried_from_the_dashboard_and_arrives(page, guest, guestbook, inbox,
                                                                               database_url):
    guest.sign_up(ADA)  # no mail server listens: the letter's two attempts fail
    page.goto(f"{guestbook.url}/jobs/")
    page.evaluate("window.loadedOnce = true")  # gone if the page reloads
    mail_row = page.locator("tr", has=page.locator('td[data-label="Queue"]', has_text="mail"))
    expect(mail_row.locator('td[data-label="Failed"]')).to_have_text("1", timeout=REFRESH)
    assert page.evaluate("window.loadedOnce"), "the table changed in place, without a reload"

    wait_until(lambda: shelved_reasons(database_url), WAIT, "the letter to reach the failed shelf")
    (reason,) = shelved_reasons(database_url)
    mail_row.locator('td[data-label="Failed"] a').click()
    expect(page.get_by_role("heading", name="Failed on mail")).to_be_visible()
    expect(page.locator('td[data-label="Reason"]')).to_contain_text(reason.splitlines()[0][:60])

    inbox.start()
    page.get_by_role("checkbox").check()
    page.get_by_role("button", name="Retry selected").click()
    expect(page.get_by_role("status")).to_contain_text("1 of 1 back in the queue")
    inbox.wait_for(to=ADA, subject=CONFIRMATION)
