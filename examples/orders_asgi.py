"""An async app that queues a job on its own transaction: Starlette, psycopg's AsyncConnection,
and a worker beside it for as long as the server runs the app.

    DATABASE_URL=postgresql://... uvicorn examples.orders_asgi:app

POST /orders {"item": "tea"} writes the order and queues its receipt in one transaction;
the worker's performer marks the receipt sent, on the job's own transaction, exactly once.
"""

import os

import psycopg
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

import jobs

URL = os.environ["DATABASE_URL"]
QUEUE = "orders"
ORDERS = (
    "CREATE TABLE IF NOT EXISTS asgi_orders (id serial PRIMARY KEY, item text NOT NULL, receipt_sent bool DEFAULT false)"
)


def connect() -> psycopg.Connection:
    return psycopg.connect(URL, autocommit=True)


def receipt(db, args: dict) -> None:
    """The job: marks the order's receipt sent (a real app would send a letter here)."""
    db.execute("UPDATE asgi_orders SET receipt_sent = true WHERE id = %s", [args["order"]])


async def ordered(request: Request) -> JSONResponse:
    item = (await request.json()).get("item")
    if not isinstance(item, str) or not item:
        return JSONResponse({"error": "give an item"}, status_code=422)
    async with await psycopg.AsyncConnection.connect(URL) as aconn, aconn.transaction():
        cursor = await aconn.execute("INSERT INTO asgi_orders (item) VALUES (%s) RETURNING id", [item])
        (order,) = await cursor.fetchone() or (None,)
        await jobs.later(aconn, QUEUE, "receipt", {"order": order})  # commits with the order, or neither does
    return JSONResponse({"order": order}, status_code=201)


async def shown(request: Request) -> JSONResponse:
    async with await psycopg.AsyncConnection.connect(URL) as aconn:
        cursor = await aconn.execute("SELECT receipt_sent FROM asgi_orders WHERE id = %s", [request.path_params["id"]])
        row = await cursor.fetchone()
    if row is None:
        return JSONResponse({"error": "no such order"}, status_code=404)
    return JSONResponse({"receipt_sent": row[0]})


with connect() as db:
    jobs.prepared(db)
    db.execute(ORDERS)
routes = [Route("/orders", ordered, methods=["POST"]), Route("/orders/{id:int}", shown)]
app = jobs.beside_asgi(Starlette(routes=routes), connect, QUEUE, {"receipt": receipt})
