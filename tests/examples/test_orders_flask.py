"""examples/orders_flask.py: a Flask-SQLAlchemy app queueing on its session, and a real worker process beside it."""

import importlib
import sys

from tests.jobs.helpers import STARTED, no_stray_worker, start_command, stopped, wait_for


def test_an_order_commits_with_its_job_and_a_rolled_back_one_leaves_neither(database_url, db, monkeypatch):
    db.execute("DROP TABLE IF EXISTS flask_orders")
    monkeypatch.setenv("DATABASE_URL", database_url)
    sys.modules.pop("examples.orders_flask", None)
    example = importlib.import_module("examples.orders_flask")
    client = example.app.test_client()
    assert client.post("/orders", json={}).status_code == 422
    made = client.post("/orders", json={"item": "tea"})
    assert made.status_code == 201
    order = made.get_json()["order"]
    with example.app.app_context():  # a session that rolls back queues nothing
        example.db.session.add(example.Order(item="coffee"))
        example.db.session.flush()
        example.jobs.later(example.db.session, example.QUEUE, "receipt", {"order": -1})
        example.db.session.rollback()
    assert db.execute("SELECT count(*) FROM jobs").fetchone() == (1,)
    no_stray_worker(database_url)
    worker = start_command(database_url, "work", example.QUEUE, "--performers", "examples.orders_flask:performers")
    STARTED.add(worker)
    try:
        wait_for(lambda: client.get(f"/orders/{order}").get_json() == {"receipt_sent": True}, "the receipt")
    finally:
        output = stopped(worker)
    assert worker.returncode == 0, output
    assert "coffee" not in str(db.execute("SELECT array_agg(item) FROM flask_orders").fetchone())
