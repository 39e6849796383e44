"""A job's page (GET /job/ID): its state, when it was queued, its attempts and their reasons, what may be done.

It reads the job by its primary key (queries.sql), in any state. Its arguments show
only when asked, and those its caller named secret (redaction.py) never show, even then.
"""

import json
from typing import Any

import psycopg
from psycopg.rows import dict_row

from ..core import arguments as redaction  # the secret arguments' part of it
from ..store import claims
from ..store.shelf import runs  # as the command line splits reasons by run
from . import html, params
from .html import escaped
from .pages import queries
from .wsgi import Answer, Dashboard, Refused, Request


def job(dashboard: Dashboard, request: Request, db: psycopg.Connection[Any], id_text: str) -> Answer:
    """A job's page: its state, when it was queued, its failed attempts with how long each ran, its traceback,
    and what may be done with it: run now (a job waiting for a later moment), retry, discard, cancel."""
    id = params.whole(id_text, "a job's id", status=404)
    with db.cursor(row_factory=dict_row) as cursor:
        found = cursor.execute(queries["job"], {"id": id, "now": claims.now_ms()}).fetchone()
    if found is None:
        raise Refused(404, f"job {id} is not in the table: it succeeded, was discarded, or never was")
    shown = request.query.get("args", [""])[0] == "shown"
    visible = redaction.hidden(found["args"], found["secret"])
    kept = f'<p class="muted">{redaction.HIDDEN}: a secret, never shown.</p>' if found["secret"] else ""
    args = (
        f"<pre>{escaped(json.dumps(visible, indent=2, ensure_ascii=False))}</pre>{kept}"
        if shown
        else html.link(request, f"/job/{id}", "show the arguments (they may hold secrets)", args="shown")
    )
    held = found["run_at"] == claims.HELD
    facts = [
        ("State", escaped(found["state"] + (" (cancelled: its worker is told)" if found["cancelled_at"] else ""))),
        ("Queue", escaped(found["queue"])),
        ("Name", escaped(found["name"])),
        ("Priority", escaped(found["priority"])),
        ("Attempts", f"{found['attempts']} of {found['max_attempts']}"),
        ("Queued at", html.moment(found["queued_at"]) if found["queued_at"] else "- (queued before the table kept it)"),
        (
            "Failed at" if found["state"] == "failed" else "Held by" if held else "Run at",
            html.link(request, "/jobs", f"worker {found['worker']}", state="in_work", worker=found["worker"])
            if held
            else html.moment(found["run_at"]),
        ),
        ("Concurrency key", escaped(found["key"] or "-")),
        ("Unique key", escaped(found["unique_key"] or "-")),
        ("Batch", html.link(request, f"/batch/{found['batch']}", found["batch"]) if found["batch"] else "-"),
    ]
    listed = "".join(f"<dt>{escaped(name)}</dt><dd>{value}</dd>" for name, value in facts)
    body = [f"<dl>{listed}<dt>Arguments</dt><dd>{args}</dd></dl>", '<div class="actions">']
    if found["state"] == "failed":
        body += [
            html.button(request, "retry", "Retry", {"id": id}),
            html.button(request, "discard", "Discard", {"id": id}, danger=True),
        ]
    else:
        if found["state"] == "scheduled":
            body.append(html.button(request, "run-now", "Run now", {"id": id}))
        body.append(html.button(request, "cancel", "Cancel", {"id": id}, danger=True))
    body.append("</div>")
    if found["reasons"]:
        body.append(
            "<h2>Failed attempts</h2>" + reasons_by_run(found["reasons"], found["retries"] or [], found["ran"] or {})
        )
    if found["traceback"]:
        body.append(f"<h2>Traceback of the last failure</h2><pre>{escaped(found['traceback'])}</pre>")
    return Answer(html.page(request, f"Job {id}: {found['name']}", "".join(body)))


def reasons_by_run(reasons: list[str], retries: list[int], ran: dict[str, int | None]) -> str:
    """A job's reasons, each with how long its attempt ran when known, a list per run when it was retried from
    the shelf (tables.runs)."""
    items = [f"<li>{escaped(reason)}{took(ran.get(str(index)))}</li>" for index, reason in enumerate(reasons)]
    listed = ["<ol>" + "".join(run) + "</ol>" for run in runs(items, retries)]
    if not retries:
        return listed[0]
    heads = [f"Run {n}" + (" (this one)" if n == len(listed) else "") for n in range(1, len(listed) + 1)]
    return "".join(f"<h3>{head}</h3>{items}" for head, items in zip(heads, listed, strict=True))


def took(ms: int | None) -> str:
    """How long an attempt ran, as a note after its reason; nothing when that is not known (step 11 of schema.sql)."""
    if ms is None:
        return ""
    return (
        f' <span class="muted">(ran {ms} ms)</span>'
        if ms < 1000
        else f' <span class="muted">(ran {ms / 1000:.1f} s)</span>'
    )
