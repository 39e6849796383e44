"""Admin rights: which accounts may see the job queue's dashboard at /jobs (dashboard.py).

A right is granted by an operator's act, never by what an address looks like: the
command line (`python -m guestbook admins add ADDRESS`, __main__.py) writes a row of
the admins table for a confirmed account, `admins remove ADDRESS` deletes it, and no
view of the site writes that table. The dashboard asks the table on every request, so
a removal holds from the admin's next request on, in every session.
"""

from .db import queries


def granted(db, email: str) -> str:
    """Grants the confirmed account of `email` the dashboard; says what happened, "" when there is no such account."""
    if db.execute(queries["admin_granted"], {"email": email}).fetchone() is not None:
        return f"{email} may now see the dashboard at /jobs"
    if held_by(db, email):
        return f"{email} could see the dashboard already"
    return ""


def revoked(db, email: str) -> bool:
    """Takes the dashboard back from the account of `email`; False when it did not hold it."""
    return db.execute(queries["admin_revoked"], {"email": email}).fetchone() is not None


def listed(db) -> list:
    """Every admin: (email, granted_at), by address."""
    return db.execute(queries["admins_listed"]).fetchall()


def holds(db, account) -> bool:
    """Whether `account` (or None) holds the dashboard now."""
    return account is not None and db.execute(queries["admin_held"], {"account_id": account.id}).fetchone() is not None


def held_by(db, email: str) -> bool:
    """Whether the account of `email` holds the dashboard."""
    return any(row.email == email for row in listed(db))
