"""The guestbook's letters, as a Rails mailer holds them: what each says, and the signed link it carries.

Each function queues its letter with mail.delivered_later on the connection it is
given, inside the view's transaction, and returns the job's id; the worker beside
the server sends it a moment later. Links start from mail.url_for (BASE_URL).
The reset letter takes one step more (`reset_asked`), so that asking for one costs
the same whether or not the address has an account.
"""

from dataclasses import asdict

from flask import current_app

import jobs
import mail

from . import accounts, tokens

RESET_SECRET_ARGS = ("letter",)  # the reset job's whole letter, live link and all, as mail.SECRET_ARGS: never shown


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
    job = jobs.later(
        db, mail.QUEUE, "reset_letter", {"account": account.id, "letter": asdict(letter)}, secret=RESET_SECRET_ARGS
    )
    assert job is not None  # jobs.later answers None only for a job with a unique key, and this one has none
    return job


def reset_letter(db, args: dict) -> None:
    """The `reset_letter` job: queues the reset letter when it is an account's and none went in RESET_EVERY."""
    if args["account"] is not None and accounts.reset_claimed(db, args["account"]):
        mail.delivered_later(db, mail.Letter(**args["letter"]))


PERFORMERS = {"reset_letter": reset_letter}  # the jobs of this module, for the worker on the mail queue


def password_changed(db, email: str) -> int:
    """The letter that says the password was just changed."""
    return queued(
        db,
        email,
        "Your guestbook password was changed",
        (
            "The password of your guestbook account was just changed, and every session\n"
            "signed in with the old one has ended. If that was not you, choose a new one here:\n\n"
            f"{mail.url_for('/resets/new')}\n"
        ),
    )


def queued(db, to: str, subject: str, body: str, lifetime: int | None = None) -> int:
    """Queues a letter from MAIL_FROM on `db`'s transaction; returns the job's id.

    A letter carrying a link that dies is given the link's `lifetime` (seconds), and
    is never sent once that has passed (mail.message).
    """
    return mail.delivered_later(db, mail.message(current_app.config["MAIL_FROM"], to, subject, body, lifetime=lifetime))


def spoken(seconds: int) -> str:
    """A duration as a letter says it: "3 days", "1 hour", "5 minutes" or "30 seconds"."""
    for unit, size in (("day", 24 * 3600), ("hour", 3600), ("minute", 60)):
        if seconds >= size and seconds % size == 0:
            count = seconds // size
            return f"{count} {unit}{'s' if count != 1 else ''}"
    return f"{seconds} second{'s' if seconds != 1 else ''}"
