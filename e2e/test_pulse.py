"""The queue's pulse on the dashboard at /jobs: once the worker beside the server has added its counts, the
queues page draws the letter it queued and sent, and the wait, for the last hour and the last day.
"""

from playwright.sync_api import expect

import jobs.store.pulse
import mail

from .guest import CONFIRMATION
from .local import wait_until

ADA = "ada@example.com"
FLUSHED = 3 * jobs.store.pulse.PULSE_EVERY  # seconds a spec waits for the worker's counts to reach job_pulse


def drawn(page, url: str) -> bool:
    """Whether the queues page, loaded afresh, draws the mail queue's pulse (the chart is drawn at each load)."""
    page.goto(url)
    return page.get_by_role("heading", name=mail.QUEUE, exact=True).count() == 1


def test_the_queues_page_draws_the_letter_the_worker_sent_in_the_mail_queue_s_pulse(page, guest, guestbook, inbox):
    guest.sign_up(ADA)
    inbox.wait_for(to=ADA, subject=CONFIRMATION)
    url = f"{guestbook.keyed_url}/jobs/"
    wait_until(lambda: drawn(page, url), FLUSHED, "the worker's counts to reach the queues page")

    pulse = page.locator("section.pulse")
    expect(pulse.get_by_role("heading", name="Pulse")).to_be_visible()
    hour = pulse.locator("figure", has_text="Last hour, per minute")
    expect(hour.locator("figcaption")).to_contain_text("1 queued, 1 finished, 0 retried, 0 failed; wait median")
    label = hour.get_by_role("img").get_attribute("aria-label")
    assert label.startswith(f"{mail.QUEUE}, last hour, per minute: 1 queued, 1 finished"), label
    day = pulse.locator("figure", has_text="Last day, per 10 minutes")
    expect(day.locator("figcaption")).to_contain_text("1 queued, 1 finished")
    chart = hour.locator("svg").bounding_box()
    assert chart["width"] > 0 and chart["height"] > 0, "the chart takes the width it is given"
    expect(page.get_by_role("link", name="metrics in Prometheus text format")).to_be_visible()
