"""The job queue's dashboard (jobs.web) mounted at /jobs, for the people who run the guestbook.

In development anyone who reaches the server may see it (it listens on 127.0.0.1
only); otherwise only a signed-in account an operator granted it (admins.py). The
dashboard is a WSGI app of its own beside Flask's, on connections of the same pool; it
is handed the upkeep's schedules, for their next runs, and by `guestbook serve` the
worker beside the server, for its counters (shows_worker).
"""

from flask import g
from werkzeug.middleware.dispatcher import DispatcherMiddleware

import jobs.web

from . import admins, auth, upkeep
from .db import get_db

MOUNT = "/jobs"  # where the dashboard is served


def init_app(app) -> None:
    """Mounts the dashboard at MOUNT, and tells the templates whom to show its link."""
    pool = app.extensions["guestbook.pool"]
    development = bool(app.config["DEVELOPMENT"])
    dashboard = jobs.web.app(pool.connection, authorize=None if development else lambda environ: admin(app, environ),
                             development=development, schedules=upkeep.schedules)
    app.extensions["guestbook.dashboard"] = dashboard
    app.wsgi_app = DispatcherMiddleware(app.wsgi_app, {MOUNT: dashboard})
    app.context_processor(lambda: {"dashboard": MOUNT if development or is_admin(g.get("account")) else None})


def shows_worker(app, worker) -> None:
    """Hands the dashboard the worker beside the server, whose counters /jobs/metrics then shows."""
    app.extensions["guestbook.dashboard"].worker = worker


def is_admin(account) -> bool:
    """Whether `account` (or None) may see the dashboard: an operator granted it (admins.py)."""
    return admins.holds(get_db(), account)


def admin(app, environ) -> bool:
    """Whether the request comes from a signed-in account that holds the dashboard (the session decides)."""
    with app.request_context(environ):
        auth.load_signed_in_account()
        return is_admin(g.account)
