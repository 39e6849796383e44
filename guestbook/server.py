"""The web server `guestbook serve` runs (processes.py): waitress, on the address and port it is told, with its limits.

It listens on one address: by default 127.0.0.1 in development and every interface
(0.0.0.0) otherwise, as a platform's router needs; `--host` or HOST names another, so
that a server whose proxy runs beside it listens on the loopback address only and no
one but the proxy reaches it. Its connections are connections.py's, which cap every
peer but the proxies TRUSTED_PROXIES names.
"""

import ipaddress

import waitress.server

from . import connections, db, forms

DEFAULT_PORT = 5000  # the port served when neither --port nor PORT names one
DEFAULT_HOSTS = {True: "127.0.0.1", False: "0.0.0.0"}  # the address listened on unless --host or HOST names one,
# in development or not
THREADS = db.POOL_MAX  # requests served at once: one pool connection each
# waitress's limits, so that a slow or hostile client cannot hold the server (see
# docs/security.md): a connection idle mid-request for CHANNEL_TIMEOUT is closed,
# looked for every CLEANUP_INTERVAL; up to CONNECTION_LIMIT are served at once, polled
# (select() would stop at 1024 descriptors); a body is refused with a 413 as soon as it
# is past the app's own limit, before it is read (waitress refuses at >=, Flask past >).
# connections.py adds a deadline for each request and a cap on one client's connections.
CHANNEL_TIMEOUT = 10  # seconds a connection may send nothing before waitress closes it (its default: 120)
CLEANUP_INTERVAL = 2  # seconds between waitress's looks for idle connections (its default: 30)
CONNECTION_LIMIT = 1000  # connections open at once (its default: 100, which 100 idle clients filled)
BODY_MAX = forms.CONTENT_MAX + 1  # waitress's max_request_body_size (its default: 1 GiB)


def host(given: str | None, development: bool) -> str:
    """The address to listen on: `given` (--host or HOST) when set, else DEFAULT_HOSTS's; a ValueError if not an
    address."""
    text = (given or "").strip()
    if not text:
        return DEFAULT_HOSTS[development]
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        raise ValueError(
            f"HOST (or --host) takes the IP address to listen on, as 127.0.0.1, ::1 or 0.0.0.0; got {text!r}"
        ) from None


def listening(app, host: str, port: int) -> waitress.server.BaseWSGIServer:
    """waitress serving `app` on `host` and `port` with the limits above; it listens from now."""
    server = waitress.server.create_server(
        app,
        host=host,
        port=port,
        threads=THREADS,
        channel_timeout=CHANNEL_TIMEOUT,
        cleanup_interval=CLEANUP_INTERVAL,
        connection_limit=CONNECTION_LIMIT,
        asyncore_use_poll=True,
        max_request_body_size=BODY_MAX,
        # The app reads X-Forwarded-For from the TRUSTED_PROXIES proxies (proxies.py); waitress,
        # told of no proxy itself, would delete the header first, and every client behind
        # the proxy would count as the proxy.
        clear_untrusted_proxy_headers=False,
    )
    assert isinstance(server, waitress.server.BaseWSGIServer)  # one host and port: one socket, served by one server
    server.channel_class = connections.guarded(app.config["TRUSTED_PROXIES"])  # for every accept from now
    return server
