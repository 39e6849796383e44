"""The guestbook's letters, as a Rails mailer holds them: what each says, and the signed link it carries.

Each function queues its letter with mail.delivered_later on the connection it is
given, inside the view's transaction, and returns the job's id; the worker beside
the server sends it a moment later. Links start from mail.url_for (BASE_URL).
The reset letter takes one step more (`reset_asked`), so that asking for one costs
the same whether or not the address has an account.

The letters somebody waits for at the screen, the reset and unlock letters, are queued
at AWAITED, ahead of every other letter: a flood of sign-ups, each bounded per client
only, would otherwise queue a backlog that a reset link outlives before its turn
(`backlogged` bounds that backlog as a whole). They go one at a time, after the letter
in hand, and each is bounded by its own account (RESET_EVERY, one per lock).
A mail provider's limit on letters a second is the mail queue's limit (`rate_kept`,
MAIL_RATE), decided in the queue's claim: held back there, a letter is never tried,
refused and retried, and the reset letter still goes first.
"""

from dataclasses import asdict

from flask import current_app

import jobs
import mail

from . import accounts, tokens
from .db import queries

AWAITED = -1  # the priority of the letters a person waits for (reset, unlock): sent before any other
BULK = 0  # the priority of every other letter: jobs' default
LETTERS_WAITING_MAX = 1000  # BULK letters waiting before a sign-up is told to come back, unless the setting
# of that name says otherwise: at half a second a letter, about eight minutes of sending
BACKLOG_RETRY_AFTER = 300  # seconds a sign-up turned away by the backlog is told to wait
MAIL_RATE = 0  # letters a second the mail queue may start, unless the setting of that name says otherwise; 0: any
RESET_SECRET_ARGS = ("letter",)  # the reset job's whole letter, live link and all, as mail.SECRET_ARGS: never shown


def rate_kept(db, rate: int) -> None:
    """Limits the mail queue to `rate` letters a second across every worker (MAIL_RATE), or lifts its limit at 0."""
    if rate:
        jobs.limited(db, mail.QUEUE, rate=(rate, 1.0))
    else:
        jobs.unlimited(db, mail.QUEUE)


def confirmation(db, account) -> int:
    """The letter with the link that confirms a new account."""
    link = mail.url_for(f"/confirm/{tokens.made('confirm', account)}")
    return queued(
        db,
        account.email,
        "Confirm your guestbook account",
        lifetime=tokens.CONFIRM_MAX_AGE,
        body=(
            "Welcome to the guestbook. Open this link to confirm your account:\n\n"
            f"{link}\n\n"
            f"The link works for {spoken(tokens.CONFIRM_MAX_AGE)}. If you did not sign up, ignore this letter.\n"
        ),
    )


def already_registered(db, email: str) -> int:
    """The letter to an address that signed up again: it already has an account."""
    return queued(
        db,
        email,
        "You already have a guestbook account",
        (
            "Someone, probably you, tried to sign up to the guestbook with this address,\n"
            "which already has an account. Sign in here:\n\n"
            f"{mail.url_for('/signin')}\n\n"
            "If you forgot your password, choose a new one here:\n\n"
            f"{mail.url_for('/resets/new')}\n"
        ),
    )


def unlock(db, account) -> int:
    """The letter with the link that unlocks an account locked by wrong passwords."""
    link = mail.url_for(f"/unlocks/{tokens.made('unlock', account)}")
    return queued(
        db,
        account.email,
        "Your guestbook account is locked",
        lifetime=tokens.UNLOCK_MAX_AGE,
        priority=AWAITED,
        body=(
            f"After {accounts.LOCK_AFTER} wrong passwords in a row, your guestbook account is locked.\n"
            "Open this link to unlock it:\n\n"
            f"{link}\n\n"
            f"Otherwise the lock ends by itself {spoken(accounts.LOCK_DURATION)} after it began.\n"
        ),
    )


def reset_asked(db, account) -> int:
    """Queues job `reset_letter` with the letter whose link sets a new password (it works once); returns its id.

    `account` is the address's account, or for an address without one a stand-in
    (accounts.nobody) whose letter is written all the same and never sent: the request
    takes one path for both, writing one job, so its time tells nothing. The job
    (`reset_letter`, below) sends the letter when the account may have one now. Its
    argument `letter` is secret (RESET_SECRET_ARGS), as a letter's body is once queued:
    the link in it sets the password, so no page, command or log line shows it.
    """
    link = mail.url_for(f"/resets/{tokens.made('reset', account)}/edit")
    lifetime = current_app.config["RESET_TOKEN_MAX_AGE"]
    letter = mail.message(
        current_app.config["MAIL_FROM"],
        account.email,
        "Choose a new guestbook password",
        (
            "Open this link to choose a new password for your guestbook account:\n\n"
            f"{link}\n\n"
            f"The link works once, for {spoken(lifetime)}. If you did not ask for it, ignore this letter.\n"
        ),
        lifetime=lifetime,
    )
    reason = mail.refusal(letter)
    if reason:
        raise mail.Refused(reason)
    args = {"account": account.id, "letter": asdict(letter)}
    job = jobs.later(db, mail.QUEUE, "reset_letter", args, secret=RESET_SECRET_ARGS, priority=AWAITED)
    assert job is not None  # jobs.later answers None only for a job with a unique key, and this one has none
    return job


def reset_letter(db, args: dict) -> None:
    """The `reset_letter` job: queues the reset letter when it is an account's and none went in RESET_EVERY."""
    if args["account"] is not None and accounts.reset_claimed(db, args["account"]):
        mail.delivered_later(db, mail.Letter(**args["letter"]), priority=AWAITED)


PERFORMERS = {"reset_letter": reset_letter}  # the jobs of this module, for the worker on the mail queue


def password_changed(db, email: str) -> int:
    """The letter that says the password was just changed."""
    return queued(
        db,
        email,
        "Your guestbook password was changed",
        (
            "The password of your guestbook account was just changed, and every session signed in with the old one "
            "has ended.\nIf that was not you, choose a new one here:\n\n"
            f"{mail.url_for('/resets/new')}\n"
        ),
    )


def backlogged(db) -> bool:
    """Whether the app's LETTERS_WAITING_MAX letters of BULK wait already, so that no sign-up may add one now.

    The count is read outside the sign-up's transaction and without a lock, so
    requests at the same instant may each add their letter past it: the bound is
    exact to within the requests served at once, which is all it needs to be.
    """
    at_most = current_app.config["LETTERS_WAITING_MAX"]
    params = {"queue": mail.QUEUE, "priority": BULK, "at_most": at_most}
    row = db.execute(queries["letters_waiting"], params).fetchone()
    return row[0] >= at_most


def queued(db, to: str, subject: str, body: str, lifetime: int | None = None, priority: int = BULK) -> int:
    """Queues a letter from MAIL_FROM on `db`'s transaction, at `priority`; returns the job's id.

    A letter carrying a link that dies is given the link's `lifetime` (seconds), and
    is never sent once that has passed (mail.message).
    """
    letter = mail.message(current_app.config["MAIL_FROM"], to, subject, body, lifetime=lifetime)
    return mail.delivered_later(db, letter, priority=priority)


def spoken(seconds: int) -> str:
    """A duration as a letter says it: "3 days", "1 hour", "5 minutes" or "30 seconds"."""
    for unit, size in (("day", 24 * 3600), ("hour", 3600), ("minute", 60)):
        if seconds >= size and seconds % size == 0:
            count = seconds // size
            return f"{count} {unit}{'s' if count != 1 else ''}"
    return f"{seconds} second{'s' if seconds != 1 else ''}"
