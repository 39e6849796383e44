"""The job queue's dashboard (jobs.web) mounted at /jobs, for the people who run the guestbook.

In development only the pages under the link the server printed show it
(development.py); otherwise only a signed-in account an operator granted it
(admins.py). The dashboard is a WSGI app of its own beside Flask's, on connections of
the same pool, whose CSRF tokens are signed with SECRET_KEY and bound to the
guestbook's session, and whose answers carry the guestbook's headers (headers.py). It
is handed the upkeep's schedules, for their next runs, and by `guestbook serve` the
worker beside the server, for its counters (shows_worker). A browser it refuses is
handed to Flask, whose 403 page (error.html) says who may see it.
"""

import os
from urllib.parse import urlsplit

from flask import abort, current_app, g, request, session
from werkzeug.middleware.dispatcher import DispatcherMiddleware

import jobs.web

from . import admins, auth, development, headers, upkeep
from .db import get_db

MOUNT = "/jobs"  # where the dashboard is served
# What a browser the dashboard refuses is told, on the guestbook's own 403 page, by mode (development or not).
REFUSALS = {
    True: "The dashboard shows only under the link the server printed when it started "
    '("Open http://127.0.0.1:5000/KEY/ to see /outbox and /jobs"): open it, and its Jobs link shows this page.',
    False: "The dashboard is for the accounts an operator granted it (python -m guestbook admins add ADDRESS): "
    "sign in with one.",
}


def init_app(app) -> None:
    """Mounts the dashboard at MOUNT, and tells the templates whom to show its link."""
    pool = app.extensions["guestbook.pool"]
    local = bool(app.config["DEVELOPMENT"])
    flask_app = app.wsgi_app
    dashboard = jobs.web.app(
        pool.connection,
        authorize=lambda environ: development.holds_key(environ) if local else admin(app, environ),
        schedules=upkeep.schedules,
        secret=app.secret_key,
        session=lambda environ: session_of(app, environ),
        origin=None if local else site(),
        refused=lambda environ, start_response: flask_app(unmounted(environ), start_response),
    )
    app.extensions["guestbook.dashboard"] = dashboard
    app.wsgi_app = DispatcherMiddleware(flask_app, {MOUNT: headers.around(dashboard, local)})
    # Reached only through `refused` above: the dispatcher hands every other request under MOUNT to the dashboard.
    app.add_url_rule(f"{MOUNT}/", "dashboard.refused", refused_page, methods=["GET", "POST"])
    app.add_url_rule(f"{MOUNT}/<path:rest>", "dashboard.refused", refused_page, methods=["GET", "POST"])
    # Under development's printed link the dashboard is too (request.script_root: /KEY).
    app.context_processor(lambda: {"dashboard": request.script_root + MOUNT if may_see(app) else None})


def refused_page(rest: str = ""):
    """The guestbook's 403 page for a browser the dashboard refused, saying who may see it."""
    abort(403, REFUSALS[bool(current_app.config["DEVELOPMENT"])])


def unmounted(environ):
    """A request for the dashboard as Flask would have seen it without the mount: its whole path in PATH_INFO."""
    script = environ.get("SCRIPT_NAME", "")
    return {**environ, "SCRIPT_NAME": script.removesuffix(MOUNT), "PATH_INFO": MOUNT + environ.get("PATH_INFO", "")}


def may_see(app) -> bool:
    """Whether this request's browser may open the dashboard: it holds development's key, or is an admin's."""
    if app.config["DEVELOPMENT"]:
        return development.holds_key(request.environ)
    return is_admin(g.get("account"))


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
