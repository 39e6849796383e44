"""Where an action sends the operator back to, and the one line it says there.

An action (actions.py) answers 303 See Other to the page its form came from, so a
reload repeats no POST, and the operator stays where they were. That page is the form's
`next` field, else the Referer, and only ever a page of this dashboard: a path that one
of its GET routes answers, below the mount, so no form or link can send the operator
off to another site (an open redirect). Anything else goes back to the action's own
default page.

What the action did travels in the address as text (`said`) with an HMAC of it (`seal`)
under the app's secret: the page shows the line only when the seal is right, always as
escaped text, so a link made elsewhere cannot put words of its own on the dashboard.
"""

import hashlib
import hmac
from collections.abc import Callable
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit

from . import csrf
from .request import Answer, Request

SALT = b"jobs.web said"  # sets these HMACs apart from the CSRF tokens' and anything else the secret signs
SAID_MAX = 400  # characters of the line an action says; a longer one is cut
SEAL_CHARS = 32  # hex characters of the HMAC kept in the address (128 bits)
CARRIED = ("said", "seal")  # the query parameters of the line, dropped from a page's own address


def redirect(
    keys: csrf.Keys, request: Request, line: str, default: str, answers: Callable[[str], bool], *, to: str | None = None
) -> Answer:
    """A 303 to the page the action came from (or `default`), or to `to` (a page of the dashboard the action chose
    itself), carrying `line` sealed."""
    said = line if len(line) <= SAID_MAX else line[: SAID_MAX - 1] + "…"
    path, query = split(to or destination(keys, request, answers) or default)
    query += [("said", said), ("seal", seal(keys, said))]
    return Answer("", 303, headers=[("Location", request.root + path + "?" + urlencode(query))])


def destination(keys: csrf.Keys, request: Request, answers: Callable[[str], bool]) -> str | None:
    """The form's `next`, else the Referer's path below the mount: a page of the dashboard, or None."""
    given = request.form.get("next", [""])[0]
    if not given:
        referer = urlsplit(request.environ.get("HTTP_REFERER", ""))
        if f"{referer.scheme}://{referer.netloc}" != csrf.origin(keys, request):
            return None
        if not referer.path.startswith(request.root + "/"):
            return None
        given = referer.path.removeprefix(request.root) + (f"?{referer.query}" if referer.query else "")
    parts = urlsplit(given)
    plain = given.isascii() and given.isprintable() and " " not in given  # nothing a header could be split at
    climbs = ".." in unquote(parts.path).split("/")  # "/job/%2e%2e" too, which a browser reads as ".."
    if not plain or parts.scheme or parts.netloc or not parts.path.startswith("/") or climbs:
        return None
    return given if answers(parts.path) else None


def split(address: str) -> tuple[str, list[tuple[str, str]]]:
    """A path below the mount and its query, without a line an earlier action left in it."""
    parts = urlsplit(address)
    query = [(name, value) for name, value in parse_qsl(parts.query, keep_blank_values=True) if name not in CARRIED]
    return parts.path, query


def here(request: Request) -> str:
    """The page's own address below the mount, as a form's `next` carries it back."""
    query = [(name, value) for name, values in request.query.items() if name not in CARRIED for value in values]
    return request.path + (f"?{urlencode(query)}" if query else "")


def said(keys: csrf.Keys, request: Request) -> str:
    """The line an action left in the page's address, when its seal is right; "" otherwise."""
    line = request.query.get("said", [""])[0]
    given = request.query.get("seal", [""])[0]
    return line if line and hmac.compare_digest(given.encode(), seal(keys, line).encode()) else ""


def seal(keys: csrf.Keys, line: str) -> str:
    """The HMAC of `line` under the app's secret, cut to SEAL_CHARS."""
    return hmac.new(keys.secret, SALT + b"\x00" + line.encode(), hashlib.sha256).hexdigest()[:SEAL_CHARS]
