"""The dashboard's actions, each a POST that changes the queue, then sends the operator back saying what it changed.

retry and discard take one job, a selection, or every job a page showed (the form's
`id` boxes, or its `shown` ids with `all_shown`); cancel and run now take a job; pause and resume
a queue. By the time one runs, wsgi.py has authorized the request and checked its
CSRF token; the ids are checked here (params.py) before anything is written. Each
answers 303 to the page its form came from, with one line saying what it did (back.py).
"""

from collections.abc import Iterable
from typing import Any

import psycopg

from ..store import control, shelf
from . import back, params
from .pages import queries
from .request import Answer, Request
from .wsgi import Dashboard

LISTED_MAX = 10  # job ids a line names at most; past them, how many more


def answered(dashboard: Dashboard, request: Request, lines: list[str], default: str) -> Answer:
    """Back to the page the action came from (`default`, below the mount, when none is known), saying `lines` as
    one line."""
    return back.redirect(dashboard.keys, request, " ".join(lines), default, dashboard.serves)


def listed(ids: Iterable[int]) -> str:
    """Job ids as a short list in words."""
    named = [str(id) for id in ids]
    more = len(named) - LISTED_MAX
    return ", ".join(named[:LISTED_MAX]) + (f" and {more} more" if more > 0 else "")


def retry(dashboard: Dashboard, request: Request, db: psycopg.Connection[Any]) -> Answer:
    """Puts the chosen jobs from the shelf back in the queue; says which went back and which stayed."""
    chosen = params.ids(request.form)
    back = shelf.retried(db, *chosen)
    stayed = [row[0] for row in db.execute(queries["still_shelved"], {"ids": chosen})]
    lines = [f"{back} of {len(chosen)} back in the queue, due now."]
    if stayed:
        lines.append(f"Still on the shelf, since another job with its unique key waits or runs: {listed(stayed)}.")
    if back + len(stayed) < len(chosen):
        lines.append(f"{len(chosen) - back - len(stayed)} were not on the shelf (retried or discarded already).")
    for queue in control.paused_holding(db, chosen) if back else []:
        lines.append(f"Queue {queue} is paused: they wait until it is resumed.")
    return answered(dashboard, request, lines, "/failed")


def discard(dashboard: Dashboard, request: Request, db: psycopg.Connection[Any]) -> Answer:
    """Deletes the chosen jobs from the shelf; says how many."""
    chosen = params.ids(request.form)
    gone = shelf.discarded(db, *chosen)
    lines = [f"{gone} of {len(chosen)} discarded: deleted for good."]
    if gone < len(chosen):
        lines.append(f"{len(chosen) - gone} were not on the shelf (retried or discarded already).")
    return answered(dashboard, request, lines, "/failed")


def cancel(dashboard: Dashboard, request: Request, db: psycopg.Connection[Any]) -> Answer:
    """Cancels the chosen jobs; says which were waiting and which running."""
    chosen = params.ids(request.form)
    done = control.cancelled(db, *chosen)
    lines = []
    if done.shelved:
        lines.append(f"Waiting, now on the failed shelf as cancelled, and will not run: {listed(done.shelved)}.")
    if done.signalled:
        lines.append(f"Running: {listed(done.signalled)}. For each, {control.RUNNING_CANCELLED}.")
    rest = [id for id in chosen if id not in done.shelved and id not in done.signalled]
    if rest:
        lines.append(f"Neither waiting nor running (no such job, or on the shelf already): {listed(rest)}.")
    return answered(dashboard, request, lines, "/")


def run_now(dashboard: Dashboard, request: Request, db: psycopg.Connection[Any]) -> Answer:
    """Makes a job that waits for a later moment due now; says so, or why it changed nothing."""
    id = params.ids(request.form)[0]
    queue = control.hastened(db, id)
    if queue is None:
        line = f"Job {id} waits for no later moment (due already, in work, on the shelf, or gone): nothing changed."
    else:
        line = f"Job {id} is due now: a worker of queue {queue} takes it next in its order."
        if queue in control.paused_holding(db, [id]):
            line += f" Queue {queue} is paused: it waits until it is resumed."
    return answered(dashboard, request, [line], f"/job/{id}")


def pause(dashboard: Dashboard, request: Request, db: psycopg.Connection[Any]) -> Answer:
    """Pauses a queue."""
    queue = params.queue(request.form)
    line = (
        f"Queue {queue} paused: workers claim none of its jobs until it is resumed."
        if control.paused(db, queue)
        else f"Queue {queue} was paused already."
    )
    return answered(dashboard, request, [line], "/")


def resume(dashboard: Dashboard, request: Request, db: psycopg.Connection[Any]) -> Answer:
    """Resumes a queue."""
    queue = params.queue(request.form)
    line = f"Queue {queue} resumed." if control.resumed(db, queue) else f"Queue {queue} was not paused."
    return answered(dashboard, request, [line], "/")


# Each action by the path its form posts to, below the dashboard's mount (the app's ROUTES).
BY_PATH = {
    "/retry": retry,
    "/discard": discard,
    "/cancel": cancel,
    "/run-now": run_now,
    "/pause": pause,
    "/resume": resume,
}
