"""What a page or an action is handed and answers: the request read from the WSGI environ, the answer, a refusal.

wsgi.py reads each request into a Request, hands it to the page or action its route
names, and sends back the Answer it returns; a Refused raised on the way becomes a page
saying what was wrong, with its 4xx status. csrf.py and html.py read the Request too.
"""

from dataclasses import dataclass, field
from http.cookies import CookieError, SimpleCookie
from urllib.parse import parse_qs, urlencode
from wsgiref.types import WSGIEnvironment

FORM_MAX = 256 * 1024  # bytes of a POST's body the dashboard reads at most; a larger one is refused


class Refused(Exception):
    """A request the dashboard will not answer as asked: its status and what was wrong, in words."""

    def __init__(self, status: int, message: str, allow: str | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.allow = status, message, allow


@dataclass
class Request:
    """What a page or an action needs of the WSGI environ."""

    environ: WSGIEnvironment
    method: str
    path: str  # below the mount: "/", "/failed", "/job/7"
    root: str  # where the dashboard is mounted (SCRIPT_NAME): "" or "/jobs"
    query: dict[str, list[str]]
    cookies: dict[str, str]
    form: dict[str, list[str]] = field(default_factory=dict)
    csrf: str = ""  # the page's CSRF token, for its forms
    said: str = ""  # the line the action that sent the operator here said (back.py), checked

    @classmethod
    def read(cls, environ: WSGIEnvironment) -> "Request":
        """The request in `environ`; its form is read later, once the request has been authorized."""
        try:
            jar = SimpleCookie(environ.get("HTTP_COOKIE", ""))
        except CookieError:
            jar = SimpleCookie()
        return cls(
            environ=environ,
            method=environ.get("REQUEST_METHOD", "GET").upper(),
            path=environ.get("PATH_INFO", "") or "/",
            root=environ.get("SCRIPT_NAME", "").rstrip("/"),
            query=parse_qs(environ.get("QUERY_STRING", ""), keep_blank_values=True),
            cookies={name: morsel.value for name, morsel in jar.items()},
        )

    def read_form(self) -> None:
        """Reads a POST's urlencoded body, refusing one that is too large or not UTF-8."""
        try:
            length = int(self.environ.get("CONTENT_LENGTH") or 0)
        except ValueError:
            raise Refused(400, "the request's Content-Length is not a number") from None
        if length > FORM_MAX:
            raise Refused(413, f"a form of the dashboard holds at most {FORM_MAX} bytes")
        body = self.environ["wsgi.input"].read(length) if length > 0 else b""
        try:
            self.form = parse_qs(body.decode("utf-8"), keep_blank_values=True, strict_parsing=False)
        except UnicodeDecodeError:
            raise Refused(400, "the form is not UTF-8 text") from None

    def url(self, path: str, **params: object) -> str:
        """The address of a page of the dashboard, with the query `params` that are not None."""
        given = {name: value for name, value in params.items() if value is not None}
        return self.root + path + (f"?{urlencode(given)}" if given else "")


@dataclass
class Answer:
    """What the dashboard sends back."""

    body: str | bytes
    status: int = 200
    content_type: str = "text/html; charset=utf-8"
    headers: list[tuple[str, str]] = field(default_factory=list)
