"""A Flask-SQLAlchemy app that queues a job on its session's transaction, and the performers of
the worker beside it:

    DATABASE_URL=postgresql://... flask --app examples.orders_flask run
    DATABASE_URL=postgresql://... python -m jobs work orders --performers examples.orders_flask:performers

POST /orders {"item": "tea"} adds the order and queues its receipt; both commit with the
session, or neither does.
"""

import os

import psycopg
from flask import Flask, request
from flask_sqlalchemy import SQLAlchemy
from sqlalchemy.orm import Mapped, mapped_column

import jobs

QUEUE = "orders"

app = Flask(__name__)
# SQLAlchemy on psycopg 3, the driver jobs queues on: postgresql+psycopg://
app.config["SQLALCHEMY_DATABASE_URI"] = "postgresql+psycopg://" + os.environ["DATABASE_URL"].split("://", 1)[1]
db = SQLAlchemy(app)


class Order(db.Model):  # type: ignore[name-defined]  # a model class made at run time
    __tablename__ = "flask_orders"
    id: Mapped[int] = mapped_column(primary_key=True)
    item: Mapped[str]
    receipt_sent: Mapped[bool] = mapped_column(default=False)


@app.post("/orders")
def ordered():
    item = (request.get_json(silent=True) or {}).get("item")
    if not isinstance(item, str) or not item:
        return {"error": "give an item"}, 422
    order = Order(item=item)
    db.session.add(order)
    db.session.flush()  # the order's id, on the session's transaction
    jobs.later(db.session, QUEUE, "receipt", {"order": order.id})  # on that transaction too
    db.session.commit()
    return {"order": order.id}, 201


@app.get("/orders/<int:order_id>")
def shown(order_id: int):
    order = db.session.get(Order, order_id)
    return ({"receipt_sent": order.receipt_sent}, 200) if order else ({"error": "no such order"}, 404)


def receipt(conn, args: dict) -> None:
    """The job, run by `python -m jobs work`: marks the receipt sent, on the job's own transaction."""
    conn.execute("UPDATE flask_orders SET receipt_sent = true WHERE id = %s", [args["order"]])


performers = {"receipt": receipt}

with psycopg.connect(os.environ["DATABASE_URL"], autocommit=True) as conn:
    jobs.prepared(conn)  # the jobs tables, beside the app's own
with app.app_context():
    db.create_all()
