"""The queues page: every queue that holds jobs, that a live worker serves or that a schedule queues to, with its
jobs by state, who serves it, its limit, its pause button, and its pulse over the last hour and day.

The counts are read by shelf.status, the workers from job_workers (queries.sql), and the
schedules are the code's, handed to `jobs.web.app`; the table is refreshed in place by the
page's script (/queues.fragment). A queue whose jobs are due while no live worker serves it
is said in words above the table. The pulse is read from job_pulse (pulse.py), never from
the jobs table, and drawn as inline SVG (chart.py).
"""

from typing import Any

import psycopg
from psycopg.rows import dict_row

from ..store import control, frontier, pulse, shelf
from ..store.shelf import age, has_limit, limit_said  # as the command line says them
from . import chart, html
from .html import escaped
from .pages import queries
from .request import Answer, Request
from .wsgi import Dashboard

REFRESH_EVERY = 5  # seconds between two looks of the queues page at its table
COUNTS = ("due", "scheduled", "in_work", "failed")


def queues(dashboard: Dashboard, request: Request, db: psycopg.Connection[Any]) -> Answer:
    """The queues page: each queue's figures, refreshed in place every REFRESH_EVERY seconds, and their pulse.

    Below the table, a form pauses a queue by name: one with no job yet is not in the
    table, and an operator may want it paused before its jobs come. Below that, the
    pulse of the last hour and day (chart.py), drawn when the page loads.
    """
    fragment = queues_table(request, every_queue(dashboard, db))
    body = (
        f'<div data-refresh="{escaped(request.url("/queues.fragment"))}" data-every="{REFRESH_EVERY}">'
        f"{fragment}</div>{pause_form(request)}{pulse_of(db)}{scraped(request)}"
    )
    return Answer(html.page(request, "Queues", body, refreshing=True))


def queues_fragment(dashboard: Dashboard, request: Request, db: psycopg.Connection[Any]) -> Answer:
    """The queues page's table alone, for the page's script to put in place of the old one."""
    return Answer(queues_table(request, every_queue(dashboard, db)))


def every_queue(dashboard: Dashboard, db: psycopg.Connection[Any]) -> list[dict[str, Any]]:
    """Each queue that holds jobs, is paused or limited (shelf.status), that a live worker serves, or that one of the
    code's schedules queues to, by name, with `workers` and `threads`: the live workers that serve it, and theirs."""
    figures = {queue["queue"]: queue for queue in shelf.status(db)}
    with db.cursor(row_factory=dict_row) as cursor:
        served = {
            row["queue"]: row for row in cursor.execute(queries["serving"], {"silent": control.SILENT, "now": None})
        }
    names = sorted(figures.keys() | served.keys() | {schedule.queue for schedule in dashboard.schedules})
    every = []
    for name in names:
        queue = figures.get(name) or idle(name)
        serving = served.get(name, {})
        every.append(queue | {"workers": serving.get("workers", 0), "threads": serving.get("threads", 0)})
    return every


def idle(name: str) -> dict[str, Any]:
    """The figures of a queue that holds no job and has no limit or pause: those of shelf.status, each nought."""
    counts = dict.fromkeys(COUNTS, 0)
    limits = dict.fromkeys(("limit_rate", "limit_per_ms", "limit_concurrency", "limit_per_key"))
    return {
        "queue": name,
        **counts,
        **limits,
        "estimated": [],
        "oldest_due_age": None,
        "paused": False,
        "limit_used": 0,
        "held_back": 0,
    }


def queues_table(request: Request, figures: list[dict[str, Any]]) -> str:
    """Each queue's counts by state, its oldest due job's age, who serves it, its limit if any and its pause or resume
    button; above them, each queue whose jobs are due while no live worker serves it, in words."""
    if not figures:
        return "<p>No queue yet: no job, no live worker, no schedule, and no queue is paused.</p>"
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
                served_by(queue),
                "yes" if queue["paused"] else "no",
                html.button(request, action[0], action[1], {"queue": queue["queue"]}, back_to="/"),
            ]
        )
    headers = ["Queue", "Due", "Scheduled", "In work", "Failed", "Oldest due", "Served by", "Paused", ""]
    if any(has_limit(queue) for queue in figures):  # the columns of limits show once a queue has one
        headers[-1:-1] = ["Limit", "Held back"]
        for row, queue in zip(rows, figures, strict=True):
            row[-1:-1] = [escaped(limit_said(queue)), f"{queue['held_back']:,}"]
    note = ""
    if any(queue["estimated"] for queue in figures):
        note = f'<p class="muted">~ an estimate: past {shelf.STATUS_EXACT:,} jobs, counts come from the indexes.</p>'
    table = html.table(headers, rows, frozenset({"Due", "Scheduled", "In work", "Failed", "Held back"}))
    return unserved(figures) + table + note


def served_by(queue: dict[str, Any]) -> str:
    """Who serves a queue, in words: "2 workers, 8 threads", or "no live worker"."""
    if not queue["workers"]:
        return '<strong class="alarm">no live worker</strong>' if queue["due"] else "no live worker"
    return f"{counted(queue['workers'], 'worker')}, {counted(queue['threads'], 'thread')}"


def counted(number: int, thing: str) -> str:
    """A number of things in words: "1 worker", "2 workers"."""
    return f"{number:,} {thing}" + ("" if number == 1 else "s")


def unserved(figures: list[dict[str, Any]]) -> str:
    """A line for each queue whose jobs are due while no live worker serves it: nothing will run them."""
    lines = []
    for queue in figures:
        if queue["due"] and not queue["workers"]:
            paused = " It is paused, too." if queue["paused"] else ""
            lines.append(
                f"No live worker serves {escaped(queue['queue'])}: {counted(queue['due'], 'job')} due, the oldest for "
                f"{age(queue['oldest_due_age'])}, and none will run until a worker of that queue starts.{paused}"
            )
    return html.note("<br>".join(lines), error=True) if lines else ""


def pause_form(request: Request) -> str:
    """A form that pauses the queue whose name is typed in."""
    return (
        f'<form class="actions" method="post" action="{escaped(request.root)}/pause">{html.token_field(request, "/")}'
        '<label>Queue to pause <input name="queue" required maxlength="200"></label>'
        '<button type="submit">Pause queue</button></form>'
    )


def pulse_of(db: psycopg.Connection[Any]) -> str:
    """The pulse of every queue over the last day, read from job_pulse at the database's moment."""
    now = frontier.database_now(db)
    since = now - now % pulse.MINUTE - chart.DAY * pulse.MINUTE
    return chart.section(pulse.read(db, since), now)


def scraped(request: Request) -> str:
    """Where a scraper finds the same figures and more, in Prometheus' text format."""
    return f'<p class="muted">For a scraper: {html.link(request, "/metrics", "metrics in Prometheus text format")}.</p>'
