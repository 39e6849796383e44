"""On a phone's screen (390 px wide) the dashboard's lists of jobs, a job's page, a batch's page and a bulk
action's preview fit the screen and keep to their Content-Security-Policy; a screenshot of each is kept.

The screenshots go to the spec's folder under test-results/, for a person to look at.
"""

import psycopg

import jobs

from .test_job_lists import QUEUE, queued
from .test_phone_screen import PHONE, fits_the_screen

LONG_NAME = "a-job-name-" * 8  # one word, longer than a phone's screen is wide


def test_the_dashboard_s_lists_fit_a_phone_screen(page, guestbook, database_url, output_path):
    ids = queued(database_url)
    with psycopg.connect(database_url, autocommit=True) as db:
        batch = jobs.batch(db, QUEUE, [(LONG_NAME, {}), ("note", {})])
    violations = []
    page.on("console", lambda message: "Content Security Policy" in message.text and violations.append(message.text))
    page.set_viewport_size(PHONE)
    dashboard = f"{guestbook.keyed_url}/jobs"
    pages = {
        "due": f"{dashboard}/jobs?queue={QUEUE}",
        "scheduled, filtered": f"{dashboard}/jobs?state=scheduled&queue={QUEUE}&name=note",
        "job": f"{dashboard}/job/{ids['later']}",
        "batch": f"{dashboard}/batch/{batch}",
        "bulk preview": f"{dashboard}/bulk?action=cancel&state=due&queue={QUEUE}",
    }
    for name, address in pages.items():
        page.goto(address)
        page.wait_for_load_state()
        fits_the_screen(page)
        page.screenshot(path=output_path + f"/{name}.png", full_page=True)
    assert violations == []
