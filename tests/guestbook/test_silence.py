"""A pooled connection that goes silent: the guestbook still answers within the bound.

The app reaches a PostgreSQL of the test's own through a proxy (tests/silent_proxy.py)
that makes the connections open at a moment go silent, while new ones pass. Eight
clients load the pages first, so the pool holds several connections when they all go
silent together.
"""

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from guestbook import create_app
from guestbook import db as guestbook_db
from tests.jobs.helpers import wait_for
from tests.jobs.private_pg import removed, started
from tests.silent_proxy import SilentProxy

pytestmark = pytest.mark.slow

SILENCE = 2.0  # seconds: the pool's bound here (jobs.SILENT_AFTER is 30), so that the test takes seconds
SLACK = 8.0  # seconds past the bound a request may take to get a new connection and answer, on a busy machine
CLIENTS = 8  # requests at once before the silence: one pooled connection each, at most
POOLED = 3  # connections the pool holds, at least, when the silence comes


@pytest.fixture
def server():
    server = started()
    yield server
    removed(server)


@pytest.mark.parametrize("mode", ["hold", "drop"])
def test_the_guestbook_answers_within_the_bound_when_its_pooled_connections_go_silent(server, mode):
    proxy = SilentProxy(("127.0.0.1", server.port))
    app = create_app(
        {
            "DATABASE_URL": proxy.url(server.url),
            "SECRET_KEY": "a secret for tests only",
            "TESTING": True,
            "DATABASE_SILENT_AFTER": SILENCE,
        }
    )
    try:
        with server.connect() as db:
            db.execute("INSERT INTO accounts (email, password_digest) VALUES ('ada@example.com', 'x')")
            db.execute("INSERT INTO entries (account_id, body) VALUES (1, 'written before the silence')")
        loading = threading.Event()

        def loaded():
            client = app.test_client()
            while not loading.is_set():
                assert client.get("/").status_code == 200

        with ThreadPoolExecutor(CLIENTS) as clients:
            running = [clients.submit(loaded) for _ in range(CLIENTS)]
            pool = app.extensions["guestbook.pool"]
            wait_for(lambda: pool.get_stats()["pool_size"] >= POOLED, f"the pool to hold {POOLED} connections")
            loading.set()
            for client in running:
                client.result()
        assert proxy.silenced(mode) >= POOLED
        began = time.monotonic()
        page = app.test_client().get("/")
        assert page.status_code == 200
        assert "written before the silence" in page.get_data(as_text=True)
        assert time.monotonic() - began < SILENCE + SLACK, "it answered within the bound"
    finally:
        guestbook_db.closed(app)
        proxy.close()
