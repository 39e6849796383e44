"""The guestbook's upkeep: jobs that run on a schedule, on the queue of its letters.

The worker beside the server (and the Procfile's worker) works the mail queue with
`performers`, the letters' and the upkeep's, and holds `schedules`: every process
holds them, and each tick still runs once (the README's "Work on a schedule").
"""

import logging

import jobs
import mail

from . import accounts

QUEUE = mail.QUEUE  # the queue the worker beside the server works
BATCHES_KEPT = 7 * 24 * 3600  # seconds a finished batch of jobs is kept before it is pruned: a week

log = logging.getLogger("guestbook")


def prune_unconfirmed(db, args) -> None:
    """Deletes the accounts whose last confirmation link expired unused."""
    log.info("pruned %d account(s) never confirmed", accounts.unconfirmed_pruned(db))


def prune_batches(db, args) -> None:
    """Deletes the batches of jobs that finished more than BATCHES_KEPT ago."""
    log.info("pruned %d finished batch(es)", jobs.pruned(db, older_than=BATCHES_KEPT))


UPKEEP = {"prune_unconfirmed": prune_unconfirmed, "prune_batches": prune_batches}  # the upkeep's own performers


def __getattr__(name: str):
    """`performers`, the letters' and the upkeep's, made when asked for, as mail.performers is."""
    if name == "performers":
        return mail.performers | UPKEEP
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


schedules = [
    jobs.every("prune-unconfirmed", cron="17 3 * * *", queue=QUEUE, name="prune_unconfirmed"),
    jobs.every("prune-batches", cron="47 3 * * *", queue=QUEUE, name="prune_batches"),
]
