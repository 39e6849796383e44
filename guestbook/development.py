"""What keeps development's own pages, /outbox and /jobs, to the person who started the server.

The server listens on 127.0.0.1 only, but every user of the machine can reach that,
and the outbox and the dashboard show live links. So, as Jupyter does, `guestbook
serve --development` prints a link holding a key (`link`): opening it once gives the
browser a cookie holding the key, and only a request carrying that cookie sees the
outbox or the dashboard. The key is an HMAC of SECRET_KEY (kept in .secret_key, which
only its owner may read), so it holds across restarts. `hosts_checked` keeps the
whole app, dashboard included, to the local Host names, against DNS rebinding.
"""

import hashlib
import hmac
from urllib.parse import urlencode

from flask import abort, current_app, redirect, request
from werkzeug.exceptions import SecurityError
from werkzeug.http import parse_cookie
from werkzeug.wsgi import get_host

COOKIE = "guestbook_key"  # the cookie that holds the key, once the printed link was opened
PARAM = "key"  # the query parameter of the printed link
COOKIE_MAX_AGE = 30 * 24 * 3600  # seconds a browser keeps the key: 30 days


def init_app(app) -> None:
    """Takes the key from the printed link (any page), and refuses /outbox without it."""
    app.before_request(key_taken)


def key(app) -> str:
    """The key of this SECRET_KEY."""
    secret = app.secret_key.encode() if isinstance(app.secret_key, str) else app.secret_key
    return hmac.new(secret, b"guestbook development key", hashlib.sha256).hexdigest()


def link(app, base: str) -> str:
    """The link to print at start: opened once, it lets the browser see /outbox and /jobs."""
    return f"{base.rstrip('/')}/?{urlencode({PARAM: key(app)})}"


def holds_key(app, environ) -> bool:
    """Whether the request carries the key's cookie."""
    held = parse_cookie(environ.get("HTTP_COOKIE", "")).get(COOKIE, "")
    return hmac.compare_digest(held.encode(), key(app).encode())


def key_taken():
    """Keeps the printed link's key in a cookie and sends the browser on without it in the address; guards /outbox."""
    given = request.args.get(PARAM)
    if given is not None:
        if not hmac.compare_digest(given.encode(), key(current_app).encode()):
            abort(403, "This key is not the one the server printed when it started.")
        others = {name: value for name, value in request.args.items(multi=True) if name != PARAM}
        answer = redirect(request.path + (f"?{urlencode(others)}" if others else ""))
        answer.set_cookie(COOKIE, given, max_age=COOKIE_MAX_AGE, httponly=True, samesite="Strict")
        return answer
    if request.endpoint == "outbox.index" and not holds_key(current_app, request.environ):
        abort(403, "The outbox shows only in the browser that opened the link the server printed when it started.")
    return None


def hosts_checked(wsgi_app, hosts: list[str]):
    """`wsgi_app` answering only requests whose Host is one of `hosts`; others get a plain-text 400."""

    def checked(environ, start_response):
        try:
            get_host(environ, trusted_hosts=hosts)
        except SecurityError:
            said = f"The Host header names a site this guestbook is not. It answers at {', '.join(hosts)} only.\n"
            start_response(
                "400 Bad Request",
                [("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", str(len(said.encode())))],
            )
            return [said.encode()]
        return wsgi_app(environ, start_response)

    return checked
