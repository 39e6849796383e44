"""The failed view's table: the jobs on the shelf a page of /failed lists, each ticked or not for retry or discard.

lists.py reads the page (the list of the failed state, filtered and paged by listing.py)
and hands its jobs here. Each shows its last reason, with its earlier reasons and its
traceback behind a click; the buttons retry or discard the jobs ticked, or every job
the page shows (actions.py), and return to this page saying what they did.
"""

from typing import Any

import psycopg
from psycopg.rows import dict_row

from . import html
from .html import escaped
from .pages import queries
from .request import Request

HEADERS = ["Select", "Job", "Queue", "Name", "Attempts", "Failed at", "Reason"]


def shelf_form(request: Request, db: psycopg.Connection[Any], page: list[dict[str, Any]]) -> str:
    """The page's failed jobs in a table of tick boxes, inside the form of the retry and discard buttons."""
    with db.cursor(row_factory=dict_row) as cursor:
        said = {row["id"]: row for row in cursor.execute(queries["reasons"], {"ids": [job["id"] for job in page]})}
    rows = [
        [
            f'<input type="checkbox" name="id" value="{job["id"]}" aria-label="job {job["id"]}">',
            html.link(request, f"/job/{job['id']}", job["id"]),
            escaped(job["queue"]),
            escaped(job["name"]),
            f"{job['attempts']} of {job['max_attempts']}",
            html.moment(job["run_at"]),  # on the shelf, run_at is the moment it failed for good
            reasons(job, said.get(job["id"], {"reasons": [], "traceback": ""})),
        ]
        for job in page
    ]
    shown = "".join(f'<input type="hidden" name="shown" value="{job["id"]}">' for job in page)
    root = escaped(request.root)
    buttons = (
        '<div class="actions">'
        f'<button type="submit" formaction="{root}/retry">Retry selected</button>'
        f'<button type="submit" formaction="{root}/discard" class="danger">Discard selected</button>'
        f'<button type="submit" formaction="{root}/retry" name="all_shown" value="1">'
        f"Retry all {len(page)} shown</button>"
        f'<button type="submit" formaction="{root}/discard" name="all_shown" value="1" '
        f'class="danger">Discard all {len(page)} shown</button></div>'
    )
    table = html.table(HEADERS, rows, frozenset({"Job"}))
    return f'<form method="post" action="{root}/retry">{html.token_field(request)}{shown}{buttons}{table}</form>'


def reasons(job: dict[str, Any], said: dict[str, Any]) -> str:
    """A failed job's last reason, with its earlier reasons and its traceback (`said`) behind a click."""
    earlier = said["reasons"][:-1]
    parts = [escaped(html.first_line(job["failure"]))]
    if earlier:
        items = "".join(f"<li>{escaped(reason)}</li>" for reason in earlier)
        parts.append(f"<details><summary>{len(earlier)} earlier</summary><ol>{items}</ol></details>")
    if said["traceback"]:
        parts.append(f"<details><summary>traceback</summary><pre>{escaped(said['traceback'])}</pre></details>")
    return f"<div>{''.join(parts)}</div>"
