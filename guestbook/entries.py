"""The guestbook itself: the entries, newest first, a page at a time, and the form that adds one.

Anyone may read; a signed-in account (which is always a confirmed one) may sign.
"""

from flask import Blueprint, abort, flash, g, redirect, render_template, request, url_for

from .auth import login_required
from .db import get_db, queries
from .forms import field

bp = Blueprint("entries", __name__)

PER_PAGE = 20  # entries on one page
PAGES_MAX = 100_000  # the last page number asked for that is not refused outright
ENTRY_MAX = 2000  # characters an entry may hold


@bp.route("/")
def index():
    """The page of entries `?page=N` asks for (the newest first)."""
    page = page_asked()
    rows = get_db().execute(queries["entries_page"], {"limit": PER_PAGE + 1, "offset": (page - 1) * PER_PAGE}).fetchall()
    return render_template("entries/index.html", entries=rows[:PER_PAGE], page=page, older=len(rows) > PER_PAGE)


def page_asked() -> int:
    """The page number in the query string, 1 when none; a 400 page when it is not a whole number in range."""
    text = request.args.get("page", "1")
    # The digits are counted first: int() raises past 4,300 of them, which would be a 500.
    if not (text.isascii() and text.isdigit()) or len(text) > len(str(PAGES_MAX)) or not 1 <= int(text) <= PAGES_MAX:
        abort(400, f"There is no page {text!r}: pages are numbered from 1.")
    return int(text)


@bp.route("/entries", methods=("POST",))
@login_required
def create():
    """Adds the signed-in account's entry."""
    body = field("body", ENTRY_MAX).strip()
    if not body:
        flash("Write something before you sign.", "error")
        return index(), 422
    get_db().execute(queries["entry_created"], {"account_id": g.account.id, "body": body})
    flash("Thank you for signing the guestbook.")
    return redirect(url_for("entries.index"))
