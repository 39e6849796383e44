"""waitress's limits on a real `guestbook serve`: idle or slow clients cannot hold it, huge bodies are refused unread.

Each test talks to the process over plain sockets, as a hostile client would: requests
left half-sent, or a body far past the app's limit.
"""

import resource
import socket
import threading
import time

import pytest

from guestbook import forms
from guestbook.connections import CLIENT_CONNECTIONS, REQUEST_DEADLINE
from guestbook.server import BODY_MAX, CHANNEL_TIMEOUT, CLEANUP_INTERVAL, CONNECTION_LIMIT

from .served import Served, environment

IDLE = 200  # half-sent requests held open: twice waitress's default connection_limit
ANSWER_WITHIN = 5.0  # seconds a request may take to be answered here, generously
HALF_SENT = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n"  # the headers never end
ANSWER_FAST = 1.0  # seconds an ordinary request may take while others drip
DRIP_EVERY = 1.0  # seconds between the bytes a dripping connection sends: never idle for CHANNEL_TIMEOUT
DRIPPER = "127.0.0.2"  # the address the dripping connections come from (all of 127/8 is this machine)


@pytest.fixture
def served(database_url, db, tmp_path):
    served = Served(["--development"], environment(DATABASE_URL=database_url), tmp_path)
    yield served
    assert served.stopped() == 0


def connected(served, sent: bytes = b"", source: str = "127.0.0.1") -> socket.socket:
    """A connection to the server from the address `source`, that has sent `sent`."""
    connection = socket.create_connection(("127.0.0.1", served.port), timeout=ANSWER_WITHIN, source_address=(source, 0))
    connection.sendall(sent)
    return connection


class Drips:
    """Connections that each send a request one byte every DRIP_EVERY seconds, from a thread, until stopped."""

    def __init__(self, connections: list[socket.socket]):
        self.connections, self.stopping = connections, threading.Event()
        self.thread = threading.Thread(target=self.dripped, daemon=True)
        self.thread.start()

    def dripped(self) -> None:
        while not self.stopping.wait(DRIP_EVERY):
            for connection in self.connections:
                try:
                    connection.send(b"X")  # one more byte of a header line that never ends
                except OSError:
                    pass  # the server closed it: the guard at work

    def stopped(self) -> None:
        self.stopping.set()
        self.thread.join()
        for connection in self.connections:
            connection.close()


def open_among(connections: list[socket.socket]) -> int:
    """How many of `connections` the server has not closed (a closed one reads as the end, or fails)."""
    still = 0
    for connection in connections:
        connection.setblocking(False)
        try:
            if connection.recv(1):  # an answer: open still, though not held
                still += 1
        except BlockingIOError:  # nothing to read yet: held open
            still += 1
        except OSError:  # reset by the server
            pass
    return still


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
    idle = [connected(served, HALF_SENT, source=DRIPPER) for _ in range(IDLE)]  # past the cap of one client
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
    connection = connected(
        served,
        (
            "POST /signup HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\n"
            f"Content-Length: {900 * 1024 * 1024}\r\n\r\n"
        ).encode(),
    )  # and none of the 900 MiB: the answer must not wait for them

    assert status_of(connection) == 413


@pytest.mark.slow
def test_a_chunked_body_past_the_limit_is_refused_once_it_passes_it(served):
    chunk = b"400\r\n" + b"x" * 0x400 + b"\r\n"  # 1 KiB, framed as chunked encoding frames it
    # waitress counts a chunked body's bytes with their framing. Just enough chunks to pass
    # its limit, and no more: bytes sent past the answer would only make the close a reset.
    chunks = -(-BODY_MAX // len(chunk))
    connection = connected(
        served,
        (
            b"POST /signup HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n"
        )
        + chunk * chunks,
    )  # and never the last, empty chunk

    assert status_of(connection) == 413


@pytest.mark.slow
def test_a_body_of_exactly_the_limit_reaches_the_app(served):
    body = b"email=" + b"x" * (forms.CONTENT_MAX - len(b"email="))
    connection = connected(
        served,
        (
            "POST /signup HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        ).encode()
        + body,
    )

    assert status_of(connection) == 400  # the app's own answer: no CSRF token


@pytest.mark.slow
def test_a_thousand_dripping_connections_from_one_client_leave_the_server_answering_others(served):
    """Each connection sends a byte every DRIP_EVERY, so none is idle; together they are CONNECTION_LIMIT."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 2 * CONNECTION_LIMIT:  # a common default is 1024 descriptors: too few for this test's sockets
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(2 * CONNECTION_LIMIT, hard), hard))
    drips = Drips([connected(served, HALF_SENT, source=DRIPPER) for _ in range(CONNECTION_LIMIT)])
    try:
        for _ in range(3):  # over several drips
            started = time.monotonic()
            normal = connected(served, b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            assert int(answer_to(normal, timeout=ANSWER_FAST).split(b" ", 2)[1]) == 200
            assert time.monotonic() - started < ANSWER_FAST
            time.sleep(DRIP_EVERY)  # the drips go on meanwhile
        assert open_among(drips.connections) <= CLIENT_CONNECTIONS
    finally:
        drips.stopped()


@pytest.mark.slow
def test_a_request_that_drips_is_closed_at_the_request_deadline(served):
    connection = connected(served, HALF_SENT)
    drips = Drips([connection])
    started = time.monotonic()
    try:
        assert answer_to(connection, timeout=REQUEST_DEADLINE + ANSWER_WITHIN) == b""
        assert REQUEST_DEADLINE - 1 <= time.monotonic() - started < CHANNEL_TIMEOUT + REQUEST_DEADLINE
    finally:
        drips.stopped()
