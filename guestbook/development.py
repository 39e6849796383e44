"""What keeps development's own pages, /outbox and /jobs, to the person who started the server.

The server listens on 127.0.0.1 only, but every user of the machine can reach that,
and the outbox and the dashboard show live links. So `guestbook serve --development`
prints a link holding a key (`link`), and those pages show only under it: `keyed`
serves the whole app under /KEY/ as well as at /, and a request that came that way
is the only one `holds_key`. The key is never a cookie: a browser sends its cookies
for 127.0.0.1 to every port of it (cookies ignore ports, and SameSite counts every
port as one site), so a page another user serves on 127.0.0.1:8099 would be sent it.
A path is the one thing a browser keeps to this origin: links and redirects under
/KEY/ (url_for, the dashboard's SCRIPT_NAME) stay under it, and Referrer-Policy
no-referrer keeps it out of the requests they lead to. The key is an HMAC of
SECRET_KEY (kept in .secret_key, which only its owner may read), so the link holds
across restarts. `hosts_checked` keeps the whole app to the local Host names, against
DNS rebinding.
"""

import hashlib
import hmac

from flask import abort, request
from werkzeug.exceptions import SecurityError
from werkzeug.wsgi import get_host

KEYED = "guestbook.development.keyed"  # the environ key `keyed` sets on a request that came under /KEY/


def init_app(app) -> None:
    """Refuses /outbox to every request that did not come under the printed link."""
    app.before_request(outbox_guarded)


def outbox_guarded() -> None:
    """A 403 for /outbox, unless the request holds the key."""
    if request.endpoint == "outbox.index" and not holds_key(request.environ):
        abort(403, "The outbox shows only under the link the server printed when it started: open that link.")


def key(app) -> str:
    """The key of this SECRET_KEY."""
    secret = app.secret_key.encode() if isinstance(app.secret_key, str) else app.secret_key
    return hmac.new(secret, b"guestbook development key", hashlib.sha256).hexdigest()


def link(app, base: str) -> str:
    """The link to print at start: its pages, and only they, show /outbox and /jobs."""
    return f"{base.rstrip('/')}/{key(app)}/"


def holds_key(environ) -> bool:
    """Whether the request came under the printed link (`keyed` said so)."""
    return environ.get(KEYED) is True


def keyed(wsgi_app, secret: str):
    """`wsgi_app`, which also answers under /`secret`/ (the key) as if mounted there, marking those requests KEYED."""
    prefix = f"/{secret}".encode()

    def app(environ, start_response):
        path = environ.get("PATH_INFO", "")
        first, _, rest = path.partition("/")[2].partition("/")
        if hmac.compare_digest(f"/{first}".encode(), prefix):  # in constant time: no guess is told it is near
            environ[KEYED] = True
            environ["SCRIPT_NAME"] = environ.get("SCRIPT_NAME", "") + f"/{first}"
            environ["PATH_INFO"] = f"/{rest}"
        return wsgi_app(environ, start_response)

    return app


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
