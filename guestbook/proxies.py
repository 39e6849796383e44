"""Who a request comes from when proxies stand in front: the addresses TRUSTED_PROXIES names, and no one else, vouch.

A proxy adds the address it saw to X-Forwarded-For, but any client can send that
header too. So the header is believed only from a connection whose peer is one of the
proxies' addresses (as gunicorn's forwarded_allow_ips is a list of them), read from
its right end, where the nearest proxy wrote: the client is the first address there
that is not a trusted proxy's. A connection from anywhere else is its own client,
whatever it writes. `proxied` sets REMOTE_ADDR to it before the app sees the request
(limits.py counts tries by it); connections.py caps every peer that is not a proxy.
"""

import ipaddress

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
FORWARDED_MAX = 20  # addresses of X-Forwarded-For read from its right end, at most: proxies are never that many


def parsed(text: str) -> tuple[Network, ...]:
    """The networks of a TRUSTED_PROXIES value ("" for none): addresses or CIDRs, separated by commas.

    Raises a ValueError saying what is wrong, the count of earlier versions included."""
    parts = [part.strip() for part in text.split(",") if part.strip()]
    if len(parts) == 1 and parts[0].isascii() and parts[0].isdigit():
        raise ValueError(
            f"TRUSTED_PROXIES names the proxies' addresses now, not how many there are (got {text.strip()!r}): "
            "set it to the address or network each proxy connects from, as 127.0.0.1 or 10.0.0.0/8,10.1.2.3"
        )
    networks = []
    for part in parts:
        try:
            networks.append(ipaddress.ip_network(part, strict=False))
        except ValueError:
            raise ValueError(
                f"TRUSTED_PROXIES takes addresses or networks separated by commas, as 10.0.0.0/8,10.1.2.3; got {part!r}"
            ) from None
    return tuple(networks)


def trusted(address: str | None, proxies: tuple[Network, ...]) -> bool:
    """Whether `address` (a peer's, as text) is one of `proxies`; an IPv4 address on a dual-stack socket counts."""
    try:
        ip = ipaddress.ip_address(address or "")
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return any(ip in network for network in proxies)


def client_address(peer: str, forwarded_for: str, proxies: tuple[Network, ...]) -> str:
    """The client's address: `peer`'s own unless it is a trusted proxy, then the nearest untrusted one it names."""
    if not trusted(peer, proxies) or not forwarded_for.strip():
        return peer  # the proxy's own request (a health check) names no one else
    named = [part.strip() for part in forwarded_for.split(",")][-FORWARDED_MAX:]
    for address in reversed(named):
        if not trusted(address, proxies):
            return address  # possibly no address at all (limits.client counts it as unknown)
    return named[0]  # every hop a proxy: the farthest is the client


def proxied(wsgi_app, proxies: tuple[Network, ...]):
    """`wsgi_app` with REMOTE_ADDR the client's address (`client_address`) instead of the peer's."""

    def app(environ, start_response):
        peer = environ.get("REMOTE_ADDR", "")
        environ["REMOTE_ADDR"] = client_address(peer, environ.get("HTTP_X_FORWARDED_FOR", ""), proxies)
        return wsgi_app(environ, start_response)

    return app
