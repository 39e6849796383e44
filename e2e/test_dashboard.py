"""The queue's dashboard at /jobs: a letter that failed for good while the mail server was down is retried there,
and arrives; a letter waits while the mail queue is paused there, and arrives once it is resumed.
"""

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


def test_a_letter_that_failed_for_good_is_retried_from_the_dashboard_and_arrives(
    page, guest, guestbook, inbox, database_url
):
    guest.sign_up(ADA)  # no mail server listens: the letter's two attempts fail
    page.goto(f"{guestbook.keyed_url}/jobs/")
    page.evaluate("window.loadedOnce = true")  # gone if the page reloads
    mail_row = page.locator("tr", has=page.locator('td[data-label="Queue"]', has_text="mail"))
    expect(mail_row.locator('td[data-label="Failed"]')).to_have_text("1", timeout=REFRESH)
    assert page.evaluate("window.loadedOnce"), "the table changed in place, without a reload"

    wait_until(lambda: shelved_reasons(database_url), WAIT, "the letter to reach the failed shelf")
    (reason,) = shelved_reasons(database_url)
    mail_row.locator('td[data-label="Failed"] a').click()
    expect(page.get_by_role("heading", name="Failed jobs on mail")).to_be_visible()
    expect(page.locator('td[data-label="Reason"]')).to_contain_text(reason.splitlines()[0][:60])

    inbox.start()
    page.get_by_role("checkbox").check()
    page.get_by_role("button", name="Retry selected").click()
    expect(page.get_by_role("status")).to_contain_text("1 of 1 back in the queue")
    inbox.wait_for(to=ADA, subject=CONFIRMATION)


def worker_heard_paused(page, guestbook) -> bool:
    """Whether the dashboard's metrics say the worker beside the server has heard that the mail queue is paused."""
    metrics = page.request.get(f"{guestbook.keyed_url}/jobs/metrics").text()
    return f'jobs_worker_queue_paused{{queue="{mail.QUEUE}"}} 1' in metrics.splitlines()


def test_a_letter_waits_while_the_mail_queue_is_paused_from_the_dashboard_and_arrives_on_resume(
    page, guest, guestbook, inbox
):
    inbox.start()  # the mail server is up: only the pause holds the letter back
    page.goto(f"{guestbook.keyed_url}/jobs/")
    page.get_by_label("Queue to pause").fill(mail.QUEUE)
    page.get_by_role("button", name="Pause queue").click()
    expect(page.get_by_role("status")).to_contain_text(f"Queue {mail.QUEUE} paused")
    # The worker looks at the paused queues once per POLL_INTERVAL: sign up once it has looked.
    wait_until(lambda: worker_heard_paused(page, guestbook), WAIT, "the worker to hear the mail queue is paused")

    guest.sign_up(ADA)
    page.goto(f"{guestbook.keyed_url}/jobs/")
    mail_row = page.locator("tr", has=page.locator('td[data-label="Queue"]', has_text=mail.QUEUE))
    expect(mail_row.locator('td[data-label="Due"]')).to_have_text("1")
    expect(mail_row.locator('td[data-label="Paused"]')).to_have_text("yes")
    assert inbox.letters(to=ADA) == [], "the letter waits in the paused queue"

    mail_row.get_by_role("button", name="Resume").click()
    expect(page.get_by_role("status")).to_contain_text(f"Queue {mail.QUEUE} resumed")
    inbox.wait_for(to=ADA, subject=CONFIRMATION)
