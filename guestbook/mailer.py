"""The guestbook's letters, as a Rails mailer queues them: which lane each waits in, and what bounds each lane.

A letter whose link dies (confirmation, unlock, reset) is queued with mail.written_later,
naming only its account, and written when it leaves (letters.py): its link lives its whole
life from then, however long it waited, and one waits per account at a time. The others
(`already_registered`, `password_changed`) are written now, with mail.delivered_later.
Each is queued on the connection given, inside the view's transaction; the worker beside
the server sends it a moment later. Links start from mail.url_for (BASE_URL).

The letters somebody waits for at the screen, the reset and unlock letters, are queued
at AWAITED, ahead of every other letter: a flood of sign-ups, each bounded per client
only, would otherwise queue a backlog they wait behind (`backlogged` bounds that backlog
as a whole). Within the lane, a client may keep AWAITED_PER_CLIENT letters waiting
(`awaiting_too_many`), so a flood waits behind its own letters, not its victims'; each
account's are bounded by the account (RESET_EVERY, one per lock).
A mail provider's limit on letters a second is the mail queue's limit (`rate_kept`,
MAIL_RATE), decided in the queue's claim: held back there, a letter is never tried,
refused and retried, and the reset letter still goes first.
"""

from flask import current_app

import jobs
import mail

from .db import queries

AWAITED = -1  # the priority of the letters a person waits for (reset, unlock): sent before any other
BULK = 0  # the priority of every other letter: jobs' default
LETTERS_WAITING_MAX = 1000  # BULK letters waiting before a sign-up is told to come back, unless the setting
# of that name says otherwise: at half a second a letter, about eight minutes of sending
BACKLOG_RETRY_AFTER = 300  # seconds a sign-up turned away by the backlog is told to wait
MAIL_RATE = 0  # letters a second the mail queue may start, unless the setting of that name says otherwise; 0: any
AWAITED_PER_CLIENT = 5  # letters one client may have waiting at AWAITED; past them, its reset requests get a 429
AWAITED_RETRY_AFTER = 60  # seconds a client past AWAITED_PER_CLIENT is told to wait: its letters go meanwhile


def rate_kept(db, rate: int) -> None:
    """Limits the mail queue to `rate` letters a second across every worker (MAIL_RATE), or lifts its limit at 0."""
    if rate:
        jobs.limited(db, mail.QUEUE, rate=(rate, 1.0))
    else:
        jobs.unlimited(db, mail.QUEUE)


def confirmation(db, account) -> int | None:
    """Queues the letter with the link that confirms a new account (`confirmation_written`), one at a time per
    account: while one waits, asking again is the same letter (None)."""
    args = {"account": account.id, "to": account.email}
    return mail.written_later(db, "confirmation", args, unique=f"confirmation:{account.id}")


def unlock(db, account) -> int | None:
    """Queues the letter with the link that unlocks an account locked by wrong passwords (`unlock_written`), at
    AWAITED, one at a time per account."""
    args = {"account": account.id, "to": account.email}
    return mail.written_later(db, "unlock", args, priority=AWAITED, unique=f"unlock:{account.id}")


def reset_asked(db, email: str, account, client: str) -> int | None:
    """Queues the letter whose link sets a new password (`reset_written`), asked for `email` by `client`, at AWAITED.

    `account` is the address's account, or None: the request takes one path for both,
    writing one job, so its time tells nothing; the letter is written when it leaves, and
    only for an account that had none in RESET_EVERY. One waits per address at a time
    (asking again while it waits is the same letter: None), and the job names its
    `client`, so that one client's letters waiting are counted (`awaiting_too_many`).
    """
    args = {"account": account.id if account else None, "to": email, "client": client}
    return mail.written_later(db, "reset", args, priority=AWAITED, unique=f"reset:{email}")


def awaiting_too_many(db, client: str) -> bool:
    """Whether AWAITED_PER_CLIENT letters that `client` asked for wait already, so that it may ask for no more now."""
    params = {"queue": mail.QUEUE, "priority": AWAITED, "client": client, "at_most": AWAITED_PER_CLIENT}
    row = db.execute(queries["letters_awaited_by"], params).fetchone()
    return row[0] >= AWAITED_PER_CLIENT


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


def queued(db, to: str, subject: str, body: str) -> int:
    """Queues a letter from MAIL_FROM, which carries no link that dies, on `db`'s transaction; returns the job's id."""
    return mail.delivered_later(db, mail.message(current_app.config["MAIL_FROM"], to, subject, body))
