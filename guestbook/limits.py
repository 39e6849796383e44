"""How fast one client may sign in, sign up, confirm, reset and rename: CLIENT_TRIES a CLIENT_WINDOW.

Each of those costs a password hash (about 90 ms of a core), a new password's scoring
(zxcvbn) or a letter, so a client that sends them as fast as it can would take the
server from everyone else. The count is kept in the database (table client_tries), so
it holds across every process that serves the site and across restarts; a client past
it gets a 429 page, with a Retry-After header, saying when to try again. Behind
proxies, the client's address is the one the proxies TRUSTED_PROXIES names vouch for
(proxies.py), never a header a client could write itself.
"""

import ipaddress

from flask import abort, request

from . import proxies
from .db import get_db, queries

CLIENT_TRIES = 30  # sign-ins, sign-ups, confirmations and resets one client may send in a window
CLIENT_WINDOW = 60  # seconds a window lasts: it begins with a client's first try after the last one ended
FORGET_BATCH = 10  # clients whose window ended that each try forgets, so the table holds recent ones only
IPV6_PREFIX = 64  # an IPv6 client is its /64 network: one home or server is given a whole /64
UNKNOWN = "unknown"  # what every request without a readable IP address counts against, together
# The views whose posts are counted: a confirmation hashes its password, a new password is scored and hashed,
# a new name is looked for among every account's and claim's.
LIMITED = {
    "auth.signin",
    "auth.signup",
    "auth.confirm",
    "resets.new",
    "resets.edit",
    "renames.edit",
}
SAFE_METHODS = {"GET", "HEAD", "OPTIONS"}  # methods that only read, never counted


def init_app(app) -> None:
    """Counts every post to a LIMITED view before it runs, and reads client addresses through the TRUSTED_PROXIES
    proxies."""
    if app.config["TRUSTED_PROXIES"]:
        app.wsgi_app = proxies.proxied(app.wsgi_app, app.config["TRUSTED_PROXIES"])
    app.before_request(counted)


def counted() -> None:
    """Counts a try of a LIMITED view; a 429 page saying when to try again once the client is past CLIENT_TRIES."""
    if request.method in SAFE_METHODS or request.endpoint not in LIMITED:
        return
    db = get_db()
    params = {"client": client(request.remote_addr), "window": CLIENT_WINDOW}
    row = db.execute(queries["client_tried"], params).fetchone()
    assert row is not None  # an upsert with RETURNING always returns its row
    tries, wait = row
    db.execute(queries["client_tries_forgotten"], {"window": CLIENT_WINDOW, "batch": FORGET_BATCH})
    if tries > CLIENT_TRIES:
        wait = max(wait, 1)
        abort(
            429,
            f"Too many sign-ins, sign-ups, confirmations and resets have come from your address. "
            f"Try again in {wait} second{'s' if wait != 1 else ''}.",
            retry_after=wait,
        )


def client(address: str | None) -> str:
    """Who a request counts against: its address, or for IPv6 the /IPV6_PREFIX network holding it."""
    try:
        ip = ipaddress.ip_address(address or "")
    except ValueError:
        return UNKNOWN  # no address (a Unix socket), or a forwarded one that is not an address
    if ip.version == 4:
        return str(ip)
    if ip.ipv4_mapped is not None:  # an IPv4 client on a dual-stack socket
        return str(ip.ipv4_mapped)
    return str(ipaddress.ip_network(f"{ip}/{IPV6_PREFIX}", strict=False))
