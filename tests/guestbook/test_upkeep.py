"""The guestbook's upkeep on a schedule: accounts whose confirmation link expired unused, and finished batches, pruned."""

import pytest

import jobs
from guestbook import tokens, upkeep
from jobs import schedules
from tests.jobs.helpers import PROJECT, start_worker, stopped, wait_for

from .conftest import PASSWORD

DAY = 24 * 3600  # seconds


@pytest.fixture
def fresh_schedules(db):
    db.execute("TRUNCATE job_schedules")
    return db


def signed_up_ago(db, visitor, email, seconds):
    """An account signed up with its confirmation letter sent `seconds` ago."""
    visitor.signup(email)
    db.execute("UPDATE accounts SET created_at = now() - make_interval(secs => %s), "
               "confirmation_sent_at = now() - make_interval(secs => %s) WHERE email = %s", (seconds, seconds, email))


def emails(db):
    return sorted(row[0] for row in db.execute("SELECT email FROM accounts"))


def worked_upkeep(db) -> list[str]:
    """Works the queue the upkeep shares with the mail, as the worker beside the server would."""
    said = []
    while (line := jobs.worked(db, upkeep.QUEUE, upkeep.performers)) is not None:
        said.append(line)
    return said


def test_the_daily_schedules_queue_both_upkeep_jobs_once_after_downtime(app, db, fresh_schedules):
    assert schedules.fired(db, upkeep.schedules) == 0  # first seen: nothing from before
    db.execute("UPDATE job_schedules SET created_at = now() - interval '2 days'")
    assert schedules.fired(db, upkeep.schedules) == 2
    assert schedules.fired(db, upkeep.schedules) == 0
    assert sorted(job["name"] for job in jobs.listed(db, upkeep.QUEUE)) == ["prune_batches", "prune_unconfirmed"]
    assert sorted(worked_upkeep(db)) == ["ran prune_batches", "ran prune_unconfirmed"]


def test_accounts_whose_confirmation_link_expired_unused_are_deleted(app, db, visitor, post):
    visitor.confirmed_account("confirmed@example.com")
    db.execute("UPDATE accounts SET created_at = now() - interval '30 days', "
               "confirmation_sent_at = now() - interval '30 days' WHERE email = 'confirmed@example.com'")
    signed_up_ago(db, visitor, "expired@example.com", tokens.CONFIRM_MAX_AGE + 60)
    signed_up_ago(db, visitor, "fresh@example.com", tokens.CONFIRM_MAX_AGE - 60)
    post.delivered()
    jobs.later(db, upkeep.QUEUE, "prune_unconfirmed", {})
    assert worked_upkeep(db) == ["ran prune_unconfirmed"]
    assert emails(db) == ["confirmed@example.com", "fresh@example.com"]


def test_a_confirmation_letter_sent_again_keeps_the_account_as_long_as_its_link(app, db, visitor, post):
    signed_up_ago(db, visitor, "late@example.com", tokens.CONFIRM_MAX_AGE + 60)  # its first link has expired
    post.delivered()
    assert visitor.signin("late@example.com").status_code == 403  # unconfirmed: offers a new letter
    assert visitor.submit("/confirmations").status_code == 302
    path = post.only_link_to("late@example.com")
    jobs.later(db, upkeep.QUEUE, "prune_unconfirmed", {})
    assert worked_upkeep(db) == ["ran prune_unconfirmed"]
    assert emails(db) == ["late@example.com"]
    assert visitor.submit(path, password=PASSWORD).status_code == 302  # the new link still confirms it


def test_batches_finished_more_than_a_week_ago_are_pruned(db):
    old, recent, running = (jobs.batch(db, "imports", []), jobs.batch(db, "imports", []),
                            jobs.batch(db, "imports", [("row", {})]))
    db.execute("UPDATE job_batches SET finished_at = finished_at - %s WHERE id = %s", ((upkeep.BATCHES_KEPT + 60) * 1000, old))
    jobs.later(db, upkeep.QUEUE, "prune_batches", {})
    assert worked_upkeep(db) == ["ran prune_batches"]
    assert jobs.batch_status(db, old) is None
    assert jobs.batch_status(db, recent)["finished"] and jobs.batch_status(db, running)["pending"] == 1


def test_the_procfiles_worker_holds_the_upkeep_schedules(app, db, fresh_schedules, database_url):
    worker_line = (PROJECT / "Procfile").read_text().split("worker: python -m jobs work mail ")[1].split()
    worker = start_worker(database_url, "mail", *worker_line)  # its --performers comes last, and wins
    try:
        keys = lambda: [row[0] for row in db.execute("SELECT key FROM job_schedules ORDER BY key")]  # noqa: E731
        wait_for(lambda: keys() == ["prune-batches", "prune-unconfirmed"], "the worker to record its schedules")
    finally:
        output = stopped(worker)
    assert worker.returncode == 0, output
