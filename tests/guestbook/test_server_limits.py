"""waitress's limits on a real `guestbook serve`: idle or slow clients cannot hold it, huge bodies are refused unread.

Each test talks to the process over plain sockets, as a hostile client would: requests
left half-sent, or a body far past the app's limit.
"""

import socket
import time

import pytest

from guestbook import forms, limits
from guestbook.__main__ import BODY_MAX, CHANNEL_TIMEOUT, CLEANUP_INTERVAL

from .served import Served, environment

IDLE = 200  # half-sent requests held open: twice waitress's default connection_limit
ANSWER_WITHIN = 5.0  # seconds a request may take to be answered here, generously
HALF_SENT = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n"  # the headers never end


@pytest.fixture
def served(database_url, db, tmp_path):
    served = Served(["--development"], environment(DATABASE_URL=database_url), tmp_path)
    yield served
    assert served.stopped() == 0


def connected(served, sent: bytes = b"") -> socket.socket:
    """A connection to the server that has sent `sent`."""
    connection = socket.create_connection(("127.0.0.1", served.port), timeout=ANSWER_WITHIN)
    connection.sendall(sent)
    return connection


def answer_to(connection: socket.socket, timeout: float = ANSWER_WITHIN) -> bytes:
    """Everything the server sends on `connection` until it closes it (or `timeout` passes: TimeoutError)."""
    connection.settimeout(timeout)
    received = b""
    while chunk := connection.recv(65536):
        received += chunk
    return received


def status_of(connection: socket.socket) -> int:
    """The status of the answer that comes on `connection`."""
    return int(answer_to(connection).split(b" ", 2)[1])


@pytest.mark.slow
def test_idle_half_sent_requests_do_not_stop_the_server_answering(served):
    idle = [connected(served, HALF_SENT) for _ in range(IDLE)]
    try:
        normal = connected(served, b"GET /signin HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        started = time.monotonic()
        assert status_of(normal) == 200
        assert time.monotonic() - started < ANSWER_WITHIN
    finally:
        for connection in idle:
            connection.close()


@pytest.mark.slow
def test_a_connection_that_stops_sending_is_closed_after_the_channel_timeout(served):
    connection = connected(served, HALF_SENT)
    started = time.monotonic()

    assert answer_to(connection, timeout=CHANNEL_TIMEOUT + CLEANUP_INTERVAL + ANSWER_WITHIN) == b""
    assert time.monotonic() - started >= CHANNEL_TIMEOUT - 1  # waitress's clock ticks in whole seconds


@pytest.mark.slow
def test_a_body_past_the_limit_is_refused_before_it_is_read(served):
    connection = connected(served, (
        "POST /signup HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\n"
        f"Content-Length: {900 * 1024 * 1024}\r\n\r\n"
    ).encode())  # and none of the 900 MiB: the answer must not wait for them

    assert status_of(connection) == 413


@pytest.mark.slow
def test_a_chunked_body_past_the_limit_is_refused_once_it_passes_it(served):
    chunk = b"400\r\n" + b"x" * 0x400 + b"\r\n"  # 1 KiB, framed as chunked encoding frames it
    # waitress counts a chunked body's bytes with their framing. Just enough chunks to pass
    # its limit, and no more: bytes sent past the answer would only make the close a reset.
    chunks = -(-BODY_MAX // len(chunk))
    connection = connected(served, (
        b"POST /signup HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n"
    ) + chunk * chunks)  # and never the last, empty chunk

    assert status_of(connection) == 413


@pytest.mark.slow
def test_a_body_of_exactly_the_limit_reaches_the_app(served):
    body = b"email=" + b"x" * (forms.CONTENT_MAX - len(b"email="))
    connection = connected(served, (
        "POST /signup HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode() + body)

    assert status_of(connection) == 400  # the app's own answer: no CSRF token


@pytest.mark.slow
def test_behind_a_trusted_proxy_each_client_it_names_has_a_limit_of_its_own(database_url, db, tmp_path):
    served = Served(["--development"], environment(DATABASE_URL=database_url, TRUSTED_PROXIES="1"), tmp_path)
    try:
        visitor = served.visitor()
        token = visitor.csrf_token()
        statuses = []
        for n in range(limits.CLIENT_TRIES + 1):  # one more than one client may send
            connection = connected(served, (
                "POST /resets/new HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\n"
                f"Cookie: {visitor.cookie}\r\nX-Forwarded-For: 10.0.0.{n + 1}\r\nConnection: close\r\n"
                f"Content-Length: {len(body := f'csrf_token={token}&email=ada%40example.com')}\r\n\r\n{body}"
            ).encode())
            statuses.append(status_of(connection))
        assert statuses == [302] * (limits.CLIENT_TRIES + 1)
    finally:
        assert served.stopped() == 0
