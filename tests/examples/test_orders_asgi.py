"""examples/orders_asgi.py as a reader runs it: under uvicorn, on the tests' database, its worker beside it."""

import json
import os
import signal
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request

from e2e.tether import dying_with_this_thread
from tests.guestbook.served import ROOT
from tests.jobs.helpers import WAIT, wait_for, worker_log
from tests.mail.smtpd import free_port


def asked(base: str, path: str, body: dict | None = None) -> tuple[int, dict]:
    """The status and JSON of a GET (or, with `body`, a POST of it as JSON)."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(base + path, data=data, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=WAIT) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def answering(base: str) -> bool:
    try:
        return asked(base, "/orders/0")[0] == 404
    except OSError:
        return False


def uvicorn(app: str, database_url: str) -> tuple[subprocess.Popen, str]:
    """Starts uvicorn on `app` (module:attribute) on a free port; answers the process (its .log too) and its URL."""
    port = free_port()
    log = tempfile.TemporaryFile(mode="w+")
    server = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", app, "--port", str(port)],
        cwd=ROOT,
        env={**os.environ, "DATABASE_URL": database_url, "PYTHONPATH": str(ROOT)},
        stdout=log,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=dying_with_this_thread(),
    )
    server.log = log  # type: ignore[attr-defined]
    return server, f"http://127.0.0.1:{port}"


def test_an_order_posted_to_the_async_app_gets_its_receipt_from_the_worker_beside_it(database_url, db):
    db.execute("DROP TABLE IF EXISTS asgi_orders")
    server, base = uvicorn("examples.orders_asgi:app", database_url)
    try:
        wait_for(lambda: answering(base) or server.poll() is not None, "the app to answer")
        assert server.poll() is None, worker_log(server)
        assert asked(base, "/orders", {"item": ""}) == (422, {"error": "give an item"})
        status, made = asked(base, "/orders", {"item": "tea"})
        assert status == 201, made
        wait_for(lambda: asked(base, f"/orders/{made['order']}")[1] == {"receipt_sent": True}, "the receipt")
        server.send_signal(signal.SIGTERM)  # uvicorn ends the app's lifespan, and the worker with it
        # uvicorn, its shutdown done, ends by the signal it was sent, as a process that did not catch it would.
        assert server.wait(WAIT) in (0, -signal.SIGTERM), worker_log(server)
    finally:
        server.kill()
    assert "Application shutdown complete" in worker_log(server)
    assert db.execute("SELECT ending FROM job_workers").fetchall() == [("stopped",)]  # the worker said it stopped
    assert db.execute("SELECT count(*) FROM jobs").fetchone() == (0,)
