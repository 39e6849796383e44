"""The dashboard's pages, each a GET that only reads: batches, schedules, workers, and the assets.

Each reads what it shows through shelf.py, control.py, schedules.py and control.py (or
web/queries.sql for a job by id and the batches), a page at a time by keyset, so each stays quick however
many jobs the table holds. A job's arguments may hold secrets and show only when asked, and
those its caller named secret (core/arguments.py) never show, even then.
"""

from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql
from psycopg.rows import dict_row

from ..store import control, schema, shelf
from ..store import schedules as schedule_rows
from ..store.schema import load
from ..store.shelf import age  # as the command line says it
from . import html, params
from .html import escaped
from .request import Answer, Request
from .wsgi import Dashboard

statements = load(Path(__file__).with_name("queries.sql"))
# the statements, each {state} written out as queries.sql names a job's state once
queries = {name: text.replace("{state}", statements["state"]) for name, text in statements.items()}
STATIC = Path(__file__).with_name("static")
ASSETS = {
    "style.css": "text/css; charset=utf-8",
    "refresh.js": "text/javascript; charset=utf-8",
    "icon.svg": "image/svg+xml",  # named by every page, so a browser asks no /favicon.ico of the app
}


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
    """The workers at work and those gone within control.KEPT: where each runs, what it works, its last beat."""
    rows = control.workers_listed(db)
    if not rows:
        return Answer(html.page(request, "Workers", "<p>No worker has run here in the last hour.</p>"))
    table = [
        [
            html.short_id(row["id"]),
            escaped(row["host"]),
            str(row["pid"]),
            escaped(", ".join(row["queues"])),
            str(row["threads"]),
            schema_step(row["version"]),
            html.moment(row["started_at"]),
            age((row["now"] - row["beat_at"]) / 1000) + " ago",
            row["state"] + (f" at {html.moment(row['ended_at'])}" if row["ended_at"] else ""),
            html.link(request, "/jobs", f"{row['holding']:,}", state="in_work", worker=row["id"]),
        ]
        for row in rows
    ]
    note = (
        f'<p class="muted">A worker beats {control.BEATS} times per lease; '
        f"one silent for {control.SILENT:g} of its lease is taken for gone, "
        "and the jobs it held go back to the queue. Its id is chosen at random when it starts: the last "
        f"{html.SHORT_ID} digits show, the whole id on hover. Its schema step is the last step of the "
        "queue's tables (schema.sql) its code needs: a worker behind this dashboard's code runs an older "
        "copy of the package, as during a rolling deploy.</p>"
    )
    headers = ["Worker", "Host", "PID", "Queues", "Threads", "Schema step", "Started", "Last beat", "State", "Holding"]
    return Answer(
        html.page(request, "Workers", html.table(headers, table, frozenset({"PID", "Threads", "Holding"})) + note)
    )


def schema_step(version: int) -> str:
    """The step of the tables a worker's code needs, said against this code's (schema.VERSION)."""
    if version == schema.VERSION:
        return f"{version}, as this code"
    return f"{version}, {'behind' if version < schema.VERSION else 'ahead of'} this code's {schema.VERSION}"


def asset(dashboard: Dashboard, request: Request, db: None, name: str) -> Answer:
    """The stylesheet, the refresh script or the icon, from static/ (a route with database=False: `db` is None)."""
    return Answer((STATIC / name).read_bytes(), content_type=ASSETS[name])
