"""Who is asking, and by which scheme and host, when the page sits behind reverse proxies.

Behind a proxy every connection comes from the proxy's address, so the login throttle
would count all clients as one, the scheme is the proxy's plain HTTP (no ``Secure``
cookie), and a proxy that passes its own upstream ``Host`` makes the ``Origin`` check
refuse every form. The ``X-Forwarded-For``, ``-Proto`` and ``-Host`` headers say what the
proxy saw, but anyone can send them, so they are believed only from a peer listed in
``http.trusted_proxies``; from anyone else they are ignored.

``X-Forwarded-For`` is read from the right: each proxy appends the address it saw, so
the first address from the right that is not itself a trusted proxy is the client (a
client can put anything on the left; nothing on the right of its own entry). uvicorn's
own proxy-header handling is switched off (``server``) so this is the one place.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

from starlette.types import Scope

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def _address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(text.strip().strip("[]"))
    except ValueError:
        return None


def _last(value: str) -> str:
    """The value the nearest proxy added: the last of a comma-separated list."""
    return value.rsplit(",", 1)[-1].strip()


class TrustedProxies:
    """The configured proxies, and the scope rewrite for requests that come through them."""

    def __init__(self, entries: Iterable[str] = ()) -> None:
        self.networks: list[Network] = [ipaddress.ip_network(e, strict=False) for e in entries]

    def trusts(self, peer: str | None) -> bool:
        """True when ``peer`` (an address as the socket reports it) is a listed proxy."""
        address = _address(peer) if peer else None
        return address is not None and any(address in net for net in self.networks)

    def client(self, peer: str, forwarded_for: str | None) -> str:
        """The client's address: ``peer`` itself unless it is a trusted proxy; then the
        rightmost ``X-Forwarded-For`` entry that is not a trusted proxy (or the leftmost
        if every one is)."""
        if not forwarded_for or not self.trusts(peer):
            return peer
        hops = [h.strip() for h in forwarded_for.split(",") if h.strip()]
        for hop in reversed(hops):
            if not self.trusts(hop):
                return hop if _address(hop) is not None else peer
        return hops[0] if hops and _address(hops[0]) is not None else peer

    def apply(self, scope: Scope) -> None:
        """Rewrite ``scope``'s client and scheme, and note the forwarded host, when the
        peer is a trusted proxy; leave it untouched otherwise."""
        peer = scope.get("client")
        if not self.networks or not peer or not self.trusts(peer[0]):
            return
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        client = self.client(peer[0], headers.get("x-forwarded-for"))
        scope["client"] = (client, 0 if client != peer[0] else peer[1])
        proto = _last(headers.get("x-forwarded-proto", "")).lower()
        if proto in ("http", "https"):
            scope["scheme"] = proto
        host = _last(headers.get("x-forwarded-host", ""))
        if host:
            scope.setdefault("state", {})["forwarded_host"] = host
