"""The dashboard's own CSRF token: a random value in a cookie, which every form repeats.

A page on another site can make a visitor's browser POST to the dashboard, and the
browser would send the visitor's cookies with it; what that page cannot do is read
the dashboard's cookie, so it cannot write the same value into the form. A POST whose
form field and cookie differ (or lack either) is refused before anything is read. The
cookie is SameSite=Strict, so another site's request does not even carry it, HttpOnly,
since no script needs it, and limited to the path the dashboard is mounted at; it does
not depend on the app's own sessions, so any WSGI app can mount the dashboard.
"""

import hmac
import secrets

COOKIE = "jobs_csrf"  # the cookie that holds the token
FIELD = "csrf"  # the form field that repeats it
TOKEN_BYTES = 32  # random bytes of a token


def token(request) -> tuple[str, str | None]:
    """The request's token, and the Set-Cookie header value that gives a new one (None when it has one)."""
    held = request.cookies.get(COOKIE, "")
    if len(held) >= TOKEN_BYTES:
        return held, None
    fresh = secrets.token_urlsafe(TOKEN_BYTES)
    secure = "; Secure" if request.environ.get("wsgi.url_scheme") == "https" else ""
    return fresh, f"{COOKIE}={fresh}; Path={request.root or '/'}; HttpOnly; SameSite=Strict{secure}"


def passed(request) -> bool:
    """Whether a POST's form repeats the token its cookie holds."""
    held = request.cookies.get(COOKIE, "")
    sent = request.form.get(FIELD, [""])[0]
    return len(held) >= TOKEN_BYTES and hmac.compare_digest(held.encode(), sent.encode())
