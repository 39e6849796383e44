"""The proxy in front, on a real `guestbook serve`: only the addresses TRUSTED_PROXIES names may say who the client is.

Every address of 127/8 is this machine, so each test puts the proxy at PROXY and a
client that reaches the port directly at CLIENT, each connection bound to its own
source address, and speaks HTTP over plain sockets as either would.
"""

import socket

import pytest

from guestbook import limits
from guestbook.connections import CLIENT_CONNECTIONS

from .served import Served, environment, production_settings
from .test_serve import MAIL_URL
from .test_server_limits import HALF_SENT, connected, open_among, status_of

PROXY = "127.0.0.2"  # the trusted proxy's address
CLIENT = "127.0.0.1"  # a client that reaches the app's port without the proxy
LISTENED = "127.0.0.3"  # the one address `--host` tells the server to listen on


@pytest.fixture
def served(database_url, db, tmp_path):
    served = Served(["--development"], environment(DATABASE_URL=database_url, TRUSTED_PROXIES=PROXY), tmp_path)
    db.execute("TRUNCATE client_tries")  # the tries of the tests before
    yield served
    assert served.stopped() == 0
    db.execute("TRUNCATE client_tries")  # this test's, which would hold back the next test's visitor from CLIENT


def reset_requests_from(served, source: str, forwarded_for: list[str]) -> list[int]:
    """The statuses of reset requests sent from `source`, one for each X-Forwarded-For in `forwarded_for`."""
    visitor = served.visitor()
    token = visitor.csrf_token()
    body = f"csrf_token={token}&email=ada%40example.com"
    statuses = []
    for forwarded in forwarded_for:
        connection = connected(
            served,
            (
                "POST /resets/new HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\n"
                f"Cookie: {visitor.cookie}\r\nX-Forwarded-For: {forwarded}\r\nConnection: close\r\n"
                f"Content-Length: {len(body)}\r\n\r\n{body}"
            ).encode(),
            source=source,
        )
        statuses.append(status_of(connection))
    return statuses


def made_up(count: int) -> list[str]:
    """`count` different X-Forwarded-For values, each naming a client of its own."""
    return [f"10.0.{n // 250}.{n % 250 + 1}" for n in range(count)]


@pytest.mark.slow
def test_a_client_beside_the_proxy_is_one_client_whatever_forwarded_for_it_writes(served):
    statuses = reset_requests_from(served, CLIENT, made_up(limits.CLIENT_TRIES + 1))

    assert statuses == [302] * limits.CLIENT_TRIES + [429]


@pytest.mark.slow
def test_through_the_trusted_proxy_each_client_it_names_has_a_limit_of_its_own(served):
    statuses = reset_requests_from(served, PROXY, made_up(limits.CLIENT_TRIES + 1))

    assert statuses == [302] * (limits.CLIENT_TRIES + 1)


@pytest.mark.slow
def test_the_connection_cap_holds_for_a_client_beside_the_proxy_and_not_for_the_proxy(served):
    beside = [connected(served, HALF_SENT, source=CLIENT) for _ in range(CLIENT_CONNECTIONS + 1)]
    through = [connected(served, HALF_SENT, source=PROXY) for _ in range(CLIENT_CONNECTIONS + 1)]
    try:
        normal = connected(
            served, b"GET /signin HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", source=PROXY
        )
        assert status_of(normal) == 200  # answered after both: every accept before it was looked at
        assert open_among(beside) == CLIENT_CONNECTIONS
        assert open_among(through) == CLIENT_CONNECTIONS + 1
    finally:
        for connection in beside + through:
            connection.close()


@pytest.mark.slow
@pytest.mark.parametrize("args, setting", [(["--host", LISTENED], {}), ([], {"HOST": LISTENED})])
def test_serve_listens_on_the_host_it_is_given_only(database_url, db, tmp_path, args, setting):
    env = production_settings(database_url, MAIL_URL, **setting)
    served = Served(args, env, tmp_path)
    try:
        assert served.said.startswith("The guestbook is at")
        there = socket.create_connection((LISTENED, served.port), timeout=5)
        there.sendall(b"GET /signin HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        assert status_of(there) == 200
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", served.port), timeout=5)
    finally:
        assert served.stopped() == 0
