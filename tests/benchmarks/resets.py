"""A reset request takes as long for an address with an account as for one without: time tells nothing.

`python -m tests.benchmarks.resets` (not part of the tests) starts `guestbook serve`
on a throw-away PostgreSQL, makes one confirmed account, and times REQUESTS reset
requests for its address and as many for unknown addresses, taken in turns, then
prints both medians. The promise holds when they are within TOLERANCE of each other
(both take one path: guestbook/resets.py). Each request comes from a visitor of its
own behind one proxy (TRUSTED_PROXIES=127.0.0.1: the benchmark), so the per-client limit measures nothing.
On a machine shared with other work the medians wander by more than TOLERANCE from
run to run; tests/guestbook/test_resets.py holds the property itself (one path, the
same statements and rows) whatever the machine's load.
"""

import argparse
import ipaddress
import itertools
import re
import statistics
import sys
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path
from urllib.parse import urlencode

import psycopg

from guestbook import embedded
from tests.mail.smtpd import SMTPServer

from .signup import FIRST_VISITOR, WARMUP, Served

REQUESTS = 200  # reset requests timed for each kind of address
TOLERANCE = 0.001  # seconds the two medians may differ by
KNOWN = "known@example.com"  # the address with an account


class Resets(Served):
    """The served guestbook, asked for reset letters."""

    visitors = itertools.count(1)

    def reset_time(self, email: str) -> float:
        """Seconds one reset request's POST takes to answer (a new visitor: its form first, untimed)."""
        form = self.opened(urllib.request.Request(self.base + "/resets/new"))
        cookie = form.headers["Set-Cookie"].split(";", 1)[0]
        found = re.search(r'name="csrf_token" value="([^"]+)"', form.read().decode())
        assert found, "the reset form carries no CSRF token"
        token = found.group(1)
        visitor = ipaddress.ip_address(FIRST_VISITOR) + next(self.visitors)
        request = urllib.request.Request(
            self.base + "/resets/new",
            data=urlencode({"csrf_token": token, "email": email}).encode(),
            headers={"Cookie": cookie, "X-Forwarded-For": str(visitor)},
        )
        started = time.perf_counter()
        answer = self.opened(request)
        elapsed = time.perf_counter() - started
        if answer.status != 302:
            raise RuntimeError(f"a reset request answered {answer.status}, not 302")
        return elapsed


def timed(database_url: str, requests: int, folder: str) -> tuple[list[float], list[float]]:
    """The answer times of reset requests for KNOWN, and for unknown addresses, taken in turns."""
    with SMTPServer() as smtp:
        served = Resets(database_url, smtp.url, folder)
        try:
            with psycopg.connect(database_url, autocommit=True) as db:  # the server made the tables
                db.execute(
                    "INSERT INTO accounts (email, password_digest, confirmed_at) VALUES (%s, 'x', now())", [KNOWN]
                )
            for _ in range(WARMUP):
                served.reset_time(KNOWN), served.reset_time("warmup@example.com")
            known, unknown = [], []
            for turn in range(requests):  # each kind goes first in every other turn, so neither trails the other's work
                for kind in ("known", "unknown") if turn % 2 == 0 else ("unknown", "known"):
                    if kind == "known":
                        known.append(served.reset_time(KNOWN))
                    else:
                        unknown.append(served.reset_time(f"nobody-{uuid.uuid4().hex[:12]}@example.com"))
        finally:
            served.stop()
    return known, unknown


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.benchmarks.resets", description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=REQUESTS, help=f"requests timed per kind (default {REQUESTS})")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="resets-benchmark-") as folder:
        database = embedded.server(Path(folder) / "pgdata", throwaway=True)
        known, unknown = timed(database.get_uri(), args.requests, folder)
    gap = statistics.median(known) - statistics.median(unknown)
    for name, times in (("an account's address", known), ("unknown addresses", unknown)):
        print(f"{name:>22}: median {statistics.median(times) * 1000:6.2f} ms over {len(times)} requests")
    verdict = "holds" if abs(gap) <= TOLERANCE else "does NOT hold"
    print(f"medians differ by {gap * 1000:+.2f} ms (the promise, within {TOLERANCE * 1000:g} ms, {verdict})")
    return 0 if verdict == "holds" else 1


if __name__ == "__main__":
    sys.exit(main())
