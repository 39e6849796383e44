"""The guestbook's upkeep: jobs that run on a schedule, on the queue of its letters.

The worker beside the server works the mail queue with `performers_for(app)`, the letters'
(mail's, with the writers of letters.py in the app's context) and the upkeep's; the Procfile's
worker with `performers`, the same for an app made from the environment. Each holds `schedules`: every process
holds them, and each tick still runs once ("Work on a schedule" in jobs/README.md). Each
job keeps a table from growing without end: accounts never confirmed (and the claims
on names that ended), sessions that have ended, letters that failed long ago, and finished batches.
"""

import logging

import guestbook
import jobs
import mail

from . import accounts, letters, names, sessions

QUEUE = mail.QUEUE  # the queue the worker beside the server works
BATCHES_KEPT = 7 * 24 * 3600  # seconds a finished batch of jobs is kept before it is pruned: a week
FAILED_LETTERS_KEPT = 30 * 24 * 3600  # seconds a letter stays on the failed shelf before it is pruned: 30 days
LETTERS = ("deliver", "write")  # the jobs that are letters: mail.delivered_later's and mail.written_later's

log = logging.getLogger("guestbook")


def prune_unconfirmed(db, args) -> None:
    """Deletes the accounts whose last confirmation link expired unused, but for those with a live reset link, and
    the claims on names that sign-ups wrote and that have ended (names.CLAIM_MAX_AGE)."""
    reset_max_age = guestbook.settings_from_environment()["RESET_TOKEN_MAX_AGE"]  # as the app reads it
    log.info("pruned %d account(s) never confirmed", accounts.unconfirmed_pruned(db, reset_max_age))
    log.info("pruned %d ended claim(s) on names", names.claims_pruned(db))


def prune_sessions(db, args) -> None:
    """Deletes the sessions that have ended by themselves."""
    log.info("pruned %d ended session(s)", sessions.pruned(db))


def prune_failed_letters(db, args) -> None:
    """Deletes the letters that failed for good more than FAILED_LETTERS_KEPT ago, a page of the shelf at a time."""
    cutoff = jobs.now_ms() - FAILED_LETTERS_KEPT * 1000
    pruned, after = 0, None
    while page := jobs.failed(db, QUEUE, after=after):
        old = [job["id"] for job in page if job["name"] in LETTERS and job["failed_at"] < cutoff]
        pruned += jobs.discarded(db, *old) if old else 0
        after = page[-1]["id"]
    log.info("pruned %d letter(s) failed more than %d days ago", pruned, FAILED_LETTERS_KEPT // (24 * 3600))


def prune_batches(db, args) -> None:
    """Deletes the batches of jobs that finished more than BATCHES_KEPT ago."""
    log.info("pruned %d finished batch(es)", jobs.pruned(db, older_than=BATCHES_KEPT))


UPKEEP = {  # the upkeep's own performers
    "prune_unconfirmed": prune_unconfirmed,
    "prune_sessions": prune_sessions,
    "prune_failed_letters": prune_failed_letters,
    "prune_batches": prune_batches,
}


def performers_for(app) -> dict:
    """The letters' performers (those written when they leave, in `app`'s context) and the upkeep's, on the retry
    schedule MAIL_RETRY_INTERVALS gives (a ValueError names it when it is bad)."""
    return mail.performers_from_environment(letters.writers(app)) | UPKEEP


def __getattr__(name: str):
    """`performers`, made when asked for (as `jobs work --performers guestbook.upkeep:performers` does) with an app
    made from the environment, which holds the SECRET_KEY the letters' links are signed with."""
    if name == "performers":
        return performers_for(guestbook.create_app())
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


schedules = [
    jobs.every("prune-unconfirmed", cron="17 3 * * *", queue=QUEUE, name="prune_unconfirmed"),
    jobs.every("prune-sessions", cron="27 3 * * *", queue=QUEUE, name="prune_sessions"),
    jobs.every("prune-failed-letters", cron="37 3 * * *", queue=QUEUE, name="prune_failed_letters"),
    jobs.every("prune-batches", cron="47 3 * * *", queue=QUEUE, name="prune_batches"),
]
