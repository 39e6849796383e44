"""Accounts and sessions: sign up, confirm the address, sign in and sign out.

Sign-up writes an unconfirmed account and queues its confirmation letter on one
transaction, so the answer never waits on the mail server. The account signed in
is loaded once per request into `g.account`, from the session's row (sessions.py);
`login_required` guards views.
"""

import functools

from flask import Blueprint, abort, flash, g, redirect, render_template, request, session, url_for

import mail

from . import accounts, mailer, names, passwords, sessions, tokens
from .db import get_db
from .forms import email_field, field

bp = Blueprint("auth", __name__)

SIGNIN_FAILED = (
    "Sign-in failed: the email or the password is wrong, or the account is locked or not confirmed yet. "
    "A locked account is sent a letter with a link to unlock it, and an unconfirmed one a new confirmation letter."
)
CONFIRM_FAILED = (
    "That is not the password this account was signed up with, or too many wrong ones have locked the account "
    "(a letter with a link to unlock it is on its way), so it stays unconfirmed. "
    "If you did not sign up here, ignore the letter: an account nobody confirms is deleted."
)


@bp.before_app_request
def load_signed_in_account() -> None:
    """Puts the signed-in account in g.account; forgets a session that has ended, or whose password has changed."""
    g.account = None
    if session.get("session_id") is None:
        return
    account = sessions.account_of(
        get_db(), session["session_id"], session.get("account_id"), seen=not sessions.is_background(request.headers)
    )
    if account is None or not tokens.fits("session", session.get("password", ""), account):
        session.clear()
        return
    g.account = account


def login_required(view):
    """Sends a visitor who is not signed in to the sign-in page instead of `view`."""

    @functools.wraps(view)
    def guarded(**kwargs):
        if g.account is None:
            return redirect(url_for("auth.signin"))
        return view(**kwargs)

    return guarded


@bp.route("/signup", methods=("GET", "POST"))
def signup():
    """Makes an unconfirmed account and queues its confirmation letter; the same answer for a taken address."""
    if request.method != "POST":
        return render_template("auth/signup.html")
    email, password, name = email_field(), field("password", passwords.PASSWORD_MAX), names.posted()
    problem = "" if mail.is_address(email) else "Enter an email address, like name@example.com."
    problem = problem or passwords.problem(password, email) or names.problem(name)
    db = get_db()
    problem = problem or (names.TAKEN if names.taken(db, name) else "")  # whatever the address: it tells nothing of it
    if problem:
        flash(problem, "error")
        return render_template("auth/signup.html", email=email, name=name), 422
    if mailer.backlogged(db):  # the same for every address, taken or not: it tells nothing of them
        abort(
            503,
            "Too many letters are waiting to be sent just now. Try again in a few minutes.",
            retry_after=mailer.BACKLOG_RETRY_AFTER,
        )
    digest = passwords.digest(password)
    with db.transaction():
        account = accounts.created(db, email, digest, name, names.key(name))
        if account is not None:
            mailer.confirmation(db, account)
        elif accounts.signup_again_claimed(db, email):
            mailer.already_registered(db, email)
    flash(f"A letter is on its way to {email}. Open its link to confirm your account.")
    return redirect(url_for("auth.signin"))


@bp.route("/confirm/<token>", methods=("GET", "POST"))
def confirm(token: str):
    """Shows the form that confirms the account (GET, safe for mail scanners) and confirms it (POST).

    The link proves the address, and only the password of the sign-up proves the
    account: someone who signed up an address that is not theirs, with a password
    they chose, would otherwise have it confirmed, and theirs, by the owner's click
    on a letter the owner never asked for (a pre-hijacked account). A wrong password
    counts toward the account's lock as a sign-in's does, or whoever holds the link
    could guess the password here without end.
    """
    db = get_db()
    account = accounts.for_token(db, "confirm", token)
    if account is None:
        abort(400, "This confirmation link is not valid or has expired. Sign in to be sent a new one.")
    if request.method != "POST":
        return render_template("auth/confirm.html", account=account)
    if account.confirmed_at is None:
        password = field("password", passwords.PASSWORD_MAX)
        if not password_counted(db, account, password) or not accounts.confirmed(db, account):
            flash(CONFIRM_FAILED, "error")
            return render_template("auth/confirm.html", account=account), 401
    flash("Your account is confirmed. You can sign in now.")
    return redirect(url_for("auth.signin"))


@bp.route("/signin", methods=("GET", "POST"))
def signin():
    """Signs in with an address and password, with one answer for every kind of failure.

    The right password of an account not confirmed yet is a failure too, with the same
    answer, or two requests (sign up, then sign in) would tell whether an address had
    an account; its new confirmation letter goes unsaid (at most one every CONFIRM_EVERY).
    """
    if request.method != "POST":
        return render_template("auth/signin.html")
    email, password = email_field(), field("password", passwords.PASSWORD_MAX)
    db = get_db()
    # An account made before addresses were checked as strictly may hold one no letter can go to.
    account = accounts.by_email(db, email) if mail.is_address(email) else None
    outcome = attempted(db, account, password)
    if outcome == "unconfirmed":
        confirmation_again(db, account)
    if outcome != "signed in":
        flash(SIGNIN_FAILED, "error")
        return render_template("auth/signin.html", email=email), 401
    sessions.ended(db, session.get("session_id"))  # the session this browser held before, if any, ends
    session.clear()  # a new session for the new account: nothing carried over from before
    session["account_id"] = account.id
    session["session_id"] = sessions.started(db, account)
    session["password"] = tokens.fingerprint("session", tokens.state("session", account))
    return redirect(url_for("entries.index"))


def confirmation_again(db, account) -> None:
    """Queues a new confirmation letter for `account`, unless one was asked for in the last CONFIRM_EVERY."""
    with db.transaction():
        if accounts.confirmation_claimed(db, account):
            mailer.confirmation(db, account)


def attempted(db, account, password: str) -> str:
    """Checks a sign-in and counts it; says "signed in", "unconfirmed" or "refused"."""
    if not password_counted(db, account, password):
        return "refused"
    return "signed in" if account.confirmed_at is not None else "unconfirmed"


def password_counted(db, account, password: str) -> bool:
    """Whether `password` is the account's and the account is not locked; a wrong one counts toward LOCK_AFTER.

    Sign-in and the confirm form both check a password here, so guesses at either
    count toward one lock. The password is hashed whatever happens (against a dummy
    digest for an unknown address), so the answer takes as long for every address.
    The right password is taken only if the row, as it is after the hash, is not
    locked: guesses sent at once may have locked it while this one was hashed.
    """
    right = passwords.matches(account.password_digest if account else None, password)
    if account is None or account.locked:
        return False
    if account.locked_at is not None:
        accounts.lock_ended(db, account)
    if not right:
        with db.transaction():
            locked = accounts.failed_signin(db, account)
            if locked is not None:
                mailer.unlock(db, locked)
        return False
    return accounts.succeeded_signin(db, account)


@bp.route("/signout", methods=("POST",))
def signout():
    """Ends this session, on the server too: a copy of its cookie is worth nothing after."""
    sessions.ended(get_db(), session.get("session_id"))
    session.clear()
    flash("You are signed out.")
    return redirect(url_for("entries.index"))


@bp.route("/signout/everywhere", methods=("POST",))
@login_required
def signout_everywhere():
    """Ends every session of the signed-in account, on every device."""
    sessions.ended_everywhere(get_db(), g.account.id)
    session.clear()
    flash("You are signed out everywhere: every session of your account has ended, on every device.")
    return redirect(url_for("entries.index"))
