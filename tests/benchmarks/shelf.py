"""The shelf at scale: status, pages of the shelf and the whole-shelf retry and discard beside a million rows.

The table holds `rows` jobs failed for good and as many scheduled FUTURE from now (2,000,000
in all at the default size), then each read is timed SAMPLES times and its median kept:
`status`, the shelf's first page, a page from the middle of its keyset and one queue's
page, and (when a dashboard is given) each of its pages. The whole-shelf retry and
discard are timed once each, end to end.
"""

import time
from io import BytesIO
from typing import Any

import jobs
import jobs.web

from . import database, timing
from .checks import FUTURE
from .queue import TABLE

SAMPLES = 20  # times each read is timed; the median is kept
WARMUP = 3  # reads timed first and thrown away (prepared statements, caches)


def rows_for(count: int):
    """Rows for `database.filled`: `count` failed for good, then `count` scheduled FUTURE from now."""
    now = jobs.now_ms()
    for _ in range(count):
        yield (now - database.PAST, jobs.ATTEMPTS, jobs.ATTEMPTS)
    for _ in range(count):
        yield (now + FUTURE, 0, jobs.ATTEMPTS)


def shelf(url: str, count: int, pages=None) -> dict:
    """Seconds each read takes beside `count` failed and `count` scheduled jobs, and the whole-shelf operations.

    `pages` maps a name to a function of a connection, for more reads to time (the dashboard's).
    """
    with database.connected(url) as db:
        database.filled(db, TABLE, rows_for(count))
        middle = count // 2
        reads = {
            "status": lambda: jobs.status(db),
            "failed, first page": lambda: jobs.failed(db),
            "failed, a page in the middle": lambda: jobs.failed(db, after=middle),
            "failed, one queue's first page": lambda: jobs.failed(db, database.QUEUE),
        } | {name: (lambda page=page: page(db)) for name, page in (pages or {}).items()}
        figures: dict[str, Any] = {name: median_seconds(read) for name, read in reads.items()}
        figures["status, estimated"] = [{state: q[state] for state in q["estimated"]} for q in jobs.status(db)]
        figures["retried(every=True)"] = seconds(lambda: jobs.retried(db, every=True))
        db.execute("UPDATE jobs SET max_attempts = attempts WHERE NOT scheduled")  # back on the shelf
        db.execute("VACUUM ANALYZE jobs")
        figures["discarded(every=True)"] = seconds(lambda: jobs.discarded(db, every=True))
        database.emptied(db, TABLE)
    return figures


def dashboard_pages(url: str, count: int) -> dict:
    """The dashboard's pages as reads to time, each a whole WSGI request on a connection of its own."""
    schedules = [
        jobs.every("nightly", cron="17 3 * * *", queue=database.QUEUE, name="note"),
        jobs.every("hourly", every=3600, queue=database.QUEUE, name="note"),
    ]
    dashboard = jobs.web.app(lambda: database.connected(url), authorize=lambda environ: True, schedules=schedules)
    paths = [
        "/",
        "/queues.fragment",
        "/failed",
        f"/failed?after={count // 2}",
        f"/failed?queue={database.QUEUE}",
        "/job/1",
        f"/job/{count + 1}",
        "/batches",
        "/schedules",
        "/metrics",
        # The lists of jobs by state (lists.py): each state's first page, a page deep in the
        # shelf, a name's filter and a search that walk WALK_MAX jobs finding none, a search
        # by id, and a bulk action's preview, which counts up to PREVIEW_MAX.
        "/jobs",
        "/jobs?state=scheduled",
        f"/jobs?state=scheduled&queue={database.QUEUE}",
        "/jobs?state=in_work",
        "/jobs?state=failed",
        f"/jobs?state=failed&queue={database.QUEUE}&after={count // 2}",
        f"/jobs?state=failed&queue={database.QUEUE}&name=nobody",
        "/jobs?state=scheduled&q=nothing",
        f"/jobs?q={count // 2}",
        "/bulk?action=retry&state=failed",
    ]
    return {f"dashboard {path}": (lambda db, path=path: requested(dashboard, path)) for path in paths}


def requested(dashboard, path: str) -> None:
    """One GET of `path` from the dashboard; a status other than 200 stops the benchmark."""
    route, _, query = path.partition("?")
    environ = {
        "REQUEST_METHOD": "GET",
        "PATH_INFO": route,
        "QUERY_STRING": query,
        "SCRIPT_NAME": "",
        "wsgi.input": BytesIO(),
        "wsgi.url_scheme": "http",
    }
    statuses = []
    b"".join(dashboard(environ, lambda status, headers: statuses.append(status)))
    if not statuses[0].startswith("200"):
        raise RuntimeError(f"the dashboard answered {path} with {statuses[0]}")


def median_seconds(read) -> float:
    """The median seconds of SAMPLES calls of `read`, after WARMUP calls."""
    for _ in range(WARMUP):
        read()
    return timing.median([seconds(read) for _ in range(SAMPLES)])


def seconds(call) -> float:
    """Seconds `call()` takes."""
    started = time.perf_counter()
    call()
    return time.perf_counter() - started
