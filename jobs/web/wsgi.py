"""The dashboard's WSGI plumbing: each request checked, routed to its page or action, and answered.

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
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from wsgiref.types import StartResponse, WSGIApplication, WSGIEnvironment

import psycopg

from ..store.schedules import Schedule
from . import back, csrf, html
from .request import Answer, Refused, Request

if TYPE_CHECKING:  # a dashboard may be served with no worker in the process
    from ..runtime.worker import Worker

REASONS = {
    200: "OK",
    303: "See Other",
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
        keys: csrf.Keys,
        refused: WSGIApplication | None = None,
    ) -> None:
        self.connect, self.authorize, self.routes, self.worker = connect, authorize, routes, worker
        self.schedules, self.refused = schedules, refused
        self.keys = keys  # what signs the forms' tokens and the actions' lines (csrf.py, back.py)

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
        request.csrf, cookie = csrf.token(self.keys, request)
        request.said = back.said(self.keys, request)
        if route.method == "POST":
            if not csrf.same_site(self.keys, request):
                raise Refused(403, "the form was sent from another site")
            request.read_form()
            if not csrf.passed(self.keys, request):
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

    def serves(self, path: str) -> bool:
        """Whether `path` (below the mount) is a page of the dashboard: a GET route matches it."""
        return any(route.method == "GET" and route.pattern.fullmatch(path) for route in self.routes)

    def refusal_page(self, request: Request, refusal: Refused) -> Answer:
        """A page saying what was wrong, with the refusal's status."""
        body = html.page(
            request, REASONS.get(refusal.status, "Refused"), html.note(html.escaped(refusal.message), error=True)
        )
        answer = Answer(body, refusal.status)
        if refusal.allow:
            answer.headers.append(("Allow", refusal.allow))
        return answer
