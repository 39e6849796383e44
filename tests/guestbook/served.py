"""A real `guestbook serve` process for the tests that need one, and a cookie-keeping way to talk to it.

The tests of the command line, of waitress's limits and of the lockout under parallel
requests start it as a platform would, on a port of its own, and stop it with SIGTERM.
It is tied to the test run as the browser specs' guestbook is (e2e/tether.py), and
starts only once no stray guestbook under test works the database's mail queue.
"""

import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from email.message import Message
from pathlib import Path
from urllib.parse import urlencode

from e2e.served import APPLICATION, no_stray_guestbook
from e2e.tether import dying_with_this_thread
from guestbook.settings import READERS, SECRET_KEY_MIN

from ..mail.smtpd import free_port

ROOT = Path(__file__).resolve().parents[2]
WAIT = 20.0  # seconds a test waits for the server to start, a letter to arrive, or the process to end
SETTINGS = tuple(READERS)  # every setting serve reads: never inherited from the environment the tests run in


class Served:
    """A `guestbook serve` process; `request` talks to it as one visitor, `visitor()` gives another.

    BASE_URL is the process's own address unless `env` names another (production wants https).
    """

    def __init__(self, args, env, cwd):
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        env = {"BASE_URL": self.base, "PGAPPNAME": f"{APPLICATION} (run {os.getpid()})", **env, "PYTHONPATH": str(ROOT)}
        if env.get("DATABASE_URL"):
            no_stray_guestbook(env["DATABASE_URL"])
        self.process = subprocess.Popen(
            [sys.executable, "-m", "guestbook", "serve", "--port", str(self.port), *args],
            env=env,
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            preexec_fn=dying_with_this_thread(),
        )
        self.said = self._address_line()
        # Development prints the link that lets a browser see /outbox and /jobs next; its visitor opens it.
        self.key_link = self.process.stdout.readline().split()[1] if "--development" in args else None
        self.request = self.visitor(keyed=True).request

    def _address_line(self) -> str:
        """The line that gives the address, printed once the app is made; log lines before it
        (a first start on a database takes the guestbook's schema steps, and says so) are kept
        in `before`. A process that ends first answers its last line."""
        self.before = []
        for line in self.process.stdout:
            if line.startswith("The guestbook is at"):
                return line
            self.before.append(line)
        return self.before[-1] if self.before else ""

    def visitor(self, keyed: bool = False) -> "Visitor":
        """A visitor of the process, with cookies of its own; `keyed`: it opened development's printed link."""
        visitor = Visitor(self.base)
        if keyed and self.key_link:
            visitor.request(self.key_link.removeprefix(self.base))
            visitor.base = self.key_link.split("?")[0].rstrip("/")  # its pages are the printed link's
        return visitor

    def stopped(self) -> int:
        """Sends SIGTERM, as a platform stopping the process does, and returns its exit status; what it printed
        from the address line on is kept in `after`."""
        self.process.send_signal(signal.SIGTERM)
        try:
            status = self.process.wait(WAIT)
            self.after = self.process.stdout.read()
            return status
        finally:
            self.process.stdout.close()


class Visitor:
    """One visitor of the server at `base`, keeping its cookies (the session, the dashboard's, the key) as a browser
    would."""

    def __init__(self, base: str):
        self.base = base
        self.cookies: dict[str, str] = {}
        self.headers: Message = Message()  # the headers of the last answer

    def request(self, path, fields=None, *, headers=None, csrf=True):
        """GETs `path`, or POSTs `fields` (with the session's CSRF token, if `csrf`); returns (status, page)."""
        if fields is not None and csrf:
            fields = {"csrf_token": self.csrf_token(), **fields}
        data = urlencode(fields).encode() if fields is not None else None
        request = urllib.request.Request(
            self.base + path, data=data, headers={"Cookie": self.cookie, **(headers or {})}
        )
        try:
            answer = urllib.request.build_opener(NoRedirect).open(request, timeout=WAIT)
        except urllib.error.HTTPError as error:
            answer = error
        # The cookies are Secure outside development, which a cookie jar would keep off plain HTTP.
        for set_cookie in answer.headers.get_all("Set-Cookie") or []:
            name, _, value = set_cookie.split(";", 1)[0].partition("=")
            self.cookies[name] = value
        self.headers = answer.headers
        return answer.status, answer.read().decode()

    @property
    def cookie(self) -> str:
        """The Cookie header this visitor sends: every cookie it keeps."""
        return "; ".join(f"{name}={value}" for name, value in self.cookies.items())

    def csrf_token(self) -> str:
        found = re.search(r'name="csrf_token" value="([^"]+)"', self.request("/signin")[1])
        assert found, "the sign-in page carries no CSRF token"
        return found.group(1)


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
    return {**{k: v for k, v in os.environ.items() if k not in SETTINGS}, **values}


SECRET = "s" * SECRET_KEY_MIN  # a SECRET_KEY long enough for production
SITE = "https://guestbook.example"  # the BASE_URL of production runs


def production_settings(database_url, mail_url, **more) -> dict:
    """The environment of a production process on `database_url`, its letters to `mail_url`, plus `more`."""
    return environment(
        DATABASE_URL=database_url, SECRET_KEY=SECRET, BASE_URL=SITE, MAIL_URL=mail_url, PYTHONPATH=str(ROOT), **more
    )
