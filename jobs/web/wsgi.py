"""The dashboard's WSGI plumbing: the request read from the environ, the answer, and the routing.

Every request passes the same checks in order: `authorize(environ)`, the route and its
method (GET and HEAD only read, POST only acts), and for a POST its origin and CSRF
token (csrf.py). The page or action then runs on a connection of its own, in autocommit, so
no transaction outlives its statement, and the connection closes with the request.
A bad request gets a page saying what was wrong with a 4xx status, and writes nothing.
"""

import logging
import re
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from http.cookies import CookieError, SimpleCookie
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlencode
from wsgiref.types import StartResponse, WSGIApplication, WSGIEnvironment

import psycopg

from ..store.schedules import Schedule
from . import csrf, html

if TYPE_CHECKING:  # a dashboard may be served with no worker in the process
    from ..runtime.worker import Worker

FORM_MAX = 256 * 1024  # bytes of a POST's body the dashboard reads at most; a larger one is refused
REASONS = {
    200: "OK",
    400: "Bad Request",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    413: "Content Too Large",
    500: "Internal Server Error",
    503: "Service Unavailable",
}

log = logging.getLogger("jobs.web")

# How the dashboard opens the connection of a request: a function answering a new psycopg
# connection, or what a `with` ends as a pool's `connection` does (it gives the connection back).
Opens = Callable[[], AbstractContextManager[psycopg.Connection[Any]]]


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


@dataclass
class Route:
    """A path of the dashboard: a pattern whose groups are the handler's arguments, and who answers it."""

    pattern: re.Pattern[str]
    method: str  # "GET" (HEAD too) or "POST"
    handler: Callable[..., Answer]  # handler(dashboard, request, db, *groups) -> Answer
    database: bool = True  # whether it needs a connection


# Headers on every answer: no page of the dashboard may be framed, cached, or load anything
# from elsewhere; the policy names the only stylesheet, script and icon it serves.
GUARDS = [
    (
        "Content-Security-Policy",
        "default-src 'none'; style-src 'self'; script-src 'self'; connect-src 'self'; img-src 'self'; "
        "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    ),
    ("X-Frame-Options", "DENY"),  # frame-ancestors, for browsers older than CSP 2
    ("X-Content-Type-Options", "nosniff"),
    ("Referrer-Policy", "same-origin"),
    ("Cache-Control", "no-store"),
]


class Dashboard:
    """The WSGI app `jobs.web.app` builds: checks each request, finds its route and answers."""

    def __init__(
        self,
        connect: Opens,
        authorize: Callable[[WSGIEnvironment], bool],
        routes: list[Route],
        worker: "Worker | None" = None,
        schedules: tuple[Schedule, ...] = (),
        *,
        secret: bytes,
        session: Callable[[WSGIEnvironment], str] | None = None,
        origin: str | None = None,
        refused: WSGIApplication | None = None,
    ) -> None:
        self.connect, self.authorize, self.routes, self.worker = connect, authorize, routes, worker
        self.schedules, self.refused = schedules, refused
        self.secret, self.session, self.origin = secret, session, origin  # the CSRF token's (csrf.py)

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        allowed = self.authorize(environ)
        if not allowed and self.refused is not None:
            return self.refused(environ, start_response)
        request = Request.read(environ)
        try:
            answer = self.answered(request, allowed)
        except Refused as refusal:
            answer = self.refusal_page(request, refusal)
        except psycopg.OperationalError as error:
            log.warning("the dashboard could not reach the database: %s", error)
            answer = self.refusal_page(request, Refused(503, "the database could not be reached; try again soon"))
        except psycopg.Error as error:
            # A missing table, a role without privileges: the operator needs the server's words.
            log.error("the database refused the dashboard's statement: %s", error)
            answer = self.refusal_page(request, Refused(503, f"the database refused the statement: {error}"))
        headers = [("Content-Type", answer.content_type), *GUARDS, *answer.headers]
        body = answer.body.encode("utf-8") if isinstance(answer.body, str) else answer.body
        headers.append(("Content-Length", str(len(body))))
        start_response(f"{answer.status} {REASONS.get(answer.status, '')}".strip(), headers)
        return [b""] if request.method == "HEAD" else [body]

    def answered(self, request: Request, allowed: bool) -> Answer:
        """Routes and runs the request `authorize` allowed; raises Refused for anything it will not do."""
        if not allowed:
            raise Refused(403, "you may not see the queue's dashboard")
        route, groups = self.route(request)
        request.csrf, cookie = csrf.token(self, request)
        if route.method == "POST":
            if not csrf.same_site(self, request):
                raise Refused(403, "the form was sent from another site")
            request.read_form()
            if not csrf.passed(self, request):
                raise Refused(403, "the form's CSRF token is missing or does not match: reload the page and try again")
        if not route.database:
            answer = route.handler(self, request, None, *groups)
        else:
            with self.connect() as db:
                db.autocommit = True
                answer = route.handler(self, request, db, *groups)
        if cookie:
            answer.headers.append(("Set-Cookie", cookie))
        return answer

    def route(self, request: Request) -> tuple[Route, tuple[str, ...]]:
        """The route of the request's path and method, and the groups its pattern matched."""
        matching = [(route, match) for route in self.routes if (match := route.pattern.fullmatch(request.path))]
        if not matching:
            raise Refused(404, f"the dashboard has no page {request.path}")
        method = "GET" if request.method == "HEAD" else request.method
        for route, match in matching:
            if route.method == method:
                return route, match.groups()
        allowed = ", ".join(
            sorted(
                {route.method for route, _ in matching}
                | ({"HEAD"} if any(route.method == "GET" for route, _ in matching) else set())
            )
        )
        raise Refused(405, f"{request.path} answers {allowed} only", allow=allowed)

    def refusal_page(self, request: Request, refusal: Refused) -> Answer:
        """A page saying what was wrong, with the refusal's status."""
        body = html.page(
            request, REASONS.get(refusal.status, "Refused"), html.note(html.escaped(refusal.message), error=True)
        )
        answer = Answer(body, refusal.status)
        if refusal.allow:
            answer.headers.append(("Allow", refusal.allow))
        return answer
