"""The job queue's dashboard (jobs.web) mounted at /jobs, for the people who run the guestbook.

In development anyone who reaches the server may see it (it listens on 127.0.0.1
only); otherwise only a signed-in account whose address ADMIN_EMAILS names. The
dashboard is a WSGI app of its own beside Flask's, on connections of the same pool; it
is handed the upkeep's schedules, for their next runs, and by `guestbook serve` the
worker beside the server, for its counters (shows_worker).
"""

from flask import g
from werkzeug.middleware.dispatcher import DispatcherMiddleware

import jobs.web

from . import auth, upkeep

MOUNT = "/jobs"  # where the dashboard is served


def init_app(app) -> None:
    """Mounts the dashboard at MOUNT, and tells the templates whom to show its link."""
    pool = app.extensions["guestbook.pool"]
    development = bool(app.config["DEVELOPMENT"])
    dashboard = jobs.web.app(pool.connection, authorize=None if development else lambda environ: admin(app, environ),
                             development=development, schedules=upkeep.schedules)
    app.extensions["guestbook.dashboard"] = dashboard
    app.wsgi_app = DispatcherMiddleware(app.wsgi_app, {MOUNT: dashboard})
    app.context_processor(lambda: {"dashboard": MOUNT if development or is_admin(app, g.get("account")) else None})


def shows_worker(app, worker) -> None:
    """Hands the dashboard the worker beside the server, whose counters /jobs/metrics then shows."""
    app.extensions["guestbook.dashboard"].worker = worker


def admins(app) -> set[str]:
    """The addresses ADMIN_EMAILS names (comma-separated), in lower case."""
    return {email.strip().lower() for email in app.config.get("ADMIN_EMAILS", "").split(",") if email.strip()}


def is_admin(app, account) -> bool:
    """Whether `account` (or None) may see the dashboard."""
    return account is not None and account.email.lower() in admins(app)


def admin(app, environ) -> bool:
    """Whether the request comes from a signed-in account that ADMIN_EMAILS names (the session decides)."""
    with app.request_context(environ):
        auth.load_signed_in_account()
        return is_admin(app, g.account)
