"""What every server a spec starts needs: a free port to listen on, and a way to wait until something is so.

Waiting asks a condition again every POLL seconds until it holds or time runs out;
it is for things nothing announces (a port opening, a file appearing, a row
changing). Letters are announced, so the inbox waits on them without asking.
"""

import socket
import time

HOST = "127.0.0.1"  # every server of the specs listens here only
POLL = 0.05  # seconds between two looks at a condition nothing announces


def free_port() -> int:
    """A TCP port of HOST that nothing listens on now (aiosmtpd cannot be given port 0 to choose one)."""
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        return probe.getsockname()[1]


def wait_until(condition, timeout: float, what: str) -> None:
    """Returns once `condition()` is true; raises TimeoutError naming `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"waited {timeout} s for {what}")
        time.sleep(POLL)
