"""beside_asgi under uvicorn stopped by SIGTERM: the worker stops claiming, finishes the job in hand, and only then
does the app's shutdown run, so the job may use what the app's startup made (tests/examples/lifespan_app.py)."""

import signal
import urllib.request

import jobs
from tests.examples import lifespan_app
from tests.examples.test_orders_asgi import uvicorn
from tests.jobs.helpers import WAIT, scalar, wait_for, worker_log


def answering(base: str) -> bool:
    try:
        with urllib.request.urlopen(base, timeout=WAIT) as answer:
            return answer.status == 200
    except OSError:
        return False


def test_a_sigterm_lets_the_job_in_hand_finish_with_what_the_apps_startup_made_and_claims_no_other(database_url, db):
    db.execute(f"DROP TABLE IF EXISTS lifespan_notes; {lifespan_app.NOTES}")
    db.execute("SELECT pg_advisory_lock(%s)", [lifespan_app.HELD])  # the job in hand waits for it
    server, base = uvicorn("tests.examples.lifespan_app:app", database_url)
    try:
        wait_for(lambda: answering(base) or server.poll() is not None, "the app to answer")
        assert server.poll() is None, worker_log(server)
        in_hand = jobs.later(db, lifespan_app.QUEUE, "noted", {"n": 1})
        wait_for(lambda: scalar(db, "SELECT count(*) FROM lifespan_notes") == 1, "the first job to start")
        behind = jobs.later(db, lifespan_app.QUEUE, "noted", {"n": 2})
        server.send_signal(signal.SIGTERM)
        wait_for(lambda: "Waiting for application shutdown." in worker_log(server), "uvicorn to begin the shutdown")
        db.execute("SELECT pg_advisory_unlock(%s)", [lifespan_app.HELD])
        assert server.wait(WAIT) in (0, -signal.SIGTERM), worker_log(server)
    finally:
        server.kill()
    log = worker_log(server)
    assert "Application shutdown complete" in log, log
    notes = db.execute("SELECT n, what FROM lifespan_notes ORDER BY n, what DESC").fetchall()
    assert notes == [(1, "started"), (1, "finished")], log
    assert scalar(db, "SELECT count(*) FROM jobs WHERE id = %s", [in_hand]) == 0, "the job in hand succeeded"
    assert db.execute("SELECT attempts, failure FROM jobs WHERE id = %s", [behind]).fetchall() == [(0, "")]
    assert db.execute("SELECT ending FROM job_workers").fetchall() == [("stopped",)]
