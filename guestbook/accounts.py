"""Accounts as the views use them: the rows of the accounts table, read and changed.

Each function sends one statement of queries.sql on the connection it is given;
the views decide which of them share a transaction with a queued letter.
"""

from . import tokens
from .db import queries

LOCK_AFTER = 10  # consecutive wrong passwords that lock an account
LOCK_DURATION = 3600  # seconds after which a lock ends by itself: an hour
RESET_EVERY = 5 * 60  # seconds that must pass between two reset letters to one account
CONFIRM_EVERY = 5 * 60  # seconds that must pass between two confirmation letters sent again at a sign-in
SIGNUP_AGAIN_EVERY = 60 * 60  # seconds between two "you already have an account" letters to one account: an hour


def by_email(db, email: str):
    """The account with this (lower-cased) address, or None."""
    return db.execute(queries["account_by_email"], {"email": email, "lock_duration": LOCK_DURATION}).fetchone()


def by_id(db, account_id: int):
    """The account with this id, or None."""
    return db.execute(queries["account_by_id"], {"id": account_id, "lock_duration": LOCK_DURATION}).fetchone()


def for_token(db, purpose: str, token: str):
    """The account a token for `purpose` was made for, while the token is genuine, unexpired and fits; else None."""
    found = tokens.opened(purpose, token)
    if found is None:
        return None
    account_id, print_ = found
    account = by_id(db, account_id)
    if account is None or not tokens.fits(purpose, print_, account):
        return None
    return account


def created(db, email: str, digest: str):
    """A new unconfirmed account, without a name until it is confirmed (names.claim_kept), or None when the address
    already has one."""
    return db.execute(queries["account_created"], {"email": email, "digest": digest}).fetchone()


def confirmed(db, account) -> bool:
    """Marks the account confirmed (once: a second time changes nothing); False when its password changed meanwhile."""
    params = {"id": account.id, "digest": account.password_digest}
    return db.execute(queries["account_confirmed"], params).rowcount == 1


def unconfirmed_pruned(db, reset_max_age: int) -> int:
    """Deletes the accounts whose last confirmation link expired unused (CONFIRM_MAX_AGE); returns how many.

    An account whose last reset letter went less than `reset_max_age` seconds ago is
    kept: its link still works, and setting a password with it confirms the account.
    """
    params = {"max_age": tokens.CONFIRM_MAX_AGE, "reset_max_age": reset_max_age}
    return db.execute(queries["unconfirmed_pruned"], params).rowcount


def failed_signin(db, account):
    """Counts a wrong password; returns the account as it is now when this failure locked it, else None."""
    row = db.execute(queries["signin_failed"], {"id": account.id, "lock_after": LOCK_AFTER}).fetchone()
    return by_id(db, account.id) if row and row.locked_at else None


def succeeded_signin(db, account) -> bool:
    """Starts the count of wrong passwords again; False, changing nothing, if the account is locked now."""
    params = {"id": account.id, "digest": account.password_digest, "lock_duration": LOCK_DURATION}
    return db.execute(queries["signin_succeeded"], params).rowcount == 1


def lock_ended(db, account) -> None:
    """Clears a lock that has lasted LOCK_DURATION, and its count."""
    db.execute(queries["lock_ended"], {"id": account.id, "lock_duration": LOCK_DURATION})


def unlocked(db, account) -> bool:
    """Ends the account's present lock; False when that lock had already ended."""
    return db.execute(queries["account_unlocked"], {"id": account.id, "locked_at": account.locked_at}).rowcount == 1


def reset_claimed(db, account_id: int, again: bool = False) -> bool:
    """Whether a reset letter may go to the account now (none in the last RESET_EVERY seconds, or `again`: a later
    attempt at the letter an earlier one claimed); notes it if so."""
    params = {"id": account_id, "every": RESET_EVERY, "again": again}
    return db.execute(queries["reset_claimed"], params).rowcount == 1


def confirmation_claimed(db, account) -> bool:
    """Whether a new confirmation letter may go to the unconfirmed account now (none asked for in CONFIRM_EVERY);
    notes it if so."""
    return db.execute(queries["confirmation_claimed"], {"id": account.id, "every": CONFIRM_EVERY}).rowcount == 1


def signup_again_claimed(db, email: str) -> bool:
    """Whether the account of `email` may be told now that it was signed up again (not in SIGNUP_AGAIN_EVERY);
    notes it if so."""
    return db.execute(queries["signup_again_claimed"], {"email": email, "every": SIGNUP_AGAIN_EVERY}).rowcount == 1


def password_reset(db, account, digest: str) -> bool:
    """Sets a new password digest over the one `account` holds; False when that one was already replaced."""
    params = {"id": account.id, "digest": digest, "old_digest": account.password_digest}
    return db.execute(queries["password_reset"], params).rowcount == 1
