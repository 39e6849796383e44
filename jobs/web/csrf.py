"""The dashboard's own CSRF token: a random value in a cookie, and a form field that only the server can sign.

A page on another site can make a visitor's browser POST to the dashboard, with the
visitor's cookies; what it cannot do is read the dashboard's pages, so it cannot put a
valid token in its form. The cookie holds a random nonce; every form carries the nonce
and an HMAC of it, under the app's secret, together with the visitor's session (what
`session(environ)` answers, "" without one). A POST passes only if the form's nonce is
the cookie's and its HMAC is right for this session: a value chosen by the client, a
cookie planted by a neighbouring site, or a token taken from another session all fail.
A POST whose Origin (or, without one, Sec-Fetch-Site) names another site is refused
too, before its token is looked at.

The cookie is SameSite=Strict, so another site's request does not even carry it,
HttpOnly, since no script needs it, limited to the path the dashboard is mounted at,
and Secure whenever the dashboard is served over https (its `origin` says so, or the
request's scheme). It needs nothing of the app's own sessions, so any WSGI app can
mount the dashboard; an app that has sessions binds the token to them.
"""

import hashlib
import hmac
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from wsgiref.types import WSGIEnvironment

from .request import Request

COOKIE = "jobs_csrf"  # the cookie that holds the nonce
FIELD = "csrf"  # the form field that holds the nonce and its HMAC
TOKEN_BYTES = 32  # random bytes of a nonce, and of the secret made when the app is given none
SALT = b"jobs.web csrf"  # what sets the dashboard's HMACs apart from anything else the app's secret signs


@dataclass(frozen=True)
class Keys:
    """What the tokens of one dashboard are made with: `jobs.web.app`'s secret, session and origin."""

    secret: bytes
    session: Callable[[WSGIEnvironment], str] | None = None
    origin: str | None = None


def token(keys: Keys, request: Request) -> tuple[str, str | None]:
    """The page's token for its forms, and the Set-Cookie header value that gives a new nonce (None when it has one)."""
    nonce = request.cookies.get(COOKIE, "")
    cookie = None
    if len(nonce) < TOKEN_BYTES:
        nonce = secrets.token_urlsafe(TOKEN_BYTES)
        secure = "; Secure" if origin(keys, request).startswith("https://") else ""
        cookie = f"{COOKIE}={nonce}; Path={request.root or '/'}; HttpOnly; SameSite=Strict{secure}"
    return f"{nonce}.{signature(keys, request, nonce)}", cookie


def passed(keys: Keys, request: Request) -> bool:
    """Whether a POST's form carries the cookie's nonce, signed for this session."""
    held = request.cookies.get(COOKIE, "")
    nonce, _, signed = request.form.get(FIELD, [""])[0].partition(".")
    return (
        len(held) >= TOKEN_BYTES
        and hmac.compare_digest(held.encode(), nonce.encode())
        and hmac.compare_digest(signed.encode(), signature(keys, request, nonce).encode())
    )


def same_site(keys: Keys, request: Request) -> bool:
    """Whether a POST comes from the dashboard's own site, as far as the browser says (a client that says nothing
    does).

    Origin decides when it names a site. A browser sends "null" instead where the page's
    Referrer-Policy is no-referrer (as the guestbook's is), and then Sec-Fetch-Site,
    which no policy hides, says whether the form was the site's own.
    """
    sent: str = request.environ.get("HTTP_ORIGIN", "null")
    if sent != "null":
        return sent == origin(keys, request)
    return request.environ.get("HTTP_SEC_FETCH_SITE", "same-origin") in ("same-origin", "none")


def origin(keys: Keys, request: Request) -> str:
    """The site's origin as browsers see it: the one the app declared, else the request's own scheme and Host."""
    if keys.origin:
        return keys.origin
    environ = request.environ
    return f"{environ.get('wsgi.url_scheme', 'http')}://{environ.get('HTTP_HOST') or environ.get('SERVER_NAME', '')}"


def signature(keys: Keys, request: Request, nonce: str) -> str:
    """The HMAC of `nonce` and the visitor's session under the app's secret."""
    bound = keys.session(request.environ) if keys.session else ""
    message = SALT + b"\x00" + nonce.encode() + b"\x00" + str(bound).encode()
    return hmac.new(keys.secret, message, hashlib.sha256).hexdigest()
