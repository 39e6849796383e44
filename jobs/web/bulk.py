"""Bulk actions on a list's filtered set: retry, discard or cancel every job that matches, previewed first.

GET /bulk shows how many jobs the action would take and changes nothing; its button
POSTs the same filters, and the action walks the list BULK_CHUNK jobs at a time, each
chunk a transaction of its own, so no row stays locked for long, for at most BULK_SECONDS
a request: a larger set says how far it got, with a button that goes on from there. Once
done, it sends the operator back to the list, saying what it did (back.py).
"""

import time
from typing import Any

import psycopg

from ..store import claims, control, shelf
from . import back, html, listing, lists, params
from .html import escaped
from .listing import Filters
from .request import Answer, Refused, Request
from .wsgi import Dashboard

BULK_CHUNK = 1_000  # jobs each transaction of a bulk action changes
BULK_SECONDS = 5.0  # seconds a bulk action's request works at most; it then says where to go on
PREVIEW_MAX = listing.WALK_MAX  # jobs a preview counts at most; past it, "at least"


def chosen(values: dict[str, list[str]]) -> tuple[str, Filters]:
    """The bulk action and the list it acts on; refused when the list's state does not allow it."""
    action = values.get("action", [""])[0]
    if action not in lists.ACTS_ON:
        raise Refused(400, f"action must be one of {', '.join(lists.ACTS_ON)}, not {action[:40]!r}")
    filters = lists.filters(values)
    if filters.state not in lists.ACTS_ON[action]:
        allowed = " or ".join(lists.ACTS_ON[action])
        raise Refused(400, f"{action} takes jobs that are {allowed}, not {filters.state}")
    return action, filters


def preview(dashboard: Dashboard, request: Request, db: psycopg.Connection[Any]) -> Answer:
    """How many jobs the bulk action would take (counted up to PREVIEW_MAX), and the button that runs it."""
    action, filters = chosen(request.query)
    matched, walked = listing.counted(db, filters, PREVIEW_MAX, claims.now_ms())
    count = f"{matched:,}" if walked < PREVIEW_MAX else f"At least {matched:,} (of the first {walked:,})"
    words = {"retry": "back in the queue", "discard": "deleted for good", "cancel": "cancelled"}[action]
    body = (
        f"<p>{count} {described(filters)} would be {words}, {BULK_CHUNK:,} per transaction.</p>"
        + form(request, action, filters, None, f"{action.capitalize()} them")
        + f"<p>{html.link(request, '/jobs', 'Back to the list', **lists.address(filters))}</p>"
    )
    return Answer(html.page(request, f"{action.capitalize()} every job that matches", body))


def run(dashboard: Dashboard, request: Request, db: psycopg.Connection[Any]) -> Answer:
    """Runs the bulk action chunk by chunk for up to BULK_SECONDS, and says what it changed and whether it is done."""
    action, filters = chosen(request.form)
    after = params.keyset(request.form, len(listing.KEYS[filters.state]))
    changed, named, ending = 0, 0, time.monotonic() + BULK_SECONDS
    while True:
        page = listing.listed(db, filters, after, BULK_CHUNK, claims.now_ms())
        ids = [job["id"] for job in page.jobs]
        named += len(ids)
        changed += acted(db, action, ids) if ids else 0
        after = page.next
        if after is None or time.monotonic() >= ending:
            break
    words = {"retry": "back in the queue", "discard": "discarded", "cancel": "cancelled"}[action]
    lines = [f"{changed:,} of {named:,} {described(filters, markup=False)} {words}."]
    if named > changed:
        lines.append(f"{named - changed:,} had moved on meanwhile, or stayed (see the job's page).")
    if after is None:  # done: back to the list, saying so
        back_to = lists.list_address(lists.address(filters))
        return back.redirect(dashboard.keys, request, " ".join(lines), back_to, dashboard.serves, to=back_to)
    more = form(request, action, filters, after, "Go on")
    lines = [escaped(line) for line in lines] + [
        f"It worked for {BULK_SECONDS:g} s and stopped: more may match. {more}"
    ]
    body = (
        html.note("<br>".join(lines))
        + f"<p>{html.link(request, '/jobs', 'Back to the list', **lists.address(filters))}</p>"
    )
    return Answer(html.page(request, action.capitalize(), body))


def acted(db: psycopg.Connection[Any], action: str, ids: list[int]) -> int:
    """Runs the action on one chunk of ids, in one transaction; answers how many it changed."""
    if action == "retry":
        return shelf.retried(db, *ids)
    if action == "discard":
        return shelf.discarded(db, *ids)
    return len(control.cancelled(db, *ids))


def described(filters: Filters, *, markup: bool = True) -> str:
    """The jobs a set names, in words: "failed jobs named note on mail"; HTML (its values escaped) unless `markup`
    is False."""
    said = escaped if markup else str
    words = f"{listing.STATE_NAMES[filters.state].lower()} jobs"
    if filters.name:
        words += f" named {said(filters.name)}"
    if filters.queue:
        words += f" on {said(filters.queue)}"
    if filters.worker:
        words += f" held by worker {filters.worker}"
    if filters.value:
        words += f" with an argument {said(filters.value)}"
    return words


def form(request: Request, action: str, filters: Filters, after: tuple[int, ...] | None, label: str) -> str:
    """The POST form of the bulk action, carrying its filters (and where to go on from) as hidden fields."""
    fields = {"action": action, **lists.address(filters), "after": lists.keyed(after)}
    given = {name: value for name, value in fields.items() if value is not None}
    return html.button(request, "bulk", label, given, danger=action != "retry")
