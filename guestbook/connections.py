"""The web server's connections, guarded against slow clients: a deadline per request, and a cap per client.

waitress (started by server.py) closes a connection that sends nothing for
CHANNEL_TIMEOUT, and serves at most CONNECTION_LIMIT at once, for every client
together. A client that sends a byte every few seconds is never idle, so a thousand
such connections (a few hundred bytes a second in all, "slowloris") would fill that
limit and the site would answer no one. `guarded` gives waitress a connection that
closes them: every request must arrive whole, head and body, within REQUEST_DEADLINE
of its first byte, and one client (limits.client: an address, or an IPv6 /64) holds
at most CLIENT_CONNECTIONS at once; one more is closed as soon as it is accepted.

A proxy's connections (an address TRUSTED_PROXIES names, proxies.py) carry every
client's, so they are not capped, and the cap behind it is the proxy's; it should
buffer each request (nginx does) so none arrives slowly. Every other peer is capped,
one beside the proxy included. Many addresses dripping at once are a flood a proxy
or the network must stop.
"""

import time
from collections import Counter

from waitress.channel import HTTPChannel

from . import proxies
from .limits import client

REQUEST_DEADLINE = 10  # seconds a request may take to arrive whole from its first byte: 50 B/s for a head,
# 6 KiB/s for the biggest form
CLIENT_CONNECTIONS = (
    50  # connections one client may hold at once: a browser opens 6 to a site, and an office shares an address
)


def guarded(trusted: tuple[proxies.Network, ...]) -> type:
    """waitress's connection with the deadline, and with the cap per client for every peer not in `trusted` (the
    proxies')."""
    return type("GuardedChannel", (GuardedChannel,), {"trusted": trusted, "held": Counter()})


class GuardedChannel(HTTPChannel):
    """One connection, closed when a request takes longer than REQUEST_DEADLINE or its client holds too many.

    waitress runs these methods on its one loop thread, which also accepts and closes
    connections, so `held` (the connections each client holds, one Counter per server) needs no lock.
    """

    trusted: tuple[proxies.Network, ...] = ()  # the peers not capped: the proxies'
    held: Counter
    began = None  # time.monotonic() at the first byte of the request being received; None between requests
    counted = False

    def __init__(self, server, sock, addr, adj, map=None):
        super().__init__(server, sock, addr, adj, map)
        self.client = client(addr[0]) if isinstance(addr, tuple) else None
        if self.client is None or proxies.trusted(addr[0], self.trusted):
            return
        self.held[self.client] += 1
        self.counted = True
        if self.held[self.client] > CLIENT_CONNECTIONS:
            self.will_close = True  # before a byte is read: the loop's next turn closes it

    def received(self, data: bytes) -> bool:
        """Reads what came, noting when a request began; a request handed on whole ends the count."""
        began = self.began or time.monotonic()
        taken = super().received(data)
        self.began = began if self.request is not None else None
        return taken

    def writable(self) -> bool:
        """Asked on every turn of waitress's loop: a request past its deadline makes the connection close now."""
        if self.began is not None and not self.requests and time.monotonic() - self.began > REQUEST_DEADLINE:
            self.will_close = True  # never while an earlier request of the connection is served
        return super().writable()

    def del_channel(self, map=None) -> None:
        """Forgets the connection, and counts it no more against its client."""
        if self.counted:
            self.counted = False
            self.held[self.client] -= 1
            if not self.held[self.client]:
                del self.held[self.client]
        super().del_channel(map)
