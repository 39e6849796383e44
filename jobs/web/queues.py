"""The queues page: each queue's jobs by state, its limit, its pause button, and its pulse over the last hour and day.

The table is read by shelf.status and refreshed in place by the page's script
(/queues.fragment); the pulse is read from job_pulse (pulse.py), never from the jobs
table, and drawn as inline SVG (chart.py).
"""

from typing import Any

import psycopg

from ..core.sql import one
from ..store import pulse, shelf
from ..store import queries as job_queries
from ..store.shelf import age, has_limit, limit_said  # as the command line says them
from . import chart, html
from .html import escaped
from .wsgi import Answer, Dashboard, Request

REFRESH_EVERY = 5  # seconds between two looks of the queues page at its table
COUNTS = ("due", "scheduled", "in_work", "failed")


def queues(dashboard: Dashboard, request: Request, db: psycopg.Connection[Any]) -> Answer:
    """The queues page: each queue's figures, refreshed in place every REFRESH_EVERY seconds, and their pulse.

    Below the table, a form pauses a queue by name: one with no job yet is not in the
    table, and an operator may want it paused before its jobs come. Below that, the
    pulse of the last hour and day (chart.py), drawn when the page loads.
    """
    fragment = queues_table(request, shelf.status(db))
    body = (
        f'<div data-refresh="{escaped(request.url("/queues.fragment"))}" data-every="{REFRESH_EVERY}">'
        f"{fragment}</div>{pause_form(request)}{pulse_of(db)}{scraped(request)}"
    )
    return Answer(html.page(request, "Queues", body, refreshing=True))


def queues_fragment(dashboard: Dashboard, request: Request, db: psycopg.Connection[Any]) -> Answer:
    """The queues page's table alone, for the page's script to put in place of the old one."""
    return Answer(queues_table(request, shelf.status(db)))


def queues_table(request: Request, figures: list[dict[str, Any]]) -> str:
    """Each queue's counts by state, its oldest due job's age, its limit if any and its pause or resume button."""
    if not figures:
        return "<p>No jobs, and no queue is paused.</p>"
    rows = []
    for queue in figures:
        counts = [("~" if state in queue["estimated"] else "") + f"{queue[state]:,}" for state in COUNTS]
        for index, state in enumerate(COUNTS[:3]):  # each count leads to its list (lists.py)
            counts[index] = html.link(request, "/jobs", counts[index], state=state, queue=queue["queue"])
        counts[3] = html.link(request, "/failed", counts[3], queue=queue["queue"])
        action = ("resume", "Resume") if queue["paused"] else ("pause", "Pause")
        rows.append(
            [
                escaped(queue["queue"]),
                *counts,
                age(queue["oldest_due_age"]),
                "yes" if queue["paused"] else "no",
                html.button(request, action[0], action[1], {"queue": queue["queue"]}),
            ]
        )
    headers = ["Queue", "Due", "Scheduled", "In work", "Failed", "Oldest due", "Paused", ""]
    if any(has_limit(queue) for queue in figures):  # the columns of limits show once a queue has one
        headers[-1:-1] = ["Limit", "Held back"]
        for row, queue in zip(rows, figures, strict=True):
            row[-1:-1] = [escaped(limit_said(queue)), f"{queue['held_back']:,}"]
    note = ""
    if any(queue["estimated"] for queue in figures):
        note = f'<p class="muted">~ an estimate: past {shelf.STATUS_EXACT:,} jobs, counts come from the indexes.</p>'
    return html.table(headers, rows, frozenset({"Due", "Scheduled", "In work", "Failed", "Held back"})) + note


def pause_form(request: Request) -> str:
    """A form that pauses the queue whose name is typed in."""
    return (
        f'<form class="actions" method="post" action="{escaped(request.root)}/pause">{html.token_field(request)}'
        '<label>Queue to pause <input name="queue" required maxlength="200"></label>'
        '<button type="submit">Pause queue</button></form>'
    )


def pulse_of(db: psycopg.Connection[Any]) -> str:
    """The pulse of every queue over the last day, read from job_pulse at the database's moment."""
    now: int = one(db.execute(job_queries["now"], {"now": None}))[0]
    since = now - now % pulse.MINUTE - chart.DAY * pulse.MINUTE
    return chart.section(pulse.read(db, since), now)


def scraped(request: Request) -> str:
    """Where a scraper finds the same figures and more, in Prometheus' text format."""
    return f'<p class="muted">For a scraper: {html.link(request, "/metrics", "metrics in Prometheus text format")}.</p>'
