"""Choosing a new password, from the link a reset letter carries.

Asking for a letter answers the same whether or not the address has an account,
and takes the same path, as long: it queues one job either way (mailer.reset_asked),
and the worker writes the letter when it leaves (letters.reset_written), at most one
per account every RESET_EVERY seconds, and none to an address without one. A client
with AWAITED_PER_CLIENT letters waiting is told to come back (a 429). The link is
bound to the password digest, so setting a new password uses it up; the reset
also ends every session of the account (sessions.ended_everywhere). The reset of
an account never confirmed sets its name as well (see `edit`).
"""

import psycopg
from flask import Blueprint, abort, flash, redirect, render_template, request, session, url_for

import mail

from . import accounts, limits, mailer, names, passwords, sessions
from .db import get_db
from .forms import email_field, field

bp = Blueprint("resets", __name__, url_prefix="/resets")

INVALID = "This reset link is not valid: it has expired or was used already. Ask for a new one."
TOO_MANY = "Too many letters asked for from your address are waiting to be sent. Try again in a minute."


@bp.route("/new", methods=("GET", "POST"))
def new():
    """Queues the reset letter of the address given, which the worker writes and sends when it has an account and
    had none lately; a 429 for a client with AWAITED_PER_CLIENT letters waiting, whatever the address."""
    if request.method != "POST":
        return render_template("resets/new.html")
    email = email_field()
    if not mail.is_address(email):
        flash("Enter an email address, like name@example.com.", "error")
        return render_template("resets/new.html", email=email), 422
    db = get_db()
    client = limits.client(request.remote_addr)
    if mailer.awaiting_too_many(db, client):
        abort(429, TOO_MANY, retry_after=mailer.AWAITED_RETRY_AFTER)
    mailer.reset_asked(db, email, accounts.by_email(db, email), client)
    flash(f"If {email} has an account, a letter with a link to choose a new password is on its way.")
    return redirect(url_for("auth.signin"))


@bp.route("/<token>/edit", methods=("GET", "POST"))
def edit(token: str):
    """Shows the new-password form (GET), and sets the password, once (POST).

    The reset of an account never confirmed proves the address as a confirmation would,
    and hands the account to the address's owner, who may not be who signed it up: its
    form asks for the name too (optional, with sign-up's rules), and the claim its
    sign-up wrote no longer speaks for it (names.released), so no squatter's name stays.
    """
    db = get_db()
    account = accounts.for_token(db, "reset", token)
    if account is None:
        abort(400, INVALID)
    naming = account.confirmed_at is None
    if request.method != "POST":
        return render_template("resets/edit.html", email=account.email, naming=naming)
    password, name = field("password", passwords.PASSWORD_MAX), names.posted() if naming else ""
    problem = passwords.problem(password, account.email) or names.problem(name)
    problem = problem or (names.TAKEN if names.taken(db, name, account.id) else "")
    if problem:
        flash(problem, "error")
        return render_template("resets/edit.html", email=account.email, naming=naming, name=name), 422
    digest = passwords.digest(password)
    with db.transaction() as written:
        if not accounts.password_reset(db, account, digest):
            abort(400, INVALID)
        named = not naming or names.renamed(db, account.id, name)
        if not named:  # taken a moment ago: the link stays good for another try
            raise psycopg.Rollback(written)
        if naming:
            names.released(db, account.id)
        sessions.ended_everywhere(db, account.id)
        mailer.password_changed(db, account.email)
    if not named:
        flash(names.TAKEN, "error")
        return render_template("resets/edit.html", email=account.email, naming=naming, name=name), 422
    session.clear()
    flash("Your password is changed, and every session signed in with the old one has ended. Sign in with the new one.")
    return redirect(url_for("auth.signin"))
