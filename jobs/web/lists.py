"""The lists of jobs: by state (GET /jobs: due, scheduled, in work; GET /failed, the one failed view), filtered and
paged, and a batch's.

The state lists read their filters and keyset from the address (params.py), so a view
can be shared as a link, and their page through listing.py; a batch's page reads its
jobs by the batch's own index (queries.sql). A search for a whole number also finds the
job of that id, whatever its state. Arguments are never shown here, and those a job
names secret are never searched (core/arguments.py).
"""

from typing import Any
from urllib.parse import urlencode

import psycopg
from psycopg import sql
from psycopg.rows import dict_row

from ..store import claims
from . import failed, html, listing, params
from .html import escaped
from .listing import Filters
from .pages import queries
from .request import Answer, Refused, Request
from .wsgi import Dashboard

# The bulk actions (bulk.py), and the states whose lists offer each.
ACTS_ON = {"retry": ("failed",), "discard": ("failed",), "cancel": ("due", "scheduled", "in_work")}
# What a list says when it has no job, by state.
EMPTY = {
    "due": "No job is due.",
    "scheduled": "No job waits for a later moment.",
    "in_work": "No job is in work.",
    "failed": "No job has failed for good.",
}


def filters(values: dict[str, list[str]]) -> Filters:
    """The list's state and filters, as the address (or a bulk action's form) gives them."""
    state = values.get("state", ["due"])[0] or "due"
    if state not in listing.KEYS:
        raise Refused(400, f"state must be one of {', '.join(listing.KEYS)}, not {state[:40]!r}")
    return Filters(
        state=state,
        queue=params.text(values, "queue", "the queue"),
        name=params.text(values, "name", "the name"),
        worker=params.optional(values, "worker", "the worker"),
        value=params.text(values, "q", "the search"),
    )


def address(chosen: Filters, **changed: object) -> dict[str, object]:
    """The query parameters of a list's address for `chosen`, with `changed` on top."""
    given = {
        "state": chosen.state,
        "queue": chosen.queue,
        "name": chosen.name,
        "worker": chosen.worker,
        "q": chosen.value,
    }
    return given | changed


# Where each state's list is: the failed jobs' at /failed, the shelf the header names.
WHERE = {"failed": "/failed"}


def failed_list(dashboard: Dashboard, request: Request, db: psycopg.Connection[Any]) -> Answer:
    """The one failed view (GET /failed): the failed state's list, with tick boxes to retry or discard."""
    return state_list(request, db, filters(request.query | {"state": ["failed"]}))


def jobs_list(dashboard: Dashboard, request: Request, db: psycopg.Connection[Any]) -> Answer:
    """A page of the jobs in one state (GET /jobs), filtered by queue, name, worker or an argument's value."""
    return state_list(request, db, filters(request.query))


def state_list(request: Request, db: psycopg.Connection[Any], chosen: Filters) -> Answer:
    """A page of the jobs of `chosen`'s state that match its filters, with the tabs, the filters and what to do."""
    after = params.keyset(request.query, len(listing.KEYS[chosen.state]))
    limit = params.optional(request.query, "limit", "limit", largest=params.PAGE_MAX) or listing.PAGE
    now = claims.now_ms()
    page = listing.listed(db, chosen, after, limit, now)
    title = f"{listing.STATE_NAMES[chosen.state]} jobs" + (f" on {chosen.queue}" if chosen.queue else "")
    body = [tabs(request, chosen), filter_form(request, chosen), by_id(request, db, chosen.value, now)]
    if page.jobs and chosen.state == "failed":
        body.append(failed.shelf_form(request, db, page.jobs) + bulk_links(request, chosen))
    elif page.jobs:
        body.append(jobs_table(request, chosen.state, page.jobs) + bulk_links(request, chosen))
    elif not page.ran_out:
        body.append(f"<p>{EMPTY[chosen.state]}" + (" None matches the filters." if chosen.narrowing() else "") + "</p>")
    if page.ran_out:
        searched = (
            f"Searched {page.walked:,} jobs from here and found {len(page.jobs)}: narrow the filter by queue or name, "
            "or "
        )
        onwards = list_link(request, "search on →", address(chosen, after=keyed(page.next)))
        body.append(f'<p class="muted">{searched}{onwards}</p>')
    elif page.next is not None:
        onwards = list_link(request, "Next page →", address(chosen, after=keyed(page.next)))
        body.append(f"<p>{onwards}</p>")
    return Answer(html.page(request, title, "".join(body)))


def list_link(request: Request, text: str, given: dict[str, object]) -> str:
    """A link to the list `given` names by its state and filters."""
    return f'<a href="{escaped(request.root + list_address(given))}">{escaped(text)}</a>'


def list_address(given: dict[str, object]) -> str:
    """The address below the mount of the list `given` names: /failed for the failed jobs, /jobs for the rest."""
    state = str(given.get("state"))
    path, shown = (WHERE[state], {**given, "state": None}) if state in WHERE else ("/jobs", given)
    query = {name: value for name, value in shown.items() if value is not None}
    return path + (f"?{urlencode(query)}" if query else "")


def bulk_links(request: Request, chosen: Filters) -> str:
    """Links to the preview of each bulk action the list's state allows, on every job that matches its filters."""
    links = [
        html.link(request, "/bulk", f"{action.capitalize()} every job that matches…", action=action, **address(chosen))
        for action, states in ACTS_ON.items()
        if chosen.state in states
    ]
    return f'<p class="actions">{" ".join(links)}</p>'


def keyed(key: tuple[int, ...] | None) -> str | None:
    """A keyset as the address carries it."""
    return None if key is None else ",".join(str(part) for part in key)


def tabs(request: Request, chosen: Filters) -> str:
    """A link to each state's list, with the same filters; the one shown is marked."""
    links = []
    for state, name in listing.STATE_NAMES.items():
        if state == chosen.state:
            links.append(f'<strong aria-current="page">{escaped(name)}</strong>')
        else:
            links.append(list_link(request, name, address(chosen, state=state)))
    return f'<nav class="tabs" aria-label="States">{" ".join(links)}</nav>'


def filter_form(request: Request, chosen: Filters) -> str:
    """The filters as a form that GETs the list again, so the address keeps them."""

    def field(label: str, name: str, value: object, kind: str = "text") -> str:
        shown = "" if value is None else escaped(value)
        return (
            f'<label>{escaped(label)} <input type="{kind}" name="{name}" value="{shown}" '
            f'maxlength="{params.TEXT_MAX}"></label>'
        )

    return (
        f'<form class="actions filters" method="get" action="{escaped(request.url(WHERE.get(chosen.state, "/jobs")))}">'
        f'<input type="hidden" name="state" value="{escaped(chosen.state)}">'
        + field("Queue", "queue", chosen.queue)
        + field("Name", "name", chosen.name)
        + field("Worker", "worker", chosen.worker)
        + field("Job id or argument's value", "q", chosen.value, "search")
        + '<button type="submit">Filter</button> '
        + list_link(request, "Clear", {"state": chosen.state})
        + "</form>"
    )


def by_id(request: Request, db: psycopg.Connection[Any], searched: str | None, now: int) -> str:
    """When the search is a whole number, a line naming the job of that id, whatever its state."""
    if searched is None or not searched.isascii() or not searched.isdigit():
        return ""
    if len(searched) > len(str(params.BIGINT_MAX)) or not 1 <= int(searched) <= params.BIGINT_MAX:
        return ""  # no id is that large: the search is only an argument's value
    id = int(searched)
    with db.cursor(row_factory=dict_row) as cursor:
        found = cursor.execute(queries["job"], {"id": id, "now": now}).fetchone()
    if found is None:
        return f'<p class="muted">No job has the id {id}.</p>'
    job = html.link(request, f"/job/{id}", f"Job {id}")
    return f"<p>{job}: {escaped(found['name'])} on {escaped(found['queue'])}, {escaped(found['state'])}.</p>"


def jobs_table(request: Request, state: str, rows: list[dict[str, Any]]) -> str:
    """The jobs of a page, with what their state makes worth reading: when due, who holds it (failed.py shows the
    failed jobs)."""
    moment = {"due": "Due since", "scheduled": "Runs at", "in_work": "Held by"}[state]
    headers = ["Job", "Queue", "Name", "Priority", "Attempts", moment]
    table = []
    for job in rows:
        cells = [
            html.link(request, f"/job/{job['id']}", job["id"]),
            escaped(job["queue"]),
            escaped(job["name"]),
            str(job["priority"]),
            f"{job['attempts']} of {job['max_attempts']}",
            held(request, job) if state == "in_work" else html.moment(job["run_at"]),
        ]
        table.append(cells)
    return html.table(headers, table, frozenset({"Job", "Priority"}))


def held(request: Request, job: dict[str, Any]) -> str:
    """Who holds a job in work: its worker, linked to the jobs that worker holds, or its lease's end."""
    if job["worker"] is None:
        return f"a lease to {html.moment(job['run_at'])}"
    worker = html.worker_link(request, job["worker"])
    return worker if job["run_at"] == claims.HELD else f"{worker}, lease to {html.moment(job['run_at'])}"


def batch(dashboard: Dashboard, request: Request, db: psycopg.Connection[Any], id_text: str) -> Answer:
    """A batch's page: its progress, and its jobs still in the table (each that succeeded is gone), by id."""
    id = params.whole(id_text, "a batch's id", status=404)
    after = params.optional(request.query, "after", "after") or 0
    limit = params.optional(request.query, "limit", "limit", largest=params.PAGE_MAX) or listing.PAGE
    with db.cursor(row_factory=dict_row) as cursor:
        found = cursor.execute(queries["batch"], {"id": id}).fetchone()
        if found is None:
            raise Refused(404, f"batch {id} is not in the table: it finished and was pruned, or never was")
        statement = sql.SQL(queries["batch_jobs"]).format(limit=sql.Literal(limit))
        members = cursor.execute(statement, {"batch": id, "after": after, "now": claims.now_ms()}).fetchall()
    done = found["total"] - found["pending"]
    state = "finished" if found["finished_at"] else "cancelling" if found["cancelled_at"] else "running"
    body = [
        f"<p>{state.capitalize()} on {escaped(found['queue'])}, created {html.moment(found['created_at'])}: "
        f"{done:,} of {found['total']:,} settled, {found['failed']:,} failed, {found['cancelled']:,} cancelled.</p>"
    ]
    if not members:
        body.append("<p>No job of it is in the table" + (" after this one." if after else ": each succeeded.") + "</p>")
    else:
        rows = [
            [
                html.link(request, f"/job/{job['id']}", job["id"]),
                escaped(job["name"]),
                escaped(job["state"]),
                f"{job['attempts']} of {job['max_attempts']}",
                escaped(html.first_line(job["failure"])),
            ]
            for job in members
        ]
        body.append(html.table(["Job", "Name", "State", "Attempts", "Last reason"], rows, frozenset({"Job"})))
    if len(members) == limit:
        body.append(f"<p>{html.link(request, f'/batch/{id}', 'Next page →', after=members[-1]['id'])}</p>")
    return Answer(html.page(request, f"Batch {id}", "".join(body)))
