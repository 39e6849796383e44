"""What a limit holds back is visible: status, the command line, the dashboard, the metrics and the worker's log."""

import logging
import re

import pytest
from werkzeug.test import Client

import jobs
import jobs.web
from jobs.store import limits
from jobs.store.claims import Hold
from tests.jobs.helpers import database_ms, scalar, wait_for
from tests.jobs.test_cli import cli
from tests.jobs.test_web import OPERATOR, operator


@pytest.fixture
def held(db):
    """Five jobs on "mail", limited to 2 a minute and 3 at once, two of them claimed: the rate is used up."""
    with db.transaction():
        for n in range(5):
            jobs.later(db, "mail", "note", {"n": n})
    jobs.limited(db, "mail", rate=(2, 60.0), concurrency=3)
    for _ in range(2):
        limits.claimed(db, "mail", hold=Hold(lease=60))
    return db


def test_status_says_the_limit_what_is_used_of_it_and_how_many_jobs_it_holds_back(held):
    [mail] = jobs.status(held)
    figures = {key: mail[key] for key in ("limit_rate", "limit_per_ms", "limit_concurrency", "limit_used")}
    assert figures == {"limit_rate": 2, "limit_per_ms": 60_000, "limit_concurrency": 3, "limit_used": 2}
    assert (mail["due"], mail["in_work"], mail["held_back"]) == (3, 2, 3)


def test_a_concurrency_holds_back_what_passes_its_room(db):
    with db.transaction():
        for n in range(4):
            jobs.later(db, "mail", "note", {"n": n})
    jobs.limited(db, "mail", concurrency=3)
    limits.claimed(db, "mail", hold=Hold(lease=60))
    [mail] = jobs.status(db)
    assert (mail["due"], mail["in_work"], mail["held_back"]) == (3, 1, 1)


def test_the_status_command_shows_the_limit_columns_once_a_queue_has_one(held, database_url):
    lines = cli(database_url, "status").stdout.splitlines()
    assert lines[0].split()[-3:] == ["LIMIT", "HELD", "BACK"]
    assert lines[1].endswith("2 a 60 s (2 used), 3 at once (2 in work)          3")


def test_the_queues_page_shows_the_limit_and_what_it_holds_back(held, connect):
    page = Client(jobs.web.app(connect, authorize=operator)).get("/", environ_base=OPERATOR).text
    assert '<td data-label="Limit">2 a 60 s (2 used), 3 at once (2 in work)</td>' in page
    assert '<td class="number" data-label="Held back">3</td>' in page


def test_metrics_give_each_limit_what_is_used_of_it_and_the_jobs_it_holds_back(held, connect):
    lines = Client(jobs.web.app(connect, authorize=operator)).get("/metrics", environ_base=OPERATOR).text.splitlines()
    assert {
        'jobs_limit{queue="mail",kind="rate"} 2',
        'jobs_limit{queue="mail",kind="concurrency"} 3',
        'jobs_limit_used{queue="mail",kind="rate"} 2',
        'jobs_limit_used{queue="mail",kind="concurrency"} 2',
        'jobs_limit_window_seconds{queue="mail"} 60',
        'jobs_limit_held_back{queue="mail"} 3',
    } <= set(lines)
    assert all(line.startswith("#") or re.fullmatch(r"[a-z_]+\{[^}]*\} [0-9.]+", line) for line in lines)


def test_a_changed_limit_holds_from_the_next_claim_without_a_restart_and_is_logged(db, connect, caplog):
    caplog.set_level(logging.INFO, logger="jobs")
    with db.transaction():
        for n in range(6):
            jobs.later(db, "mail", "note", {"n": n})
    jobs.limited(db, "mail", rate=(1, 3600.0))
    worker = jobs.worker(connect, "mail", {"note": lambda db, args: None}, threads=2)
    try:
        wait_for(lambda: scalar(db, "SELECT count(*) FROM jobs") == 5, "the one job of the hour")
        wait_for(lambda: "queue mail: limited to 1 a 3600 s from now" in caplog.text, "the worker to log the limit")
        assert scalar(db, "SELECT count(*) FROM jobs WHERE attempts > 0") == 0
        started = database_ms(db)
        jobs.limited(db, "mail", rate=(100, 1.0))
        wait_for(lambda: scalar(db, "SELECT count(*) FROM jobs") == 0, "the rest, at the new rate")
        changed = "queue mail: limited to 100 a 1 s from now, for this worker's claims (was 1 a 3600 s)"
        wait_for(lambda: changed in caplog.text, "the change in the log")
    finally:
        worker.stop()
        assert worker.join(10)
    assert database_ms(db) - started < 3 * jobs.POLL_INTERVAL * 1000


def test_a_drain_waits_for_the_jobs_a_full_window_holds_back(db, connect):
    with db.transaction():
        for n in range(4):
            jobs.later(db, "mail", "note", {"n": n})
    jobs.limited(db, "mail", rate=(2, 1.0))
    worker = jobs.worker(connect, "mail", {"note": lambda db, args: None}, threads=2)
    worker.stop(drain=True)
    assert worker.join(10)
    assert jobs.listed(db) == []


def test_the_limit_command_sets_a_limit_that_the_next_claim_keeps_and_unlimit_lifts_it(db, database_url):
    with db.transaction():
        for n in range(3):
            jobs.later(db, "mail", "note", {"n": n})
    done = cli(database_url, "limit", "mail", "--rate", "1/3600", "--per-key", "2")
    assert (done.returncode, done.stdout) == (
        0,
        "queue mail limited to 1 a 3600 s, 2 a key, from the next claim of every worker\n",
    )
    assert db.execute("SELECT rate, per_ms, concurrency, per_key FROM job_limits").fetchall() == [
        (1, 3_600_000, None, 2)
    ]
    assert [len(limits.claimed(db, "mail", hold=Hold(lease=60)).jobs) for _ in range(2)] == [1, 0]
    lifted = cli(database_url, "unlimit", "mail")
    assert (lifted.returncode, lifted.stdout) == (
        0,
        "queue mail is no longer limited, from the next claim of every worker\n",
    )
    assert len(limits.claimed(db, "mail", hold=Hold(lease=60)).jobs) == 1
    again = cli(database_url, "unlimit", "mail")
    assert (again.returncode, again.stdout) == (1, "queue mail had no limit\n")


@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        ([], "give --rate, --concurrency or --per-key"),
        (["--rate", "14"], "a rate is JOBS/SECONDS, such as 14/1, not '14'"),
        (["--rate", "0/1"], "a rate is (jobs, seconds)"),
        (["--concurrency", "0"], "a concurrency is 1 to"),
        (["--per-key", "-2"], "a limit per key is 1 to"),
        (["--concurrency", "9" * 400], f"a concurrency is 1 to {limits.CONCURRENCY_MAX} jobs at once"),
        (["--per-key", "9" * 400], f"a limit per key is 1 to {limits.PER_KEY_MAX}"),
        (["--rate", "9" * 400 + "/1"], f"with 1 to {limits.RATE_MAX} jobs"),
        (["--rate", "1/" + "9" * 400], f"{limits.WINDOW_MAX} s at the most"),
    ],
)
def test_a_limit_command_that_makes_no_sense_exits_2_and_changes_nothing(db, database_url, arguments, said):
    refused = cli(database_url, "limit", "mail", *arguments)
    assert refused.returncode == 2
    assert said in refused.stderr
    assert scalar(db, "SELECT count(*) FROM job_limits") == 0
