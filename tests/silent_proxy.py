"""A TCP proxy in front of a test's PostgreSQL whose open connections can be made to go silent.

New connections always pass; `silenced` makes the ones open now go silent, in one of
the two ways a network does it:
- "hold": the proxy keeps reading what each side sends and forwards none of it. Its
  kernel still acknowledges every packet, as a hung pooler's or proxy's would: only a
  bound on the wait for an answer sees it.
- "drop": the packets of those connections are dropped on the way (a firewall rule on
  the loopback, for each connection's pair of ports), as by a NAT or firewall that
  forgot them: nothing is acknowledged, so keepalives and tcp_user_timeout see it.
  It takes root and iptables.
"""

import socket
import subprocess
import threading
from urllib.parse import urlsplit, urlunsplit

CHUNK = 65536  # bytes read at once


class SilentProxy:
    """Listens on 127.0.0.1:`port` and forwards each connection to `target` (host, port)."""

    def __init__(self, target: tuple[str, int]):
        self.target = target
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._pairs: list[Pair] = []
        self._chain = f"SILENT{self.port}"  # the firewall chain of "drop", removed by close()
        self._chained = False
        threading.Thread(target=self._accepting, name="silent-proxy", daemon=True).start()

    def url(self, url: str) -> str:
        """`url` (a postgresql:// address of the target) through the proxy."""
        parts = urlsplit(url)
        user = parts.netloc.rpartition("@")[0]
        return urlunsplit(parts._replace(netloc=f"{user}@127.0.0.1:{self.port}" if user else f"127.0.0.1:{self.port}"))

    def silenced(self, mode: str) -> int:
        """Makes every connection open now go silent ("hold" or "drop"); returns how many there were."""
        if mode not in ("hold", "drop"):
            raise ValueError(f"a silence is 'hold' or 'drop', not {mode!r}")
        with self._lock:
            pairs = [pair for pair in self._pairs if not pair.silent and not pair.closed]
            for pair in pairs:
                pair.silent = True
        if mode == "drop":
            self._dropped([pair.client_port for pair in pairs])
        return len(pairs)

    def close(self) -> None:
        """Stops listening, closes every connection and removes the firewall rules."""
        self._listener.close()
        with self._lock:
            for pair in self._pairs:
                pair.close()
        if self._chained:
            iptables("-D", "INPUT", "-i", "lo", "-j", self._chain)
            iptables("-F", self._chain)
            iptables("-X", self._chain)

    def _accepting(self) -> None:
        while True:
            try:
                client, address = self._listener.accept()
            except OSError:
                return  # closed
            try:
                server = socket.create_connection(self.target)
            except OSError:
                client.close()
                continue
            pair = Pair(client, server, address[1])
            with self._lock:
                self._pairs.append(pair)
            for source, sink in ((client, server), (server, client)):
                threading.Thread(target=pair.pumped, args=(source, sink), daemon=True).start()

    def _dropped(self, client_ports: list[int]) -> None:
        """Drops, on the loopback, every packet between the proxy and these client ports, both ways."""
        if not self._chained:
            iptables("-N", self._chain)
            iptables("-I", "INPUT", "-i", "lo", "-j", self._chain)
            self._chained = True
        for port in client_ports:
            iptables("-A", self._chain, "-p", "tcp", "--sport", str(port), "--dport", str(self.port), "-j", "DROP")
            iptables("-A", self._chain, "-p", "tcp", "--sport", str(self.port), "--dport", str(port), "-j", "DROP")


class Pair:
    """A client's connection and the proxy's to the server, and whether they have gone silent."""

    def __init__(self, client: socket.socket, server: socket.socket, client_port: int):
        self.client, self.server, self.client_port = client, server, client_port
        self.silent = self.closed = False

    def pumped(self, source: socket.socket, sink: socket.socket) -> None:
        """Forwards what `source` sends to `sink` until either closes; once silent, reads and forwards nothing."""
        try:
            while data := source.recv(CHUNK):
                if not self.silent:
                    sink.sendall(data)
        except OSError:
            pass
        if not self.silent:  # a silent connection never says it ended, either
            self.close()

    def close(self) -> None:
        self.closed = True
        for end in (self.client, self.server):
            try:
                end.close()
            except OSError:
                pass


def iptables(*args: str) -> None:
    subprocess.run(["iptables", "-w", *args], check=True, capture_output=True, timeout=30)
