"""The processes a deploy runs, as real processes: `guestbook serve` with its worker beside or without
(WORKER_BESIDE, --no-worker), `guestbook work`, the mail worker alone, and /health, which says whether
the database answers and a live worker serves the mail queue."""

import re
import subprocess
import sys
import time
import uuid

import pytest

from guestbook.health import HEALTH_WAIT
from tests.jobs.private_pg import removed, started

from ..mail.smtpd import SMTPServer
from .served import WAIT, Served, eventually, production_settings

# A log line of either process: time, level, logger, process id, message (jobs' LOG_FORMAT).
LOG_LINE = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} (DEBUG|INFO|WARNING|ERROR|CRITICAL) [\w.]+ \d+ .+")
WORK = [sys.executable, "-m", "guestbook", "work"]
SLACK = 5.0  # seconds past HEALTH_WAIT an answer of /health may take on a busy machine


def test_work_without_a_mail_url_in_production_says_so_and_exits_2(database_url, tmp_path):
    env = production_settings(database_url, "")

    done = subprocess.run(WORK, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=WAIT)

    assert (done.returncode, done.stderr.strip()) == (
        2,
        "guestbook: set MAIL_URL to the SMTP server that sends the letters: smtp+starttls://user:pass@host:587 or "
        "smtps://user:pass@host:465 (or smtp://host:25 for a relay that takes letters without a password)",
    )
    assert not (tmp_path / "outbox").exists()


def test_health_answers_200_while_the_worker_beside_serves_the_mail_queue_and_logs_as_jobs_does(
    database_url, db, tmp_path
):
    served = Served([], production_settings(database_url, "smtp://127.0.0.1:25"), tmp_path)
    try:
        assert eventually(lambda: served.request("/health")[0] == 200)
        monitor = served.visitor()
        answer = monitor.request("/health")
    finally:
        assert served.stopped() == 0
    assert answer == (200, "ok: the database answers, and 1 live worker serves the mail queue\n")
    assert (monitor.headers["Content-Type"], monitor.headers["Set-Cookie"]) == ("text/plain; charset=utf-8", None)
    logged = served.after.splitlines()  # in production, the process prints nothing after its address but logs
    assert logged and all(LOG_LINE.fullmatch(line) for line in logged), logged


def test_a_server_without_its_worker_is_unhealthy_until_guestbook_work_runs_and_sends_the_letter(
    database_url, db, tmp_path
):
    with SMTPServer() as smtp:
        env = production_settings(database_url, smtp.url)
        served = Served(["--no-worker"], env, tmp_path)
        worker = None
        try:
            assert served.request("/health") == (503, "missing: no live worker serves the mail queue\n")
            address = f"deploy-{uuid.uuid4().hex[:8]}@example.com"
            assert served.request("/signup", {"email": address, "password": "correct horse battery"})[0] == 302
            worker = subprocess.Popen(WORK, env=env, cwd=tmp_path, stderr=subprocess.PIPE, text=True)
            assert eventually(lambda: served.request("/health")[0] == 200)
            with smtp.inbox.arrived:
                assert smtp.inbox.arrived.wait_for(lambda: smtp.letters, WAIT)
        finally:
            assert served.stopped() == 0
            if worker is not None:
                worker.terminate()
                assert worker.wait(WAIT) == 0
    assert smtp.letters[0]["To"] == address
    assert "the worker stopped" not in served.after  # no worker ran beside the server
    logged = worker.stderr.read().splitlines()
    worker.stderr.close()
    assert any("the worker stopped: 1 job(s) done" in line for line in logged), logged
    assert all(LOG_LINE.fullmatch(line) for line in logged), logged  # as the web process logs


@pytest.fixture
def private_database():
    """A PostgreSQL of the test's own, which it may stop."""
    server = started()
    yield server
    removed(server)


def test_health_answers_503_while_the_database_is_down_and_200_once_it_is_back(private_database, tmp_path):
    served = Served([], production_settings(private_database.url, "smtp://127.0.0.1:25"), tmp_path)
    try:
        assert eventually(lambda: served.request("/health")[0] == 200)
        private_database.stop()
        began = time.monotonic()
        assert served.request("/health") == (503, "missing: the database does not answer\n")
        assert time.monotonic() - began < HEALTH_WAIT + SLACK
        private_database.start()
        assert eventually(lambda: served.request("/health")[0] == 200)
    finally:
        assert served.stopped() == 0
