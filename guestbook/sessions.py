"""Sessions kept on the server: the signed cookie names a row of the sessions table, and the row decides.

Signing out deletes the row, so a copy of the cookie taken before is worth nothing
after it; "sign out everywhere" and a password reset delete every row of the account,
and signing in again ends the row the browser held before. An account keeps at most
SESSIONS_MAX live rows, and the daily upkeep deletes every row that has ended (`pruned`).
A session also ends by itself, SESSION_IDLE after its latest request and
SESSION_MAX_AGE after its sign-in, however busy (auth.load_signed_in_account asks).
Only the person's own requests count as activity: a look a page's script takes by
itself (the dashboard's refresh) leaves the latest request where it was, so a tab
left open does not keep its session alive (`is_background`).
"""

import jobs.web

from . import accounts
from .db import queries

SESSION_MAX_AGE = 14 * 24 * 3600  # seconds a session lives at the most, from its sign-in: 14 days
SESSION_IDLE = 24 * 3600  # seconds without a request after which a session ends: a day
SEEN_EVERY = 60  # seconds between two writes of a session's latest request, not one write a page
SESSIONS_MAX = 10  # live sessions an account keeps at the most: a new sign-in past it ends the oldest


def started(db, account) -> int:
    """A new session of `account`; returns its id, for the cookie."""
    params = {"account_id": account.id, "max_age": SESSION_MAX_AGE, "idle": SESSION_IDLE, "kept": SESSIONS_MAX - 1}
    return db.execute(queries["session_started"], params).fetchone().id


def account_of(db, session_id, account_id, *, seen: bool = True):
    """The account of the live session `session_id` (made for `account_id`), or None; notes the request if `seen`."""
    if type(session_id) is not int or type(account_id) is not int:  # not even a bool: the cookie is JSON
        return None
    account = db.execute(
        queries["session_account"],
        {
            "id": session_id,
            "account_id": account_id,
            "lock_duration": accounts.LOCK_DURATION,
            "seen_every": SEEN_EVERY,
            "max_age": SESSION_MAX_AGE,
            "idle": SESSION_IDLE,
        },
    ).fetchone()
    if account is not None and account.stale and seen:
        db.execute(queries["session_seen"], {"id": session_id})
    return account


def is_background(headers) -> bool:
    """Whether a request was sent by a page's script on its own, not by the person: not their activity.

    A browser says so in Fetch Metadata (Sec-Fetch-Mode is "navigate" for a page or a
    form the person opens, "cors" or "same-origin" for a script's fetch); the
    dashboard's script also says so itself (jobs.web.REFRESH_HEADER), for browsers
    that send no Fetch Metadata. A request that says neither is the person's.
    """
    return (
        headers.get("Sec-Fetch-Mode", "navigate") not in ("navigate", "nested-navigate")
        or jobs.web.REFRESH_HEADER in headers
    )


def ended(db, session_id) -> None:
    """Ends one session, wherever its cookie is."""
    if type(session_id) is int:
        db.execute(queries["session_ended"], {"id": session_id})


def ended_everywhere(db, account_id: int) -> None:
    """Ends every session of the account."""
    db.execute(queries["sessions_ended"], {"account_id": account_id})


def pruned(db) -> int:
    """Deletes every session that has ended by itself (SESSION_IDLE, SESSION_MAX_AGE); returns how many."""
    return db.execute(queries["sessions_pruned"], {"max_age": SESSION_MAX_AGE, "idle": SESSION_IDLE}).rowcount
