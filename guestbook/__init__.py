"""The guestbook: a Flask app whose letters leave from a job queue, so no request waits on mail.

How a request travels, file by file:
  __init__.py  `create_app` builds the app: configuration, the checks every request
               that may act passes (forms.py, csrf.py, then limits.py for the posts
               that cost a hash or a letter), the headers of every answer
               (headers.py), and one blueprint per feature.
  auth.py, unlocks.py, resets.py, renames.py, entries.py, outbox.py   the views.
  accounts.py  the SQL of the accounts table (queries.sql), on db.py's connection.
  sessions.py  the rows that sessions are, which signing out deletes; names.py the
               name an account signs its entries with, kept apart from its look-alikes
               by skeletons.py.
  tokens.py    the signed links; mailer.py queues the letters that carry them, and
               letters.py writes those when they leave, so no link dies waiting.
  upkeep.py    the jobs that run on a schedule on the mail worker (processes.py).
  settings.py  every setting `serve` and `work` read, checked before either starts;
               processes.py runs the two, and health.py answers /health.
  connections.py  what waitress, before the app, does with slow clients (server.py);
               proxies.py who the client is when proxies stand in front.
  dashboard.py the job queue's dashboard at /jobs, for the accounts admins.py says an
               operator granted it; development.py keeps /outbox and /jobs to the
               pages under the link printed at start, and every path to local Hosts.
"""

import os
from urllib.parse import urlsplit

from flask import Flask, render_template
from werkzeug.exceptions import HTTPException

from . import (
    auth,
    csrf,
    dashboard,
    db,
    development,
    entries,
    forms,
    headers,
    health,
    limits,
    names,
    outbox,
    passwords,
    renames,
    resets,
    sessions,
    settings,
    unlocks,
)

# The Host names development answers to: a page elsewhere that points its own name at
# 127.0.0.1 (DNS rebinding) is refused, so it cannot read /outbox and its links.
LOCAL_HOSTS = ("127.0.0.1", "localhost")
APP_SETTINGS = (  # the settings of settings.READERS that the app's config holds
    "SECRET_KEY",
    "DATABASE_URL",
    "MAIL_FROM",
    "RESET_TOKEN_MAX_AGE",
    "LETTERS_WAITING_MAX",
    "MAIL_RATE",
    "TRUSTED_PROXIES",
)


def create_app(config: dict | None = None) -> Flask:
    """Builds the app from the environment, with `config` (a mapping of settings) over it.

    Settings: SECRET_KEY and DATABASE_URL (required), MAIL_FROM, RESET_TOKEN_MAX_AGE
    (seconds), LETTERS_WAITING_MAX (mailer.backlogged), MAIL_RATE (mailer.rate_kept),
    TRUSTED_PROXIES (the networks of the proxies in front, whose X-Forwarded-For is
    believed: proxies.parsed), and
    DEVELOPMENT (True: the /outbox page and /jobs on the pages under the printed link
    (development.py), cookies without Secure, no HSTS, and only the Host names
    LOCAL_HOSTS and BASE_URL's, for every path).
    """
    app = Flask(__name__)
    config = config or {}
    app.config.from_mapping(settings_from_environment())
    app.config["SESSION_COOKIE_SECURE"] = not config.get("DEVELOPMENT")  # cookies over HTTPS only, but locally
    app.config.from_mapping(config)
    missing = [name for name in ("SECRET_KEY", "DATABASE_URL") if not app.config.get(name)]
    if missing:
        raise RuntimeError(f"the guestbook needs {' and '.join(missing)} to start")
    db.init_app(app)
    names.init_app(app)
    app.register_blueprint(auth.bp)  # first: its loader sets g.account before any check can refuse a request
    forms.init_app(app)
    csrf.init_app(app)
    limits.init_app(app)  # after the checks: a request they refuse costs nothing, and is not counted
    for blueprint in (entries.bp, unlocks.bp, resets.bp, renames.bp, health.bp):
        app.register_blueprint(blueprint)
    if app.config["DEVELOPMENT"]:
        development.init_app(app)
        app.register_blueprint(outbox.bp)
    dashboard.init_app(app)  # the job queue's dashboard at /jobs
    app.jinja_env.globals.update(
        PASSWORD_MIN=passwords.PASSWORD_MIN,
        PASSWORD_MAX=passwords.PASSWORD_MAX,
        ENTRY_MAX=entries.ENTRY_MAX,
        NAME_MAX=names.NAME_MAX,
        ANONYMOUS=names.ANONYMOUS,
    )
    app.register_error_handler(HTTPException, error_page)
    # Every page names static/icon.svg (base.html); a client that asks the old place anyway gets it there too.
    app.add_url_rule("/favicon.ico", "favicon", lambda: app.send_static_file("icon.svg"))
    headers.init_app(app)
    if app.config["DEVELOPMENT"]:  # outermost: no part of the app, the dashboard included, sees another Host
        # Flask's documented way to wrap an app in middleware, which mypy reads as assigning to a method.
        keyed = development.keyed(app.wsgi_app, development.key(app))  # the whole app under the printed link too
        app.wsgi_app = development.hosts_checked(keyed, local_hosts())  # type: ignore[method-assign]
    return app


def settings_from_environment() -> dict:
    """The app's settings as the environment gives them (settings.read), with their defaults; a ValueError names a
    setting that is not valid."""
    return {
        **settings.read(*APP_SETTINGS),
        "DEVELOPMENT": False,
        "SESSION_COOKIE_HTTPONLY": True,
        "SESSION_COOKIE_SAMESITE": "Lax",
        "PERMANENT_SESSION_LIFETIME": sessions.SESSION_MAX_AGE,  # the cookie's signature expires with the session
    }


def error_page(error: HTTPException):
    """A page saying what was wrong with the request, with its 4xx status and headers (such as Retry-After)."""
    headers = [(name, value) for name, value in error.get_headers() if name.lower() != "content-type"]
    return render_template("error.html", error=error), error.code, headers


def local_hosts() -> list[str]:
    """The Host names development answers to: LOCAL_HOSTS, and BASE_URL's when it names another."""
    base = urlsplit(os.environ.get("BASE_URL", "")).hostname
    return [*LOCAL_HOSTS, base] if base and base not in LOCAL_HOSTS else list(LOCAL_HOSTS)
