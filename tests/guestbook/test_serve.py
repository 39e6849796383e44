"""`guestbook serve`: a real process, serving with waitress, with the mail worker beside it."""

import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from urllib.parse import urlencode

import pytest

from guestbook.__main__ import main

from ..mail.smtpd import SMTPServer, free_port

ROOT = Path(__file__).resolve().parents[2]
WAIT = 20.0  # seconds a test waits for the server to start, a letter to arrive, or the process to end


def test_serve_refuses_to_start_outside_development_without_a_secret_and_a_database(monkeypatch, capsys):
    monkeypatch.delenv("SECRET_KEY", raising=False)
    monkeypatch.delenv("DATABASE_URL", raising=False)

    assert main(["serve"]) == 2
    assert "set SECRET_KEY and DATABASE_URL" in capsys.readouterr().err


@pytest.mark.parametrize("setting, value, words", [
    ("MAIL_RETRY_INTERVALS", "1,soon", "MAIL_RETRY_INTERVALS takes seconds separated by commas, got '1,soon'"),
    ("RESET_TOKEN_MAX_AGE", "an hour", "RESET_TOKEN_MAX_AGE takes a whole number, got 'an hour'"),
    ("TRUSTED_PROXIES", "-1", "TRUSTED_PROXIES takes a whole number, got '-1'"),
])
def test_serve_with_a_bad_setting_says_which_and_exits_2(database_url, tmp_path, setting, value, words):
    env = environment(DATABASE_URL=database_url, SECRET_KEY="s" * 32, PYTHONPATH=str(ROOT), **{setting: value})

    done = subprocess.run([sys.executable, "-m", "guestbook", "serve", "--port", str(free_port())], env=env,
                          cwd=tmp_path, capture_output=True, text=True, timeout=WAIT)

    assert (done.returncode, done.stderr.strip()) == (2, f"guestbook: {words}")


def test_importing_the_app_never_fails_on_a_bad_setting(tmp_path):
    env = environment(PYTHONPATH=str(ROOT), MAIL_RETRY_INTERVALS="soon")

    done = subprocess.run([sys.executable, "-c", "import mail, guestbook, guestbook.__main__"], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=WAIT)

    assert (done.returncode, done.stderr) == (0, "")


class Served:
    """A `guestbook serve` process, and a cookie-keeping way to talk to it."""

    def __init__(self, args, env, cwd):
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        env = {**env, "PYTHONPATH": str(ROOT), "BASE_URL": self.base}
        self.process = subprocess.Popen([sys.executable, "-m", "guestbook", "serve", "--port", str(self.port), *args],
                                        env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.said = self.process.stdout.readline()  # the address line, printed once the app is made
        self.cookie = ""

    def request(self, path, fields=None):
        """GETs `path`, or POSTs `fields` with the session's CSRF token; returns (status, page)."""
        data = urlencode({"csrf_token": self.csrf_token(), **fields}).encode() if fields is not None else None
        request = urllib.request.Request(self.base + path, data=data, headers={"Cookie": self.cookie})
        try:
            answer = urllib.request.build_opener(NoRedirect).open(request, timeout=WAIT)
        except urllib.error.HTTPError as error:
            answer = error
        # The cookie is Secure outside development, which a cookie jar would keep off plain HTTP.
        cookie = answer.headers.get("Set-Cookie")
        if cookie:
            self.cookie = cookie.split(";", 1)[0]
        return answer.status, answer.read().decode()

    def csrf_token(self) -> str:
        return re.search(r'name="csrf_token" value="([^"]+)"', self.request("/signin")[1]).group(1)

    def stopped(self) -> int:
        """Sends SIGTERM, as a platform stopping the process does, and returns its exit status."""
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(WAIT)
        finally:
            self.process.stdout.close()


def eventually(check, timeout: float = WAIT, pause: float = 0.05) -> bool:
    """Whether `check()` comes true within `timeout` seconds, asked every `pause` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(pause)
    return False


class NoRedirect(urllib.request.HTTPRedirectHandler):
    """Hands a redirect back as the answer, as a test wants to see it, instead of following it."""

    def redirect_request(self, *args, **kwargs):
        return None


def environment(**values) -> dict:
    """The test process's environment without the guestbook's settings, plus `values`."""
    names = ("DATABASE_URL", "SECRET_KEY", "MAIL_URL", "MAIL_OUTBOX", "BASE_URL", "PORT", "MAIL_RETRY_INTERVALS",
             "RESET_TOKEN_MAX_AGE", "TRUSTED_PROXIES")
    return {**{k: v for k, v in os.environ.items() if k not in names}, **values}


@pytest.mark.slow
def test_served_signup_answers_and_the_worker_beside_sends_its_letter(database_url, db, tmp_path):
    with SMTPServer() as smtp:
        served = Served([], environment(DATABASE_URL=database_url, SECRET_KEY="s" * 32, MAIL_URL=smtp.url), tmp_path)
        try:
            assert served.said.startswith(f"The guestbook is at {served.base}")
            address = f"served-{uuid.uuid4().hex[:8]}@example.com"  # new even on a database other tests used
            status, _ = served.request("/signup", {"email": address, "password": "correct horse battery"})
            assert status == 302
            with smtp.inbox.arrived:
                assert smtp.inbox.arrived.wait_for(lambda: smtp.letters, WAIT)
            assert f"{served.base}/confirm/" in smtp.letters[0].get_body(("plain",)).get_content()
        finally:
            assert served.stopped() == 0


@pytest.mark.slow
def test_development_keeps_a_secret_and_writes_letters_to_the_outbox(database_url, db, tmp_path):
    served = Served(["--development"], environment(DATABASE_URL=database_url), tmp_path)
    try:
        address = f"served-{uuid.uuid4().hex[:8]}@example.com"
        served.request("/signup", {"email": address, "password": "correct horse battery"})
        # The worker writes the letter a moment after the answer: look until it is there.
        assert eventually(lambda: f"To {address}" in served.request("/outbox")[1])
    finally:
        assert served.stopped() == 0
    assert len((tmp_path / ".secret_key").read_text()) == 64
    assert len(list((tmp_path / "outbox").glob("*.eml"))) == 1
