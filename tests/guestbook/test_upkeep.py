"""The guestbook's upkeep on a schedule: accounts whose confirmation link expired unused, and finished batches,
pruned."""

import pytest

import jobs
from guestbook import names, processes, sessions, tokens, upkeep
from jobs.store import schedules
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
    db.execute(
        "UPDATE accounts SET created_at = now() - make_interval(secs => %s), "
        "confirmation_sent_at = now() - make_interval(secs => %s) WHERE email = %s",
        (seconds, seconds, email),
    )


def emails(db):
    return sorted(row[0] for row in db.execute("SELECT email FROM accounts"))


def worked_upkeep(db, app) -> list[str]:
    """Works the queue the upkeep shares with the mail, as the worker beside the server would."""
    said = []
    while (line := jobs.worked(db, upkeep.QUEUE, upkeep.performers_for(app))) is not None:
        said.append(line)
    return said


def test_the_daily_schedules_queue_every_upkeep_job_once_after_downtime(app, db, fresh_schedules):
    assert schedules.fired(db, upkeep.schedules) == 0  # first seen: nothing from before
    db.execute("UPDATE job_schedules SET created_at = now() - interval '2 days'")
    assert schedules.fired(db, upkeep.schedules) == len(upkeep.UPKEEP) == 4
    assert schedules.fired(db, upkeep.schedules) == 0
    assert sorted(job["name"] for job in jobs.listed(db, upkeep.QUEUE)) == sorted(upkeep.UPKEEP)
    assert sorted(worked_upkeep(db, app)) == sorted(f"ran {name}" for name in upkeep.UPKEEP)


def test_accounts_whose_confirmation_link_expired_unused_are_deleted(app, db, visitor, post):
    visitor.confirmed_account("confirmed@example.com")
    db.execute(
        "UPDATE accounts SET created_at = now() - interval '30 days', "
        "confirmation_sent_at = now() - interval '30 days' WHERE email = 'confirmed@example.com'"
    )
    signed_up_ago(db, visitor, "expired@example.com", tokens.CONFIRM_MAX_AGE + 60)
    signed_up_ago(db, visitor, "fresh@example.com", tokens.CONFIRM_MAX_AGE - 60)
    post.delivered()
    jobs.later(db, upkeep.QUEUE, "prune_unconfirmed", {})
    assert worked_upkeep(db, app) == ["ran prune_unconfirmed"]
    assert emails(db) == ["confirmed@example.com", "fresh@example.com"]


def test_claims_on_names_that_have_ended_are_pruned_and_live_ones_kept(app, db, visitor, post):
    for email, name in (("old@example.com", "Old"), ("new@example.com", "New")):
        visitor.submit("/signup", email=email, password=PASSWORD, name=name)
    db.execute(
        "UPDATE name_claims SET held_until = held_until - make_interval(secs => %s) WHERE display_name = 'Old'",
        [names.CLAIM_MAX_AGE],
    )
    post.delivered()
    jobs.later(db, upkeep.QUEUE, "prune_unconfirmed", {})
    assert worked_upkeep(db, app) == ["ran prune_unconfirmed"]
    assert [row[0] for row in db.execute("SELECT display_name FROM name_claims")] == ["New"]


def test_a_confirmation_letter_sent_again_keeps_the_account_as_long_as_its_link(app, db, visitor, post):
    signed_up_ago(db, visitor, "late@example.com", tokens.CONFIRM_MAX_AGE + 60)  # its first link has expired
    post.delivered()
    assert visitor.signin("late@example.com").status_code == 401  # unconfirmed: a new letter goes, unsaid
    path = post.only_link_to("late@example.com")
    jobs.later(db, upkeep.QUEUE, "prune_unconfirmed", {})
    assert worked_upkeep(db, app) == ["ran prune_unconfirmed"]
    assert emails(db) == ["late@example.com"]
    assert visitor.submit(path, password=PASSWORD).status_code == 302  # the new link still confirms it


def test_batches_finished_more_than_a_week_ago_are_pruned(app, db):
    old, recent, running = (
        jobs.batch(db, "imports", []),
        jobs.batch(db, "imports", []),
        jobs.batch(db, "imports", [("row", {})]),
    )
    db.execute(
        "UPDATE job_batches SET finished_at = finished_at - %s WHERE id = %s", ((upkeep.BATCHES_KEPT + 60) * 1000, old)
    )
    jobs.later(db, upkeep.QUEUE, "prune_batches", {})
    assert worked_upkeep(db, app) == ["ran prune_batches"]
    assert jobs.batch_status(db, old) is None
    assert jobs.batch_status(db, recent)["finished"] and jobs.batch_status(db, running)["pending"] == 1


def test_the_procfiles_worker_holds_the_upkeep_schedules(app, db, fresh_schedules, database_url):
    assert "\nworker: guestbook work\n" in (PROJECT / "Procfile").read_text()
    # `guestbook work`'s; its --performers comes last, and writes the letters whose links it signs: it needs SECRET_KEY.
    worker = start_worker(database_url, *processes.WORK[1:], env={"SECRET_KEY": "a secret for tests only"})
    try:

        def keys():
            return [row[0] for row in db.execute("SELECT key FROM job_schedules ORDER BY key")]

        wait_for(
            lambda: keys() == sorted(every.key for every in upkeep.schedules), "the worker to record its schedules"
        )
    finally:
        output = stopped(worker)
    assert worker.returncode == 0, output


def test_ended_sessions_are_pruned_and_live_ones_kept(app, db, visitor):
    visitor.signed_in("ada@example.com")
    live = db.execute("SELECT id FROM sessions").fetchone()[0]
    db.execute(
        "INSERT INTO sessions (account_id, seen_at) VALUES (1, now() - make_interval(secs => %s))",
        [sessions.SESSION_IDLE + 60],
    )
    db.execute(
        "INSERT INTO sessions (account_id, created_at) VALUES (1, now() - make_interval(secs => %s))",
        [sessions.SESSION_MAX_AGE + 60],
    )
    jobs.later(db, upkeep.QUEUE, "prune_sessions", {})
    assert worked_upkeep(db, app) == ["ran prune_sessions"]
    assert [row[0] for row in db.execute("SELECT id FROM sessions")] == [live]


def failed_letter(db, to: str, failed_ago: float) -> int:
    """A letter on the failed shelf that failed `failed_ago` seconds ago."""
    job = jobs.later(db, upkeep.QUEUE, "deliver", {"to": to})
    assert job is not None  # no unique key, so always queued
    db.execute(
        "UPDATE jobs SET attempts = max_attempts, failure = 'refused', run_at = %s WHERE id = %s",
        [jobs.now_ms() - int(failed_ago * 1000), job],
    )
    return job


def test_failed_letters_older_than_failed_letters_kept_are_pruned(app, db):
    old = failed_letter(db, "old@example.com", upkeep.FAILED_LETTERS_KEPT + 60)
    recent = failed_letter(db, "recent@example.com", upkeep.FAILED_LETTERS_KEPT - 60)
    assert {job["id"] for job in jobs.failed(db, upkeep.QUEUE)} == {old, recent}
    jobs.later(db, upkeep.QUEUE, "prune_failed_letters", {})
    assert worked_upkeep(db, app) == ["ran prune_failed_letters"]
    assert [job["id"] for job in jobs.failed(db, upkeep.QUEUE)] == [recent]


def test_an_unconfirmed_account_is_kept_while_its_reset_link_lives(app, db, visitor, post):
    signed_up_ago(db, visitor, "late@example.com", tokens.CONFIRM_MAX_AGE + 60)  # its confirmation link has expired
    post.delivered()
    visitor.submit("/resets/new", email="late@example.com")
    path = post.only_link_to("late@example.com")
    jobs.later(db, upkeep.QUEUE, "prune_unconfirmed", {})
    assert worked_upkeep(db, app) == ["ran prune_unconfirmed"]
    assert emails(db) == ["late@example.com"]
    assert visitor.client.get(path).status_code == 200  # the reset link still works

    db.execute("UPDATE accounts SET reset_sent_at = now() - make_interval(secs => %s)", [tokens.RESET_MAX_AGE + 60])
    jobs.later(db, upkeep.QUEUE, "prune_unconfirmed", {})
    assert worked_upkeep(db, app) == ["ran prune_unconfirmed"]
    assert emails(db) == []
