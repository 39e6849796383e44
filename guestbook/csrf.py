"""Cross-site request forgery: a form posted from another site is refused.

Each session holds a random token; every form the site renders carries it in a
hidden `csrf_token` field, and every request that may act (forms.acting: any method
but GET, HEAD and OPTIONS) whose field does not match the session's token is refused
before its view runs. Another site can make a browser post here, with its cookies,
but cannot read the token to put in the form.
"""

import secrets
from hmac import compare_digest

from flask import abort, request, session

from . import forms

FIELD = "csrf_token"  # the hidden form field, and the session key, that hold the token
TOKEN_BYTES = 32  # random bytes in a token
# Views that only refuse, whatever is posted (dashboard.py's 403 for a browser the dashboard
# refuses): they change nothing, and should say why they refuse rather than ask for a token.
REFUSING = {"dashboard.refused"}


def init_app(app) -> None:
    """Checks every request that may act, and gives templates `csrf_token()`."""
    app.before_request(checked)
    app.jinja_env.globals["csrf_token"] = token


def token() -> str:
    """The session's token, made on first use."""
    if FIELD not in session:
        session[FIELD] = secrets.token_urlsafe(TOKEN_BYTES)
    return session[FIELD]


def checked() -> None:
    """Refuses a request that may act whose csrf_token field is missing or is not the session's token."""
    if not forms.acting() or request.endpoint in REFUSING:
        return
    sent = request.form.get(FIELD, "")
    kept = session.get(FIELD, "")
    if not kept or not compare_digest(sent.encode(), kept.encode()):
        abort(400, "This form is out of date or was not sent from this site. Reload the page and try again.")
