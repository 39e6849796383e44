"""The queue's dashboard at /jobs as an operator reads it: every queue that matters, the one failed view, a pulse
where no series hides and nought is grey, actions that come back where they were with a line saying what they did,
a job's attempts with their moments, and workers named in words. A screenshot of each page is kept.

The screenshots go to the spec's folder under test-results/, for a person to look at.
"""

import re

import psycopg
from playwright.sync_api import expect

import jobs
import jobs.store.pulse
import mail

from .guest import CONFIRMATION
from .local import wait_until

ADA = "ada@example.com"
REPORTS = "reports"  # a queue no worker of the guestbook serves
FLUSHED = 3 * jobs.store.pulse.PULSE_EVERY  # seconds a spec waits for the worker's counts to reach job_pulse
PRINTER = "the printer is out of paper"


@jobs.policy(attempts=1)
def report(db, args):
    """A performer that fails for good on its first attempt."""
    raise RuntimeError(PRINTER)


def shelved_report(database_url: str) -> int:
    """A report that failed for good, and another due on the same queue, which no live worker serves."""
    with psycopg.connect(database_url, autocommit=True) as db:
        failed = jobs.later(db, REPORTS, "report", {})
        outcome = jobs.worked(db, REPORTS, {"report": report})
        assert outcome and outcome.startswith("failed report"), outcome
        jobs.later(db, REPORTS, "report", {})
    assert failed is not None
    return failed


def drawn(page, url: str) -> bool:
    """Whether the queues page, loaded afresh, draws the mail queue's pulse."""
    page.goto(url)
    return page.get_by_role("heading", name=mail.QUEUE, exact=True).count() == 1


def test_the_dashboard_shows_every_queue_one_failed_view_and_comes_back_where_the_operator_was(
    page, guest, guestbook, inbox, database_url, output_path
):
    guest.sign_up(ADA)
    inbox.wait_for(to=ADA, subject=CONFIRMATION)
    failed = shelved_report(database_url)
    dashboard = f"{guestbook.keyed_url}/jobs"
    wait_until(lambda: drawn(page, f"{dashboard}/"), FLUSHED, "the worker's counts to reach the queues page")

    # Every queue: mail, served by the worker beside the server with nothing queued; reports, due and unserved.
    mail_row = page.locator("tr", has=page.locator('td[data-label="Queue"]', has_text=mail.QUEUE))
    expect(mail_row.locator('td[data-label="Served by"]')).to_have_text(re.compile(r"^1 worker, \d+ threads?$"))
    expect(mail_row.locator('td[data-label="Due"]')).to_have_text("0")
    reports_row = page.locator("tr", has=page.locator('td[data-label="Queue"]', has_text=REPORTS))
    expect(reports_row.locator('td[data-label="Served by"]')).to_have_text("no live worker")
    expect(page.get_by_role("alert")).to_contain_text(f"No live worker serves {REPORTS}: 1 job due, the oldest for")

    # The pulse: each series in its own strip, nought in grey, each moment's values on hover.
    hour = page.locator("section.pulse figure", has_text="Last hour, per minute").first
    expect(hour.locator("polyline.queued, circle.queued")).not_to_have_count(0)
    expect(hour.locator("polyline.failed, circle.failed")).to_have_count(0)
    expect(hour.locator("text.label", has_text="failed 0")).to_have_count(1)
    last = hour.locator("rect.hover").last
    last.hover()
    assert re.fullmatch(
        r"\d\d:\d\d UTC, 1 min: .* queued, .* finished, 0 retried, 0 failed; .*",
        last.locator("title").text_content() or "",
    )
    page.screenshot(path=output_path + "/queues.png", full_page=True)

    # Pause from the queues page: back on the queues page, saying so.
    page.get_by_label("Queue to pause").fill(REPORTS)
    page.get_by_role("button", name="Pause queue").click()
    expect(page).to_have_url(re.compile(r"/jobs/\?said="))
    expect(page.get_by_role("status")).to_have_text(
        f"Queue {REPORTS} paused: workers claim none of its jobs until it is resumed."
    )
    expect(reports_row.locator('td[data-label="Paused"]')).to_have_text("yes")
    page.screenshot(path=output_path + "/paused.png", full_page=True)

    # One failed view: the header's Failed and the Jobs list's Failed tab lead to the same page.
    page.get_by_role("link", name="Jobs", exact=True).click()
    page.get_by_role("navigation", name="States").get_by_role("link", name="Failed").click()
    tab_url = page.url
    page.locator("header").get_by_role("link", name="Failed").click()
    assert page.url == tab_url == f"{dashboard}/failed", "one view, one address"
    expect(page.get_by_role("heading", name="Failed jobs")).to_be_visible()
    row = page.locator("tr", has=page.get_by_role("link", name=str(failed), exact=True))
    expect(row.locator('td[data-label="Reason"]')).to_contain_text(PRINTER)

    # A job's attempts, each with what the table keeps of its moment.
    row.get_by_role("link", name=str(failed), exact=True).click()
    expect(page.get_by_role("heading", name="Failed attempts")).to_be_visible()
    expect(page.locator("main ol li").first).to_contain_text(re.compile(r"\(ran \d+ ms, failed for good at \d{4}-"))
    expect(page.get_by_text("the table keeps no moment of its own for each")).to_be_visible()
    page.screenshot(path=output_path + "/job.png", full_page=True)
    page.go_back()

    # Retry from it: back on the failed view, saying what it did.
    row.get_by_role("checkbox").check()
    page.screenshot(path=output_path + "/failed.png", full_page=True)
    page.get_by_role("button", name="Retry selected").click()
    expect(page).to_have_url(re.compile(r"/jobs/failed\?said="))
    expect(page.get_by_role("status")).to_contain_text("1 of 1 back in the queue, due now.")
    expect(page.get_by_role("status")).to_contain_text(f"Queue {REPORTS} is paused")
    page.screenshot(path=output_path + "/retried.png", full_page=True)

    # The workers page: the schema step in words, the id's last digits with the whole id on hover.
    page.get_by_role("link", name="Workers").click()
    worker = page.locator('td[data-label="Worker"] span').first
    assert re.fullmatch(r"\d+", worker.get_attribute("title") or ""), "the whole id on hover"
    expect(worker).to_have_text(re.compile(r"^(…\d{6}|\d{1,6})$"))
    expect(page.locator('td[data-label="Schema step"]').first).to_have_text(re.compile(r"^\d+, as this code$"))
    page.screenshot(path=output_path + "/workers.png", full_page=True)
