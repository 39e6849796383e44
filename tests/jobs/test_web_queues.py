"""The queues page lists every queue that matters: one that holds jobs, one a live worker serves though it holds
none, one a schedule queues to; says who serves each; and says in words when due jobs have no live worker."""

import re

import pytest
from werkzeug.test import Client

import jobs
import jobs.web
from tests.jobs.test_web import NIGHTLY, T, get, operator

LEASE = 30_000  # ms: the lease of the workers the tests record


@pytest.fixture
def client(connect):
    """A browser of the dashboard, mounted at the root, whose requests get in when they carry OPERATOR."""
    return Client(jobs.web.app(connect, authorize=operator))


def recorded_worker(db, id, queues, threads, *, beat_ago=0, ended=False):
    """A row of job_workers, as a worker writes it when it starts, beaten `beat_ago` ms ago."""
    now = jobs.now_ms()
    db.execute(
        "INSERT INTO job_workers (id, host, pid, queues, threads, lease, version, started_at, beat_at, ended_at, "
        "ending) VALUES (%s, 'box', 42, %s, %s, %s, 14, %s, %s, %s, %s)",
        (
            id,
            queues,
            threads,
            LEASE,
            now - 60_000,
            now - beat_ago,
            now if ended else None,
            "stopped" if ended else None,
        ),
    )


def rows(page: str) -> dict[str, dict[str, str]]:
    """The queues table's cells in words, by queue and column."""
    found = {}
    for name, cells in re.findall(r'<tr><td data-label="Queue">([^<]+)</td>(.*?)</tr>', page):
        found[name] = {
            label: re.sub(r"<[^>]+>", "", text) for label, text in re.findall(r'data-label="([^"]+)">(.*?)</td>', cells)
        }
    return found


def test_a_queue_a_live_worker_serves_shows_with_no_job_and_says_how_many_workers_and_threads(client, db):
    recorded_worker(db, 1, ["mail"], 4)
    recorded_worker(db, 2, ["mail", "reports"], 2)
    page = get(client, "/").text
    assert "No queue yet" not in page
    table = rows(page)
    assert table["mail"]["Served by"] == "2 workers, 6 threads"
    assert table["reports"]["Served by"] == "1 worker, 2 threads"
    assert [table["mail"][state] for state in ("Due", "Scheduled", "In work", "Failed")] == ["0", "0", "0", "0"]


def test_a_silent_or_stopped_worker_serves_no_queue(client, db):
    recorded_worker(db, 1, ["mail"], 4, beat_ago=LEASE)
    recorded_worker(db, 2, ["mail"], 4, ended=True)
    jobs.later(db, "mail", "note", {}, T)
    assert rows(get(client, "/").text)["mail"]["Served by"] == "no live worker"


def test_a_queue_with_due_jobs_and_no_live_worker_is_said_in_words(client, db):
    jobs.later(db, "mail", "note", {}, T)
    jobs.later(db, "mail", "note", {}, T)
    recorded_worker(db, 1, ["reports"], 2)
    fragment = get(client, "/queues.fragment").text
    alert = re.search(r'<div class="note error" role="alert">(.*?)</div>', fragment)
    assert alert, fragment
    assert alert.group(1).startswith("No live worker serves mail: 2 jobs due, the oldest for ")
    assert "reports" not in alert.group(1)
    recorded_worker(db, 2, ["mail"], 1)
    assert 'role="alert"' not in get(client, "/queues.fragment").text


def test_a_queue_a_schedule_of_the_code_queues_to_shows_before_it_has_a_job(connect, db):
    held = Client(jobs.web.app(connect, authorize=operator, schedules=[NIGHTLY]))
    table = rows(get(held, "/").text)
    assert list(table) == ["mail"]
    assert (table["mail"]["Served by"], table["mail"]["Due"]) == ("no live worker", "0")
    assert 'role="alert"' not in get(held, "/").text, "nothing is due: nothing waits for a worker"


def test_with_no_queue_at_all_the_page_says_so(client, db):
    assert "No queue yet: no job, no live worker, no schedule, and no queue is paused." in get(client, "/").text
