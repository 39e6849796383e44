"""The headers every answer carries, so that the browser enforces what the server cannot.

Content-Security-Policy allows this site's stylesheet and nothing else to run or load
(no scripts, no inline style), forms posted here only, and no framing by any site, so
nobody can lay their page over the confirm, unlock, reset or sign-out buttons. Pages
are never stored by a cache (they show accounts, and the links' URLs are secrets);
outside development, HSTS keeps browsers to HTTPS. The job queue's dashboard, a WSGI
app beside Flask's, gets the same headers (`around`), but for its own policy, which
allows its one script. Permissions-Policy says the same of the browser's features: the
pages use none (no camera, microphone, location, payment, USB...), so none is allowed
to any origin, this site and anything injected into it included.
"""

from flask import current_app, request

POLICY = "; ".join(
    [
        "default-src 'none'",  # nothing is allowed that a directive below does not allow
        "style-src 'self'",  # static/guestbook.css, and no <style> or style="" an injection could add
        "img-src 'self'",  # a browser's own look for /favicon.ico
        "form-action 'self'",  # forms post here only, even if markup were injected
        "frame-ancestors 'none'",  # no page may be framed: clickjacking
        "base-uri 'none'",
    ]
)
# The browser features a page could ask for, each allowed to no origin ("()"): the pages use none of them.
FEATURES = (
    "accelerometer",
    "autoplay",
    "camera",
    "display-capture",
    "encrypted-media",
    "fullscreen",
    "geolocation",
    "gyroscope",
    "hid",
    "idle-detection",
    "magnetometer",
    "microphone",
    "midi",
    "payment",
    "picture-in-picture",
    "publickey-credentials-get",
    "screen-wake-lock",
    "serial",
    "usb",
    "xr-spatial-tracking",
)
PERMISSIONS = ", ".join(f"{feature}=()" for feature in FEATURES)
HSTS_MAX_AGE = 365 * 24 * 3600  # seconds a browser keeps to HTTPS for this site after one answer: a year


def init_app(app) -> None:
    """Adds the headers to every answer."""
    app.after_request(guarded)


def guarded(response):
    """`response` with the policies, the caching rule and (outside development) HSTS."""
    response.headers["Content-Security-Policy"] = POLICY
    response.headers["X-Frame-Options"] = "DENY"  # frame-ancestors, for browsers older than CSP 2
    response.headers["Referrer-Policy"] = "no-referrer"  # keeps links with tokens out of Referer headers
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Permissions-Policy"] = PERMISSIONS
    if request.endpoint != "static":
        response.headers["Cache-Control"] = "no-store"
    if not current_app.config["DEVELOPMENT"]:
        response.headers["Strict-Transport-Security"] = f"max-age={HSTS_MAX_AGE}"
    return response


def around(wsgi_app, development: bool):
    """`wsgi_app` (the dashboard) with the headers every answer of the guestbook carries, but for its own policy."""
    added = [
        ("X-Frame-Options", "DENY"),
        ("Referrer-Policy", "no-referrer"),
        ("X-Content-Type-Options", "nosniff"),
        ("Permissions-Policy", PERMISSIONS),
        ("Cache-Control", "no-store"),
    ]
    if not development:
        added.append(("Strict-Transport-Security", f"max-age={HSTS_MAX_AGE}"))
    names = {name.lower() for name, _ in added}

    def headed(environ, start_response):
        def started(status, headers, exc_info=None):
            return start_response(status, [h for h in headers if h[0].lower() not in names] + added, exc_info)

        return wsgi_app(environ, started)

    return headed
