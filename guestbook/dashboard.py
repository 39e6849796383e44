"""The job queue's dashboard (jobs.web) mounted at /jobs, for the people who run the guestbook.

In development only the browser that opened the link the server printed may see it
(development.py); otherwise only a signed-in account an operator granted it
(admins.py). The dashboard is a WSGI app of its own beside Flask's, on connections of
the same pool, whose CSRF tokens are signed with SECRET_KEY and bound to the
guestbook's session, and whose answers carry the guestbook's headers (headers.py). It
is handed the upkeep's schedules, for their next runs, and by `guestbook serve` the
worker beside the server, for its counters (shows_worker).
"""

import os
from urllib.parse import urlsplit

from flask import g, session
from werkzeug.middleware.dispatcher import DispatcherMiddleware

import jobs.web

from . import admins, auth, development, headers, upkeep
from .db import get_db

MOUNT = "/jobs"  # where the dashboard is served


def init_app(app) -> None:
    """Mounts the dashboard at MOUNT, and tells the templates whom to show its link."""
    pool = app.extensions["guestbook.pool"]
    local = bool(app.config["DEVELOPMENT"])
    dashboard = jobs.web.app(
        pool.connection,
        authorize=lambda environ: development.holds_key(app, environ) if local else admin(app, environ),
        schedules=upkeep.schedules,
        secret=app.secret_key,
        session=lambda environ: session_of(app, environ),
        origin=None if local else site(),
    )
    app.extensions["guestbook.dashboard"] = dashboard
    app.wsgi_app = DispatcherMiddleware(app.wsgi_app, {MOUNT: headers.around(dashboard, local)})
    app.context_processor(lambda: {"dashboard": MOUNT if local or is_admin(g.get("account")) else None})


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


def session_of(app, environ) -> str:
    """The guestbook session a request carries, which the dashboard's CSRF tokens are bound to ("" for none)."""
    with app.request_context(environ):
        return str(session.get("session_id", ""))


def site() -> str | None:
    """The site's origin, from BASE_URL: what browsers send as Origin, whatever a proxy in front tells the app."""
    base = urlsplit(os.environ.get("BASE_URL", ""))
    return f"{base.scheme}://{base.netloc}" if base.scheme and base.netloc else None
