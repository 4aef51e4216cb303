"""Who the client is behind a reverse proxy: ``Forwarded`` (RFC 7239), ``X-Forwarded-For``
and ``X-Forwarded-Proto``.

Behind nginx every connection comes from the proxy, so the peer address says nothing about
the visitor: the access log shows the proxy, ``conn.peer`` is the proxy, and a page guarded
"loopback only" (``/_pyweb/status``, ``/_pyweb/stats``) is open to the whole Internet. A
proxy says who it forwards for in header fields; the server believes them **only** when
the connection comes from a proxy it was told to trust, because any client can send them.

The settings have uvicorn's names: ``proxy_headers`` (on by default) and
``forwarded_allow_ips`` (addresses or networks, comma-separated, ``"*"`` for any; default
``127.0.0.1``). The fields, in the order they are preferred:

* ``Forwarded: for=192.0.2.60;proto=https, for="[2001:db8::17]:4711"`` (RFC 7239 §4): a
  list of elements of ``name=value`` pairs, values tokens or quoted strings; the node of
  ``for=`` (§6) is an address with an optional port, ``unknown`` or an obfuscated
  ``_name``; ``proto=`` is the scheme the element's proxy was reached with.
* ``X-Forwarded-For: client, proxy1, proxy2`` with ``X-Forwarded-Proto``: the de-facto
  pair, whose entries are written the same ways (nginx, HAProxy, cloud balancers add ports,
  ``[v6]:port`` or ``unknown``).

The client is found from the right: the first node that is not itself a trusted proxy
(each proxy appends the address it got the request from, so only the entries added by
trusted proxies can be believed). A node that is not an address (``unknown``, an
obfuscated name, or an entry that does not parse) names a client the proxy could not or
would not identify: that client gets an opaque name (``unknown``, or the obfuscated
``_name``), which is never loopback and never trusted, so the walk stops there. It is
never replaced by the proxy's own address, which behind nginx is loopback and would open
the operator pages and merge every visitor's rate-limit bucket.

Cost: whether the connection's address is trusted is decided once per connection; only then
are the request's fields looked at.
"""

from __future__ import annotations

import ipaddress
import re
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
    # The proxy's port for the client is not kept; 0 keeps the "host:port" shape.
    return f"[{host}]:0" if ":" in host else f"{host}:0"


UNKNOWN = "unknown"
"""The name of a client whose proxy did not give (or garbled) its address."""

_OBFUSCATED = re.compile(r"_[A-Za-z0-9._-]{1,64}")  # RFC 7239 §6.3 obfnode
_PORT = re.compile(r"[0-9]{1,5}|_[A-Za-z0-9._-]{1,64}")  # §6.1 node-port (or obfport)
# name=value, the value a token or a quoted string (§4); ':' and brackets are tolerated
# unquoted, as some proxies write "for=192.0.2.1:80" against the RFC.
_PAIR = re.compile(
    r'[ \t]*([!#$%&\'*+.^_`|~0-9A-Za-z-]+)=("(?:[^"\\]|\\.)*"|[!#$%&\'*+.^_`|~0-9A-Za-z:\[\]-]+)[ \t]*'
)


def parse_node(text: str) -> tuple[_Address | None, str]:
    """One node (RFC 7239 §6, also the entries of ``X-Forwarded-For``): ``(address, name)``.

    ``"203.0.113.9:5555"`` and ``"[2001:db8::1]:443"`` give the address without the port;
    ``"unknown"``, an obfuscated ``"_proxy1"`` or text that is no node give ``(None, name)``
    with ``name`` the opaque name the client is then known by."""
    node = text.strip()
    if node.startswith("["):  # "[v6]" or "[v6]:port"
        close = node.find("]")
        rest = node[close + 1 :] if close > 0 else "?"
        if close > 0 and (not rest or rest[0] == ":" and _PORT.fullmatch(rest[1:])):
            address = _address(node[1:close])
            if isinstance(address, ipaddress.IPv6Address):
                return address, str(address)
        return None, UNKNOWN
    host, colon, port = node.partition(":")
    if colon and ":" not in port and _PORT.fullmatch(port):  # "v4:port"
        node = host
    address = _address(node) if "[" not in node else None
    if address is not None:
        return address, str(address)
    if node == host and _OBFUSCATED.fullmatch(node):
        return None, node
    return None, UNKNOWN


def _split(text: str, separator: str) -> list[str]:
    """``text`` split at ``separator`` outside quoted strings (RFC 9110 §5.6.4)."""
    parts, start, quoted, escaped = [], 0, False, False
    for i, c in enumerate(text):
        if escaped:
            escaped = False
        elif quoted and c == "\\":
            escaped = True
        elif c == '"':
            quoted = not quoted
        elif c == separator and not quoted:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def _forwarded_elements(value: str) -> list[dict[str, str]] | None:
    """The elements of a ``Forwarded`` value (RFC 7239 §4), each a dict of lower-cased
    parameter names to values (quotes removed); ``None`` when the value does not parse.
    Empty list elements are skipped (RFC 9110 §5.6.1)."""
    elements = []
    for text in _split(value, ","):
        if not text.strip(" \t"):
            continue
        pairs: dict[str, str] = {}
        for pair in _split(text, ";"):
            match = _PAIR.fullmatch(pair)
            if match is None:
                return None
            name, raw = match.group(1).lower(), match.group(2)
            if raw.startswith('"'):
                raw = re.sub(r"\\(.)", r"\1", raw[1:-1])
            if name in pairs:
                return None  # §4: a parameter appears at most once per element
            pairs[name] = raw
        elements.append(pairs)
    return elements


def _walk(nodes: list[str], peer: str, trusts: Callable[[str], bool]) -> tuple[str, int]:
    """The client among ``nodes`` (left to right, as written), walking from the right;
    and the index of its node (-1: no node, the peer itself)."""
    client, index = peer, -1
    for index in range(len(nodes) - 1, -1, -1):
        address, name = parse_node(nodes[index])
        if address is None:
            return _as_peer(name), index  # not an address: opaque, untrusted, the end
        client = _as_peer(name)
        if not trusts(name):
            break
    return client, index


def forwarded(
    headers: list[tuple[str, str]], peer: str, trusts: Callable[[str], bool]
) -> tuple[str, str]:
    """``(client peer, scheme)`` for a request that came through a trusted proxy ``peer``.

    Without the fields the answer is ``(peer, "http")``. ``Forwarded`` is preferred to
    ``X-Forwarded-For`` when both are sent; a ``Forwarded`` that does not parse names an
    unknown client (see the module's docstring)."""
    xff = proto = rfc = None
    for name, value in headers:
        if name == "x-forwarded-for":
            xff = value if xff is None else xff + "," + value  # several fields: one list
        elif name == "x-forwarded-proto":
            proto = value
        elif name == "forwarded":
            rfc = value if rfc is None else rfc + "," + value
    if rfc is not None:
        return _from_forwarded(rfc, peer, trusts)
    client = peer
    if xff is not None:
        client, _ = _walk(xff.split(","), peer, trusts)
    scheme = "http"
    if proto is not None:
        last = proto.rsplit(",", 1)[-1].strip().lower()
        if last in ("http", "https"):
            scheme = last
    return client, scheme


def _from_forwarded(value: str, peer: str, trusts: Callable[[str], bool]) -> tuple[str, str]:
    elements = _forwarded_elements(value)
    if not elements:  # does not parse, or says nothing: the client is not named
        return _as_peer(UNKNOWN), "http"
    nodes = [element.get("for", UNKNOWN) for element in elements]
    client, index = _walk(nodes, peer, trusts)
    scheme = "http"
    if index >= 0:  # the proto the edge proxy (the one that named the client) was reached by
        proto = elements[index].get("proto", "http").lower()
        scheme = proto if proto in ("http", "https") else "http"
    return client, scheme
