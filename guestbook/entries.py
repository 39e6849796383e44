"""The guestbook itself: the entries, newest first, a page at a time, and the form that adds one.

Anyone may read; a signed-in account (which is always a confirmed one) may sign, up
to ENTRIES_PER_WINDOW entries an ENTRY_WINDOW, counted on its row in the database (so
across every process), then a 429 page saying when to try again. An entry may not
hold BIDI_CONTROLS, which would show its text in another order than it is written
(`moc.elpmaxe@ecila` shown as alice@example.com); the page isolates each entry's
direction all the same (dir="auto"), so a right-to-left one leaves the page as it is. Pages go by keyset:
`?before=ID` shows the entries older than entry ID, so a deep page costs what the first does.
"""

from flask import Blueprint, abort, flash, g, redirect, render_template, request, url_for

from .auth import login_required
from .db import get_db, queries
from .forms import field

bp = Blueprint("entries", __name__)

PER_PAGE = 20  # entries on one page
NEWEST = 2**63 - 1  # the `before` of the first page: past every entry's id (a bigint)
ID_DIGITS = len(str(NEWEST))  # digits an entry's id has at the most; a longer `before` is refused unread
ENTRY_MAX = 2000  # characters an entry may hold
ENTRIES_PER_WINDOW = 10  # entries one account may post in a window
ENTRY_WINDOW = 3600  # seconds a window lasts: an hour, from the account's first entry after the last one ended
# The invisible characters that reorder text: marks, embeddings, overrides and isolates.
BIDI_CONTROLS = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


@bp.route("/")
def index():
    """The page of entries older than `?before=ID` (the newest, without it), newest first."""
    before = before_asked()
    rows = get_db().execute(queries["entries_page"], {"before": before, "limit": PER_PAGE + 1}).fetchall()
    shown = rows[:PER_PAGE]
    older = shown[-1].id if len(rows) > PER_PAGE else None
    return render_template("entries/index.html", entries=shown, older=older, newest=before == NEWEST)


def before_asked() -> int:
    """The entry id in `?before=`, NEWEST when there is none; a 400 page when it is not a whole number in range."""
    text = request.args.get("before")
    if text is None:
        return NEWEST
    if not (text.isascii() and text.isdigit() and len(text) <= ID_DIGITS) or not 1 <= int(text) <= NEWEST:
        abort(
            400, f"There is no entry {text[: ID_DIGITS + 1]!r} to show the entries before: entries are numbered from 1."
        )
    return int(text)


@bp.route("/entries", methods=("POST",))
@login_required
def create():
    """Adds the signed-in account's entry, unless it has posted ENTRIES_PER_WINDOW in this window."""
    body = field("body", ENTRY_MAX).strip()
    if not body:
        flash("Write something before you sign.", "error")
        return index(), 422
    if BIDI_CONTROLS.intersection(body):
        flash("Write your entry without the invisible characters that reorder text (bidirectional controls).", "error")
        return index(), 422
    db = get_db()
    with db.transaction():
        params = {"account_id": g.account.id, "window": ENTRY_WINDOW}
        posted, wait = db.execute(queries["entry_counted"], params).fetchone()
        if posted <= ENTRIES_PER_WINDOW:
            db.execute(queries["entry_created"], {"account_id": g.account.id, "body": body})
    if posted > ENTRIES_PER_WINDOW:
        wait = max(wait, 1)
        abort(
            429,
            f"You have signed the guestbook {ENTRIES_PER_WINDOW} times in the last "
            f"{ENTRY_WINDOW // 60} minutes. Try again in {wait} second{'s' if wait != 1 else ''}.",
            retry_after=wait,
        )
    flash("Thank you for signing the guestbook.")
    return redirect(url_for("entries.index"))
