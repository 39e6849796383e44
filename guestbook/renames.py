"""The name page: a signed-in account changes the name its entries are signed with.

The rules are sign-up's (names.problem, and no name another account or a live claim
holds, names.taken); the account's own name, or a look-alike of it, stays its own.
Entries name the account they were signed by (entries_page joins accounts), so every
entry, those signed before the change included, shows the name the account has now.
A post is one of the client's counted tries (limits.LIMITED), as the other forms' are.
"""

from flask import Blueprint, flash, g, redirect, render_template, request, url_for

from . import names
from .auth import login_required
from .db import get_db

bp = Blueprint("renames", __name__)


@bp.route("/name", methods=("GET", "POST"))
@login_required
def edit():
    """Shows the account's name in a form (GET), and changes it (POST)."""
    db = get_db()
    if request.method != "POST":
        return render_template("renames/edit.html", name=names.of(db, g.account.id))
    name = names.posted()
    problem = names.problem(name) or (names.TAKEN if names.taken(db, name, g.account.id) else "")
    if not problem and not names.renamed(db, g.account.id, name):
        problem = names.TAKEN  # taken between the look and the write
    if problem:
        flash(problem, "error")
        return render_template("renames/edit.html", name=name), 422
    flash(f"Your entries are signed “{name or names.ANONYMOUS}” now, those signed before included.")
    return redirect(url_for("entries.index"))
