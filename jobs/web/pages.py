"""The dashboard's pages, each a GET that only reads: the failed shelf, batches, schedules, workers.

Each reads what it shows through shelf.py, control.py, schedules.py and workers_table.py (or
web/queries.sql for a job by id and the batches), a page at a time by keyset, so each stays quick however
many jobs the table holds. A job's arguments may hold secrets and show only when asked, and
those its caller named secret (redaction.py) never show, even then.
"""

from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql
from psycopg.rows import dict_row

from ..core.sql import load
from ..store import schedules as schedule_rows
from ..store import shelf, workers_table
from ..store.shelf import age  # as the command line says it
from . import html, params
from .html import escaped
from .wsgi import Answer, Dashboard, Request

queries = load(Path(__file__).with_name("queries.sql"))
STATIC = Path(__file__).with_name("static")
ASSETS = {
    "style.css": "text/css; charset=utf-8",
    "refresh.js": "text/javascript; charset=utf-8",
    "icon.svg": "image/svg+xml",  # named by every page, so a browser asks no /favicon.ico of the app
}


def failed(dashboard: Dashboard, request: Request, db: psycopg.Connection[Any]) -> Answer:
    """The failed shelf, newest first, a page at a time, with retry and discard for a selection or all shown."""
    queue = request.query.get("queue", [""])[0] or None
    after = params.optional(request.query, "after", "after")
    limit = params.optional(request.query, "limit", "limit", largest=params.PAGE_MAX) or shelf.PAGE
    page = shelf.failed(db, queue, limit=limit, after=after)
    title = "Failed" + (f" on {queue}" if queue else "")
    if not page:
        return Answer(html.page(request, title, "<p>No job has failed for good here.</p>"))
    rows = [
        [
            f'<input type="checkbox" name="id" value="{job["id"]}" aria-label="job {job["id"]}">',
            html.link(request, f"/job/{job['id']}", job["id"]),
            escaped(job["queue"]),
            escaped(job["name"]),
            str(job["attempts"]),
            html.moment(job["failed_at"]),
            reasons(job),
        ]
        for job in page
    ]
    shown = "".join(f'<input type="hidden" name="shown" value="{job["id"]}">' for job in page)
    buttons = (
        '<div class="actions">'
        f'<button type="submit" formaction="{escaped(request.root)}/retry">Retry selected</button>'
        f'<button type="submit" formaction="{escaped(request.root)}/discard" class="danger">Discard selected</button>'
        f'<button type="submit" formaction="{escaped(request.root)}/retry" name="all_shown" value="1">'
        f"Retry all {len(page)} shown</button>"
        f'<button type="submit" formaction="{escaped(request.root)}/discard" name="all_shown" value="1" '
        f'class="danger">Discard all {len(page)} shown</button></div>'
    )
    table = html.table(
        ["Select", "Job", "Queue", "Name", "Attempts", "Failed at", "Reason"], rows, frozenset({"Job", "Attempts"})
    )
    more = ""
    if len(page) == limit:
        more = f"<p>{html.link(request, '/failed', 'Older failures →', queue=queue, after=page[-1]['id'])}</p>"
    body = (
        f'<form method="post" action="{escaped(request.root)}/retry">{html.token_field(request)}{shown}'
        f"{buttons}{table}</form>{more}"
    )
    return Answer(html.page(request, title, body))


def reasons(job: dict[str, Any]) -> str:
    """A failed job's last reason, with its earlier reasons and its traceback behind a click."""
    earlier = job["reasons"][:-1]
    parts = [escaped(html.first_line(job["failure"]))]
    if earlier:
        items = "".join(f"<li>{escaped(reason)}</li>" for reason in earlier)
        parts.append(f"<details><summary>{len(earlier)} earlier</summary><ol>{items}</ol></details>")
    if job["traceback"]:
        parts.append(f"<details><summary>traceback</summary><pre>{escaped(job['traceback'])}</pre></details>")
    return f"<div>{''.join(parts)}</div>"


def batches(dashboard: Dashboard, request: Request, db: psycopg.Connection[Any]) -> Answer:
    """The batches, newest first, with their progress."""
    after = params.optional(request.query, "after", "after")
    statement = sql.SQL(queries["batches"]).format(limit=sql.Literal(shelf.PAGE))
    with db.cursor(row_factory=dict_row) as cursor:
        page = cursor.execute(statement, {"before": after}).fetchall()
    if not page:
        return Answer(html.page(request, "Batches", "<p>No batches.</p>"))
    rows = []
    for batch in page:
        done = batch["total"] - batch["pending"]
        state = "finished" if batch["finished_at"] else "cancelling" if batch["cancelled_at"] else "running"
        rows.append(
            [
                html.link(request, f"/batch/{batch['id']}", batch["id"]),
                escaped(batch["queue"]),
                f'<progress value="{done}" max="{max(batch["total"], 1)}"></progress> {done:,} of {batch["total"]:,}',
                f"{batch['failed']:,}",
                f"{batch['cancelled']:,}",
                state,
                html.moment(batch["created_at"]),
            ]
        )
    more = ""
    if len(page) == shelf.PAGE:
        more = f"<p>{html.link(request, '/batches', 'Older batches →', after=page[-1]['id'])}</p>"
    table = html.table(
        ["Batch", "Queue", "Settled", "Failed", "Cancelled", "State", "Created"],
        rows,
        frozenset({"Batch", "Failed", "Cancelled"}),
    )
    return Answer(html.page(request, "Batches", table + more))


def schedules(dashboard: Dashboard, request: Request, db: psycopg.Connection[Any]) -> Answer:
    """Each schedule job_schedules records, with its last run, and its next run when the app holds it.

    job_schedules has a row per schedule a worker ever held, so the page reads it whole.
    The next run is worked out from the code's schedules handed to `jobs.web.app`; a
    recorded one they lack is said to be no longer held.
    """
    rows = schedule_rows.recorded(db, dashboard.schedules)
    if not rows:
        return Answer(html.page(request, "Schedules", "<p>No schedule is recorded: no worker has held one yet.</p>"))
    held = {schedule.key for schedule in dashboard.schedules}
    headers = ["Schedule", "Runs", "Last run", "Last seen"] + (["Next run"] if held else [])
    table = []
    for row in rows:
        cells = [
            escaped(row["key"]),
            escaped(row["definition"]),
            html.when(row["last_tick"]),
            html.when(row["seen_at"]),
        ]
        if held:
            cells.append(html.when(row["next_tick"]) if row["key"] in held else "no longer held by this code")
        table.append(cells)
    note = "" if held else '<p class="muted">Next runs show when the app is handed the code\'s schedules.</p>'
    return Answer(html.page(request, "Schedules", html.table(headers, table) + note))


def workers(dashboard: Dashboard, request: Request, db: psycopg.Connection[Any]) -> Answer:
    """The workers at work and those gone within workers_table.KEPT: where each runs, what it works, its last beat."""
    rows = workers_table.listed(db)
    if not rows:
        return Answer(html.page(request, "Workers", "<p>No worker has run here in the last hour.</p>"))
    table = [
        [
            str(row["id"]),
            escaped(row["host"]),
            str(row["pid"]),
            escaped(", ".join(row["queues"])),
            str(row["threads"]),
            str(row["version"]),
            html.moment(row["started_at"]),
            age((row["now"] - row["beat_at"]) / 1000) + " ago",
            row["state"] + (f" at {html.moment(row['ended_at'])}" if row["ended_at"] else ""),
            html.link(request, "/jobs", f"{row['holding']:,}", state="in_work", worker=row["id"]),
        ]
        for row in rows
    ]
    note = (
        f'<p class="muted">A worker beats {workers_table.BEATS} times per lease; '
        f"one silent for {workers_table.SILENT:g} of its lease is taken for gone, "
        "and the jobs it held go back to the queue.</p>"
    )
    headers = ["Worker", "Host", "PID", "Queues", "Threads", "Version", "Started", "Last beat", "State", "Holding"]
    return Answer(
        html.page(request, "Workers", html.table(headers, table, frozenset({"PID", "Threads", "Holding"})) + note)
    )


def asset(dashboard: Dashboard, request: Request, db: None, name: str) -> Answer:
    """The stylesheet, the refresh script or the icon, from static/ (a route with database=False: `db` is None)."""
    return Answer((STATIC / name).read_bytes(), content_type=ASSETS[name])
