"""The dashboard's lists of jobs at /jobs/jobs: a count of the queues page opens the list of its jobs, a filter
narrows it and stays in the address, and another state's tab keeps the filter.

The jobs wait on a queue of their own, which the worker beside the server does not work.
"""

import psycopg
from playwright.sync_api import expect

import jobs

QUEUE = "reports"  # no worker of the guestbook works it: its jobs stay as queued
HOUR = 3_600_000  # ms


def queued(database_url: str) -> dict[str, int | None]:
    """Two notes and a letter due on QUEUE, and a note for an hour from now."""
    with psycopg.connect(database_url, autocommit=True) as db:
        return {
            "note": jobs.later(db, QUEUE, "note", {"day": "monday"}),
            "other note": jobs.later(db, QUEUE, "note", {"day": "tuesday"}),
            "letter": jobs.later(db, QUEUE, "deliver", {"to": "ada@example.com"}),
            "later": jobs.later(db, QUEUE, "note", {"day": "friday"}, jobs.now_ms() + HOUR),
        }


def shown_ids(page) -> list[str]:
    """The ids of the jobs the list shows, in its order."""
    return page.locator('td[data-label="Job"]').all_inner_texts()


def test_a_count_opens_its_list_and_the_filters_stay_in_the_address(page, guestbook, database_url):
    ids = queued(database_url)
    page.goto(f"{guestbook.keyed_url}/jobs/")
    row = page.locator("tr", has=page.locator('td[data-label="Queue"]', has_text=QUEUE))
    expect(row.locator('td[data-label="Due"]')).to_have_text("3")
    row.locator('td[data-label="Due"] a').click()
    expect(page.get_by_role("heading", name=f"Due jobs on {QUEUE}")).to_be_visible()
    assert shown_ids(page) == [str(ids["note"]), str(ids["other note"]), str(ids["letter"])]

    page.get_by_label("Name").fill("note")
    page.get_by_role("button", name="Filter").click()
    expect(page.locator('td[data-label="Job"]')).to_have_count(2)
    assert "name=note" in page.url and f"queue={QUEUE}" in page.url
    page.reload()  # the address alone brings the same view back, as a shared link does
    assert shown_ids(page) == [str(ids["note"]), str(ids["other note"])]

    page.get_by_role("link", name="Scheduled").click()
    expect(page.get_by_role("heading", name=f"Scheduled jobs on {QUEUE}")).to_be_visible()
    assert shown_ids(page) == [str(ids["later"])]
    expect(page.get_by_label("Name")).to_have_value("note")


def test_a_search_by_an_argument_s_value_or_an_id_finds_the_job(page, guestbook, database_url):
    ids = queued(database_url)
    page.goto(f"{guestbook.keyed_url}/jobs/jobs")
    page.get_by_label("Job id or argument's value").fill("ada@example.com")
    page.get_by_role("button", name="Filter").click()
    expect(page.locator('td[data-label="Job"]')).to_have_text([str(ids["letter"])])

    page.get_by_label("Job id or argument's value").fill(str(ids["later"]))
    page.get_by_role("button", name="Filter").click()
    page.get_by_role("link", name=f"Job {ids['later']}", exact=True).click()
    expect(page.get_by_role("heading", name=f"Job {ids['later']}: note")).to_be_visible()


def test_run_now_makes_a_job_for_later_due(page, guestbook, database_url):
    ids = queued(database_url)
    page.goto(f"{guestbook.keyed_url}/jobs/jobs?state=scheduled&queue={QUEUE}")
    page.get_by_role("link", name=str(ids["later"]), exact=True).click()
    page.get_by_role("button", name="Run now").click()
    expect(page.get_by_role("status")).to_contain_text(f"Job {ids['later']} is due now")
    page.goto(f"{guestbook.keyed_url}/jobs/jobs?state=due&queue={QUEUE}")
    expect(page.locator('td[data-label="Job"]')).to_have_count(4)
    expect(page.locator('td[data-label="Job"]').last).to_have_text(str(ids["later"]))
