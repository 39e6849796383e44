"""An ASGI app whose lifespan opens a connection that its jobs write through, and closes it when it shuts down.

tests/examples/test_asgi_shutdown.py runs it under uvicorn and stops it with SIGTERM while a
job is in hand, to show that the worker beside it stops before the app's shutdown begins.
"""

import asyncio
import contextlib
import os

import psycopg
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

import jobs

QUEUE = "lifespan"
HELD = 250_726  # the advisory lock the test holds while the job in hand waits for it: a number no other test uses
NOTES = "CREATE TABLE IF NOT EXISTS lifespan_notes (n int, what text)"  # what the jobs wrote, through the app
made: dict[str, psycopg.Connection] = {}  # what the app's startup made, for its performers


def connect() -> psycopg.Connection:
    return psycopg.connect(os.environ["DATABASE_URL"], autocommit=True)


@contextlib.asynccontextmanager
async def lifespan(app: Starlette):
    made["db"] = await asyncio.to_thread(connect)
    yield
    made["db"].close()  # what the app's shutdown undoes: a job that writes through it after fails


def noted(db, args: dict) -> None:
    """Notes its start through the app's connection, waits for the test's lock, then notes its end the same way."""
    made["db"].execute("INSERT INTO lifespan_notes VALUES (%s, 'started')", [args["n"]])
    db.execute("SELECT pg_advisory_xact_lock(%s)", [HELD])
    made["db"].execute("INSERT INTO lifespan_notes VALUES (%s, 'finished')", [args["n"]])


async def ready(request: Request) -> PlainTextResponse:
    return PlainTextResponse("ready")


app = jobs.beside_asgi(
    Starlette(routes=[Route("/", ready)], lifespan=lifespan), connect, QUEUE, {"noted": noted}, threads=1
)
