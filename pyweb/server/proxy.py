"""Who the client is behind a reverse proxy: ``X-Forwarded-For`` and ``X-Forwarded-Proto``.

Behind nginx every connection comes from the proxy, so the peer address says nothing about
the visitor: the access log shows the proxy, ``conn.peer`` is the proxy, and a page guarded
"loopback only" (``/_pyweb/status``, ``/_pyweb/stats``) is open to the whole Internet. A
proxy says who it forwards for in two header fields; the server believes them **only** when
the connection comes from a proxy it was told to trust, because any client can send them.

The settings have uvicorn's names: ``proxy_headers`` (on by default) and
``forwarded_allow_ips`` (addresses or networks, comma-separated, ``"*"`` for any; default
``127.0.0.1``). From ``X-Forwarded-For: client, proxy1, proxy2`` the client is found from
the right: the first address that is not itself a trusted proxy (each proxy appends the
address it got the request from, so only the entries added by trusted proxies can be
believed). ``X-Forwarded-Proto`` gives the scheme (``http`` or ``https``) the client used.

Cost: whether the connection's address is trusted is decided once per connection; only then
are the request's fields looked at.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable

__all__ = ["TrustedProxies", "forwarded"]

_Address = ipaddress.IPv4Address | ipaddress.IPv6Address


class TrustedProxies:
    """The parsed ``forwarded_allow_ips``: ``proxies.trusts("10.0.0.7")``."""

    __slots__ = ("text", "_any", "_networks", "_seen")

    def __init__(self, text: str) -> None:
        self.text = text
        self._any = False
        self._seen: dict[str, bool] = {}
        """The answer for hosts asked about lately: parsing an address costs more than
        the rest of accepting a connection (a flood of reconnects asks thousands of
        times a second, mostly about the same few hosts)."""
        self._networks: list[ipaddress.IPv4Network | ipaddress.IPv6Network] = []
        for item in text.split(","):
            item = item.strip()
            if not item:
                continue
            if item == "*":
                self._any = True
                continue
            try:
                self._networks.append(ipaddress.ip_network(item, strict=False))
            except ValueError:
                raise ValueError(
                    f"forwarded_allow_ips: {item!r} is not an address or a network"
                ) from None

    def trusts(self, host: str) -> bool:
        if self._any:
            return True
        seen = self._seen
        trusted = seen.get(host)
        if trusted is None:
            address = _address(host)
            trusted = address is not None and any(address in net for net in self._networks)
            if len(seen) >= 1024:
                seen.clear()  # (bounded: clients by the thousand come and go)
            seen[host] = trusted
        return trusted


def _address(host: str) -> _Address | None:
    host = host.strip().strip("[]")
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def peer_host(peer: str) -> str:
    """``"1.2.3.4"`` from ``"1.2.3.4:5678"``, ``"::1"`` from ``"[::1]:5678"``."""
    if peer.startswith("["):
        return peer[1 : peer.find("]")] if "]" in peer else peer
    if peer.count(":") == 1:
        return peer.partition(":")[0]
    return peer


def _as_peer(host: str) -> str:
    # The proxy does not say the client's port; 0 keeps the "host:port" shape.
    return f"[{host}]:0" if ":" in host else f"{host}:0"


def forwarded(
    headers: list[tuple[str, str]], peer: str, trusts: Callable[[str], bool]
) -> tuple[str, str]:
    """``(client peer, scheme)`` for a request that came through a trusted proxy ``peer``.

    Without the fields the answer is ``(peer, "http")``; a malformed entry stops the walk
    (what is left of it cannot be believed) and the last believed address is the client."""
    xff = proto = None
    for name, value in headers:
        if name == "x-forwarded-for":
            xff = value if xff is None else xff + "," + value  # several fields: one list
        elif name == "x-forwarded-proto":
            proto = value
    client = peer
    if xff is not None:
        for entry in reversed(xff.split(",")):
            host = entry.strip()
            if _address(host) is None:
                break
            client = _as_peer(host)
            if not trusts(host):
                break
    scheme = "http"
    if proto is not None:
        last = proto.rsplit(",", 1)[-1].strip().lower()
        if last in ("http", "https"):
            scheme = last
    return client, scheme
