"""The queue's own dashboard: a WSGI app, standard library only, that any Python web app can mount.

wsgi.py     authorizes each request, routes it and checks a POST's CSRF token (csrf.py)
request.py  what a page or an action is handed (Request) and answers (Answer, or a Refused)
queues.py   the queues page, a GET that only reads: every queue that holds jobs, that a live worker serves or a
            schedule queues to, with its jobs by state, who serves it, its limit, and its pulse (chart.py)
pages.py    the other GETs, which only read: batches, schedules, workers
detail.py   a job's page
bulk.py     retry, discard or cancel every job a list's filters match: previewed, then in chunks
lists.py    the lists of jobs: by state, filtered and paged (listing.py reads them), and a batch's;
            the failed state's is the one failed view, /failed (failed.py)
actions.py  the POSTs, which change the queue and send the operator back saying what they did
back.py     where an action returns to (only a page of the dashboard), and the sealed line it says there
metrics.py  …/metrics in Prometheus' text format
html.py     the pages' HTML; static/ holds the one stylesheet, the one script and the icon
chart.py    the pulse's inline SVG charts
"""

import re
import secrets as randomness
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING
from wsgiref.types import WSGIApplication, WSGIEnvironment

from ..store.schedules import Schedule, held
from . import actions, bulk, csrf, detail, lists, metrics, pages, queues
from .request import Answer
from .wsgi import Dashboard, Opens, Route

if TYPE_CHECKING:  # a dashboard may be served with no worker in the process
    from ..runtime.worker import Worker

# The header the queues page's script sends with each look it takes on its own, every
# REFRESH_EVERY seconds: an app may leave such looks out of a session's activity, so an
# open tab nobody watches does not keep a person signed in (browsers with Fetch
# Metadata say as much in Sec-Fetch-Mode; this says it for every browser).
REFRESH_HEADER = "X-Jobs-Refresh"


def app(
    connect: Opens,
    authorize: Callable[[WSGIEnvironment], bool] | None = None,
    *,
    development: bool = False,
    worker: "Worker | None" = None,
    schedules: Iterable[Schedule] = (),
    secret: str | bytes | None = None,
    session: Callable[[WSGIEnvironment], str] | None = None,
    origin: str | None = None,
    refused: WSGIApplication | None = None,
) -> Dashboard:
    """The dashboard as a WSGI app, reading and writing the jobs table through `connect()`.

    connect: a function answering a new psycopg connection (closed after each request).
    authorize: authorize(environ) -> bool, asked on every request; False answers 403.
    There is no default that lets everyone in: without `authorize` the app refuses to be
    built, unless development=True, which lets in every request that reaches it (for a
    server listening on the loopback address only).
    worker: a Worker of this process, whose counters …/metrics then shows; one that starts
    after the app is built can be handed over later as the app's `worker` attribute.
    schedules: the code's schedules (made by jobs.every), for the schedules page to show
    their definitions and next runs beside what job_schedules records.
    secret: the key (str or bytes) the forms' CSRF tokens are signed with (csrf.py), such
    as the app's own secret key; without one, a random key of this process, so a form
    is refused by every other process that serves the dashboard, and after a restart.
    session: session(environ) -> str, what names the visitor's session in the app; the
    tokens are bound to it, so one taken from another session is refused.
    origin: the site's origin as browsers see it ("https://jobs.example.com"), when a
    proxy in front changes the scheme or Host the app sees: a POST whose Origin names
    another is refused, and an https origin makes the token's cookie Secure. None: the
    request's own scheme and Host.
    refused: a WSGI app that answers the requests `authorize` refuses, in the app's own
    pages (a sign-in page, a 403 saying who may see the dashboard); None: the
    dashboard's own 403 page. It is handed the environ as the dashboard got it.

    Mount it under a path, e.g. with Werkzeug's DispatcherMiddleware at "/jobs": its
    links start from SCRIPT_NAME.
    """
    if authorize is None:
        if not development:
            raise TypeError("jobs.web.app needs authorize=(environ) -> bool, or development=True to let everyone in")
        authorize = everyone
    key = randomness.token_bytes(csrf.TOKEN_BYTES) if secret is None else secret
    key = key.encode() if isinstance(key, str) else key
    return Dashboard(
        connect,
        authorize,
        ROUTES,
        worker,
        held(schedules),
        keys=csrf.Keys(key, session, origin.rstrip("/") if origin else None),
        refused=refused,
    )


def everyone(environ: WSGIEnvironment) -> bool:
    """Lets every request in: development's authorize, and only development's."""
    return True


def route(pattern: str, method: str, handler: Callable[..., Answer], *, database: bool = True) -> Route:
    return Route(re.compile(pattern), method, handler, database)


ROUTES = [
    route("/", "GET", queues.queues),
    route("/queues.fragment", "GET", queues.queues_fragment),
    route("/failed", "GET", lists.failed_list),
    route("/jobs", "GET", lists.jobs_list),
    route("/job/([^/]*)", "GET", detail.job),
    route("/batches", "GET", pages.batches),
    route("/batch/([^/]*)", "GET", lists.batch),
    route("/schedules", "GET", pages.schedules),
    route("/workers", "GET", pages.workers),
    route("/metrics", "GET", metrics.metrics),
    route(f"/({'|'.join(re.escape(name) for name in pages.ASSETS)})", "GET", pages.asset, database=False),
    route("/bulk", "GET", bulk.preview),
    route("/bulk", "POST", bulk.run),
    *(route(path, "POST", action) for path, action in actions.BY_PATH.items()),
]
