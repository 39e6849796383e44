"""What every server a spec starts needs: a free port to listen on, and a way to wait until something is so.

Waiting asks a condition again every POLL seconds until it holds or time runs out;
it is for things nothing announces (a port opening, a file appearing, a row
changing). Letters are announced, so the inbox waits on them without asking.
"""

import random
import socket
import time
from pathlib import Path

HOST = "127.0.0.1"  # every server of the specs listens here only
POLL = 0.05  # seconds between two looks at a condition nothing announces
PORTS_FROM = 20000  # the lowest port a spec's server is given
PORT_TRIES = 100  # ports tried before giving up
OUTGOING_PORTS = "/proc/sys/net/ipv4/ip_local_port_range"  # where Linux keeps the range of outgoing ports
OUTGOING_PORTS_DEFAULT = 32768  # the start of that range where it cannot be read


def free_port() -> int:
    """A TCP port of HOST that nothing listens on now (aiosmtpd cannot be given port 0 to choose one).

    It is chosen below the range the system hands out to outgoing connections: a server
    told of its port before it listens (the inbox) would otherwise find it taken by the
    browser's next connection, which a port picked by binding to 0 comes from.
    """
    below = outgoing_ports_start()
    for _ in range(PORT_TRIES):
        port = random.randrange(PORTS_FROM, below) if below - PORTS_FROM > PORT_TRIES else 0
        with socket.socket() as probe:
            try:
                probe.bind((HOST, port))
            except OSError:
                continue  # another server of this machine listens there
            return probe.getsockname()[1]
    raise RuntimeError(f"no free port of {HOST} in {PORT_TRIES} tries")


def outgoing_ports_start() -> int:
    """The first port the system may hand an outgoing connection (Linux says where; elsewhere its default)."""
    try:
        return int(Path(OUTGOING_PORTS).read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return OUTGOING_PORTS_DEFAULT


def wait_until(condition, timeout: float, what: str) -> None:
    """Returns once `condition()` is true; raises TimeoutError naming `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"waited {timeout} s for {what}")
        time.sleep(POLL)
