"""The mission's promise, measured: a sign-up answers as fast when the mail server is slow.

`python -m tests.benchmarks.signup` (not part of the tests) starts `guestbook serve`
twice on a throw-away PostgreSQL, once beside an SMTP server that answers at once and
once beside one that takes SLOW_LETTER seconds per letter, times SIGNUPS sign-ups
against each, and prints the ratio of the median answer times. The promise holds
when the ratio is within TOLERANCE of 1: the letter is a job, sent after the answer.
Each sign-up comes from a visitor of its own behind one proxy (TRUSTED_PROXIES=127.0.0.1: the benchmark), so
the limit on one client's sign-ups (guestbook/limits.py) measures nothing here.
"""

import argparse
import ipaddress
import itertools
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from urllib.parse import urlencode

from e2e.tether import dying_with_this_thread
from guestbook import embedded
from tests.mail.smtpd import SMTPServer, free_port

ROOT = Path(__file__).resolve().parents[2]
SIGNUPS = 30  # sign-ups timed against each mail server
WARMUP = 3  # sign-ups made first and not timed (pool connections, first imports)
SLOW_LETTER = 3.0  # seconds the slow SMTP server takes per letter
TOLERANCE = 0.10  # how far from 1 the ratio of slow to fast may be
PASSWORD = "correct horse battery"
FIRST_VISITOR = "10.0.0.0"  # the sign-ups come from the addresses after this one
START_WAIT = 30.0  # seconds the server may take to start
STOP_WAIT = 2 * SLOW_LETTER + 10  # seconds it may take to stop: the letter in hand is finished first


class NoRedirect(urllib.request.HTTPRedirectHandler):
    """Hands a redirect back as the answer, as a test wants to see it, instead of following it."""

    def redirect_request(self, *args, **kwargs):
        return None


class Served:
    """A `guestbook serve` process on a free port, sending its letters to `mail_url`."""

    def __init__(self, database_url: str, mail_url: str, folder: str):
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        # Served as in production, which wants an https BASE_URL; the links in letters are never followed here.
        env = {
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "DATABASE_URL": database_url,
            "MAIL_URL": mail_url,
            "SECRET_KEY": uuid.uuid4().hex,
            "BASE_URL": "https://guestbook.example",
            "TRUSTED_PROXIES": "127.0.0.1",  # the benchmark itself, which names each visitor as a proxy would
        }
        self.process = subprocess.Popen(
            [sys.executable, "-m", "guestbook", "serve", "--port", str(self.port)],
            env=env,
            cwd=folder,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            preexec_fn=dying_with_this_thread(),
        )  # dies with the benchmark
        assert self.process.stdout is not None  # a pipe, as asked
        self.process.stdout.readline()  # the address line: the server listens from then on
        self.opener = urllib.request.build_opener(NoRedirect)
        self.visitors = itertools.count(1)

    def signup_time(self) -> float:
        """Seconds one sign-up's POST takes to answer (a new visitor: its form first, untimed)."""
        form = self.opened(urllib.request.Request(self.base + "/signup"))
        cookie = form.headers["Set-Cookie"].split(";", 1)[0]
        found = re.search(r'name="csrf_token" value="([^"]+)"', form.read().decode())
        assert found, "the sign-up form carries no CSRF token"
        token = found.group(1)
        fields = {"csrf_token": token, "email": f"bench-{uuid.uuid4().hex[:12]}@example.com", "password": PASSWORD}
        visitor = ipaddress.ip_address(FIRST_VISITOR) + next(self.visitors)  # as the proxy in front names it
        headers = {"Cookie": cookie, "X-Forwarded-For": str(visitor)}
        request = urllib.request.Request(self.base + "/signup", data=urlencode(fields).encode(), headers=headers)
        started = time.perf_counter()
        answer = self.opened(request)
        elapsed = time.perf_counter() - started
        if answer.status != 302:
            raise RuntimeError(f"sign-up answered {answer.status}, not 302")
        return elapsed

    def opened(self, request):
        try:
            return self.opener.open(request, timeout=START_WAIT)
        except urllib.error.HTTPError as answer:
            return answer

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(STOP_WAIT)
        assert self.process.stdout is not None  # a pipe, as asked
        self.process.stdout.close()


def timed(database_url: str, delay: float, signups: int, folder: str) -> tuple[list[float], int]:
    """Sign-up answer times beside an SMTP server taking `delay` s per letter, and the letters it had by the end."""
    with SMTPServer(delay=delay) as smtp:
        served = Served(database_url, smtp.url, folder)
        try:
            for _ in range(WARMUP):
                served.signup_time()
            times = [served.signup_time() for _ in range(signups)]
        finally:
            served.stop()
        return times, len(smtp.letters)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.benchmarks.signup", description=__doc__.splitlines()[0])
    parser.add_argument("--signups", type=int, default=SIGNUPS, help=f"sign-ups timed per server (default {SIGNUPS})")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="signup-benchmark-") as folder:
        database = embedded.server(Path(folder) / "pgdata", throwaway=True)
        fast, fast_sent = timed(database.get_uri(), 0.0, args.signups, folder)
        slow, slow_sent = timed(database.get_uri(), SLOW_LETTER, args.signups, folder)
    ratio = statistics.median(slow) / statistics.median(fast)
    for name, times, sent in (("fast SMTP", fast, fast_sent), (f"SMTP at {SLOW_LETTER:g} s/letter", slow, slow_sent)):
        print(
            f"{name:>22}: median {statistics.median(times) * 1000:7.1f} ms, "
            f"max {max(times) * 1000:7.1f} ms over {len(times)} sign-ups; {sent} letters arrived meanwhile"
        )
    verdict = "holds" if abs(ratio - 1) <= TOLERANCE else "does NOT hold"
    print(f"ratio slow/fast: {ratio:.3f} (the promise, within {TOLERANCE:.0%} of 1, {verdict})")
    return 0 if verdict == "holds" else 1


if __name__ == "__main__":
    sys.exit(main())
