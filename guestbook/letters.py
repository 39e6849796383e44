"""The letters whose link dies (confirmation, unlock, reset), written when they leave rather than when asked for.

mailer.py queues each as a `write` job naming only its account (mail.written_later);
the worker on the mail queue runs the writer of its kind (WRITERS) in the app's context
when the letter's turn comes, and the link is made then: however long the letter waited,
its link lives its whole life from the moment it is sent, and the queued row holds no secret.
A writer reads its account without locking it (the reset's claim commits on its own first),
so no request of the account waits while the mail server takes the letter.
"""

from flask import current_app
from psycopg.rows import namedtuple_row

import jobs
import mail

from . import accounts, tokens
from .db import get_db


def confirmation_written(db, args: dict) -> mail.Letter | None:
    """The confirmation letter of args["account"], its link made now; None once the account is confirmed or gone."""
    account = accounts.by_id(db, args["account"])
    if account is None or account.confirmed_at is not None:
        return None
    link = mail.url_for(f"/confirm/{tokens.made('confirm', account)}")
    return from_the_site(
        account.email,
        "Confirm your guestbook account",
        "Welcome to the guestbook. Open this link to confirm your account:\n\n"
        f"{link}\n\n"
        f"The link works for {spoken(tokens.CONFIRM_MAX_AGE)}. If you did not sign up, ignore this letter.\n",
        lifetime=tokens.CONFIRM_MAX_AGE,
    )


def unlock_written(db, args: dict) -> mail.Letter | None:
    """The unlock letter of args["account"], its link made now; None once the lock has ended (its link would not
    work)."""
    account = accounts.by_id(db, args["account"])
    if account is None or not account.locked:
        return None
    link = mail.url_for(f"/unlocks/{tokens.made('unlock', account)}")
    return from_the_site(
        account.email,
        "Your guestbook account is locked",
        f"After {accounts.LOCK_AFTER} wrong passwords in a row, your guestbook account is locked.\n"
        "Open this link to unlock it:\n\n"
        f"{link}\n\n"
        f"Otherwise the lock ends by itself {spoken(accounts.LOCK_DURATION)} after it began.\n",
        lifetime=tokens.UNLOCK_MAX_AGE,
    )


def reset_written(db, args: dict) -> mail.Letter | None:
    """The reset letter of args["account"], its link made now (it works once); None for an address without an
    account, or an account sent one in the last RESET_EVERY (accounts.reset_claimed notes this one).

    The claim is a statement of its own on the app's connection, committed before the
    letter is written: the account's row is locked for that statement only, never while
    the mail server takes the letter, so the account's sign-ins never wait on a relay.
    Committed, the claim outlives an attempt that fails, so the job's later attempts
    send without one (`again`): the letter the first attempt claimed still goes.
    """
    again = jobs.current_job().attempt > 1
    if args["account"] is None or not accounts.reset_claimed(get_db(), args["account"], again=again):
        return None
    account = accounts.by_id(db, args["account"])  # read, not locked: the link fits the password it finds
    lifetime = current_app.config["RESET_TOKEN_MAX_AGE"]
    link = mail.url_for(f"/resets/{tokens.made('reset', account)}/edit")
    return from_the_site(
        account.email,
        "Choose a new guestbook password",
        "Open this link to choose a new password for your guestbook account:\n\n"
        f"{link}\n\n"
        f"The link works once, for {spoken(lifetime)}. If you did not ask for it, ignore this letter.\n",
        lifetime=lifetime,
    )


WRITERS = {"confirmation": confirmation_written, "unlock": unlock_written, "reset": reset_written}


def writers(app) -> dict[str, mail.Writer]:
    """WRITERS as the mail queue's worker runs them: in `app`'s context (its SECRET_KEY and settings), rows by name."""
    return {kind: in_app(app, write) for kind, write in WRITERS.items()}


def in_app(app, write) -> mail.Writer:
    """`write`, run in `app`'s context on a cursor of the job's connection that reads rows as named tuples."""

    def written(db, args: dict) -> mail.Letter | None:
        with app.app_context(), db.cursor(row_factory=namedtuple_row) as rows:
            return write(rows, args)

    return written


def from_the_site(to: str, subject: str, body: str, lifetime: int) -> mail.Letter:
    """A letter from MAIL_FROM whose link lives `lifetime` seconds from now: past them it is never sent."""
    return mail.message(current_app.config["MAIL_FROM"], to, subject, body, lifetime=lifetime)


def spoken(seconds: int) -> str:
    """A duration as a letter says it: "3 days", "1 hour", "5 minutes" or "30 seconds"."""
    for unit, size in (("day", 24 * 3600), ("hour", 3600), ("minute", 60)):
        if seconds >= size and seconds % size == 0:
            count = seconds // size
            return f"{count} {unit}{'s' if count != 1 else ''}"
    return f"{seconds} second{'s' if seconds != 1 else ''}"
