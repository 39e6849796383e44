"""The queue's own dashboard: a WSGI app, standard library only, that any Python web app can mount.

  wsgi.py     reads the request, authorizes it, routes it and checks a POST's CSRF token (csrf.py)
  pages.py    the GETs, which only read: queues, the failed shelf, a job, batches, schedules, workers
  actions.py  the POSTs, which change the queue and answer what they changed
  metrics.py  …/metrics in Prometheus' text format
  html.py     the pages' HTML; static/ holds the one stylesheet and the one script
"""

import re

from ..schedules import held
from . import actions, metrics, pages
from .wsgi import Dashboard, Route


def app(connect, authorize=None, *, development: bool = False, worker=None, schedules=()) -> Dashboard:
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

    Mount it under a path, e.g. with Werkzeug's DispatcherMiddleware at "/jobs": its
    links start from SCRIPT_NAME.
    """
    if authorize is None:
        if not development:
            raise TypeError("jobs.web.app needs authorize=(environ) -> bool, or development=True to let everyone in")
        authorize = everyone
    return Dashboard(connect, authorize, ROUTES, worker, held(schedules))


def everyone(environ) -> bool:
    """Lets every request in: development's authorize, and only development's."""
    return True


def route(pattern: str, method: str, handler, *, database: bool = True) -> Route:
    return Route(re.compile(pattern), method, handler, database)


ROUTES = [
    route("/", "GET", pages.queues),
    route("/queues.fragment", "GET", pages.queues_fragment),
    route("/failed", "GET", pages.failed),
    route("/job/([^/]*)", "GET", pages.job),
    route("/batches", "GET", pages.batches),
    route("/schedules", "GET", pages.schedules),
    route("/workers", "GET", pages.workers),
    route("/metrics", "GET", metrics.metrics),
    route(f"/({'|'.join(re.escape(name) for name in pages.ASSETS)})", "GET", pages.asset, database=False),
    route("/retry", "POST", actions.retry),
    route("/discard", "POST", actions.discard),
    route("/cancel", "POST", actions.cancel),
    route("/pause", "POST", actions.pause),
    route("/resume", "POST", actions.resume),
]
