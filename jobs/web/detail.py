"""A job's page (GET /job/ID): its state, when it was queued, its attempts and their reasons, what may be done.

It reads the job by its primary key (queries.sql), in any state. Its arguments show
only when asked, and those its caller named secret (core/arguments.py) never show, even then.
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
from .request import Answer, Refused, Request
from .wsgi import Dashboard

# What the page can say of when each attempt ran: the table keeps no moment per attempt.
KEPT = (
    "Each attempt shows how long it ran; the table keeps no moment of its own for each. The last shows when the job "
    "failed for good, or when its next attempt is due; the job's first attempt began after it was queued."
)
NONE_YET = "No attempt of this run has failed yet."  # under the run a retry from the shelf began, until one fails


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
            html.worker_link(request, found["worker"]) if held else html.moment(found["run_at"]),
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
            # a job discarded is gone: its page would answer 404, so the shelf is where the operator lands
            html.button(request, "discard", "Discard", {"id": id}, danger=True, back_to="/failed"),
        ]
    else:
        if found["state"] == "scheduled":
            body.append(html.button(request, "run-now", "Run now", {"id": id}))
        body.append(html.button(request, "cancel", "Cancel", {"id": id}, danger=True))
    body.append("</div>")
    if found["reasons"]:
        body.append(failed_attempts(found))
    if found["traceback"]:
        body.append(f"<h2>Traceback of the last failure</h2><pre>{escaped(found['traceback'])}</pre>")
    return Answer(html.page(request, f"Job {id}: {found['name']}", "".join(body)))


def failed_attempts(found: dict[str, Any]) -> str:
    """The section of a job's failed attempts: each one's reason, how long it ran, and the moment kept of the last."""
    listed = reasons_by_run(found["reasons"], found["retries"] or [], found["ran"] or {}, last_moment(found))
    return f'<h2>Failed attempts</h2>{listed}<p class="muted">{KEPT}</p>'


def last_moment(found: dict[str, Any]) -> str:
    """The moment the table keeps of a job's last failed attempt, in words: when it failed for good, or when the
    next attempt is due; "" when it keeps none (the job is due or in work again)."""
    if found["state"] == "failed":
        return f"failed for good at {html.moment(found['run_at'])}"
    if found["state"] == "scheduled":
        return f"next attempt due at {html.moment(found['run_at'])}"
    return ""


def reasons_by_run(reasons: list[str], retries: list[int], ran: dict[str, int | None], last: str = "") -> str:
    """A job's reasons, each with how long its attempt ran when known and the last with `last` (its moment), a list
    per run when it was retried from the shelf (tables.runs)."""
    items = [
        f"<li>{escaped(reason)}{took(ran.get(str(index)), last if index == len(reasons) - 1 else '')}</li>"
        for index, reason in enumerate(reasons)
    ]
    listed = ["<ol>" + "".join(run) + "</ol>" if run else f"<p>{NONE_YET}</p>" for run in runs(items, retries)]
    if not retries:
        return listed[0]
    heads = [f"Run {n}" + (" (this one)" if n == len(listed) else "") for n in range(1, len(listed) + 1)]
    return "".join(f"<h3>{head}</h3>{items}" for head, items in zip(heads, listed, strict=True))


def took(ms: int | None, moment: str = "") -> str:
    """How long an attempt ran and `moment`, as a note after its reason; nothing when neither is known (ran: step 11
    of schema.sql)."""
    said = [] if ms is None else [f"ran {ms} ms" if ms < 1000 else f"ran {ms / 1000:.1f} s"]
    said += [moment] if moment else []
    return f' <span class="muted">({escaped(", ".join(said))})</span>' if said else ""
