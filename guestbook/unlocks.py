"""Unlocking an account that too many wrong passwords locked, from the link its letter carries.

The letter is queued by auth.password_counted when the LOCK_AFTER-th wrong password
(at sign-in or on the confirm form) locks the account. Its link shows a button (GET)
and unlocks on POST, so a mail scanner that opens links cannot use it up; it dies
once the lock it was made for ends.
"""

from flask import Blueprint, abort, flash, redirect, render_template, request, url_for

from . import accounts
from .db import get_db

bp = Blueprint("unlocks", __name__, url_prefix="/unlocks")


@bp.route("/<token>", methods=("GET", "POST"))
def unlock(token: str):
    """Shows the button that unlocks the account (GET), and unlocks it (POST)."""
    db = get_db()
    account = accounts.for_token(db, "unlock", token)
    if account is None:
        abort(
            400, "This unlock link is not valid any more: the lock it was sent for has ended, or the link has expired."
        )
    if request.method != "POST":
        return render_template("unlocks/unlock.html", account=account)
    if not accounts.unlocked(db, account):
        abort(400, "This unlock link was used already.")
    flash("Your account is unlocked. You can sign in now.")
    return redirect(url_for("auth.signin"))
