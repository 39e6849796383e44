"""/health: whether this web process can do its work, asked by a load balancer, a monitor or an operator.

It answers 200 when a `SELECT 1` on the database succeeds and a live worker serves the
mail queue (jobs' roster of workers, as `python -m jobs workers` reads it: the worker
beside a server, or a `guestbook work` process), and 503 naming what is missing
otherwise. It reads nothing secret, writes nothing, is no form that limits.py counts,
and waits at most HEALTH_WAIT for a connection of the pool.
"""

import psycopg
from flask import Blueprint, current_app

import mail
from jobs.store import control

bp = Blueprint("health", __name__)

HEALTH_WAIT = 2.0  # seconds /health waits for a connection of the pool before it says the database does not answer


@bp.get("/health")
def health():
    """200 when the database answers and a live worker serves the mail queue; 503 naming what is missing."""
    try:
        with current_app.extensions["guestbook.pool"].connection(timeout=HEALTH_WAIT) as db:
            db.execute("SELECT 1")
            serving = live_workers(db, mail.QUEUE)
    except psycopg.Error:  # a connection refused, cut, or not lent in time (the pool's PoolTimeout)
        return said(503, "missing: the database does not answer")
    if not serving:
        return said(503, f"missing: no live worker serves the {mail.QUEUE} queue")
    workers = "1 live worker serves" if serving == 1 else f"{serving} live workers serve"
    return said(200, f"ok: the database answers, and {workers} the {mail.QUEUE} queue")


def live_workers(db: psycopg.Connection, queue: str) -> int:
    """How many workers beat on time (control.state_of: "working") with `queue` among theirs."""
    return sum(1 for row in control.workers_listed(db) if row["state"] == "working" and queue in row["queues"])


def said(status: int, sentence: str):
    """A plain-text answer of one line, with `status`."""
    return sentence + "\n", status, {"Content-Type": "text/plain; charset=utf-8"}
