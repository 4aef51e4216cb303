"""The WebSocket opening handshake (RFC 6455 §4.2), sans-IO: a request in, a decision out.

A WebSocket starts as an HTTP/1.1 GET that asks to switch protocols (RFC 6455 §4.1)::

    GET /chat/ws HTTP/1.1
    Host: example.org
    Upgrade: websocket
    Connection: Upgrade
    Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==
    Sec-WebSocket-Version: 13
    Origin: http://example.org

:func:`check_handshake` decides, from the parsed :class:`~pyweb.protocol.events.Request`
alone, whether the server accepts it; the answer is either the ``101 Switching Protocols``
head to send (:func:`accept_head`) or a :class:`HandshakeError` carrying the status to
answer with: 400 for a malformed handshake, 426 (with ``Sec-WebSocket-Version: 13``) for
a plain GET or another protocol version, 403 for a page of another site.

The Origin check is what keeps a page of another site from opening a WebSocket on this one
with the visitor's cookies (browsers do not apply the same-origin policy to WebSockets;
RFC 6455 §10.2 leaves the check to the server). A browser always sends ``Origin``; a
request without one comes from a program, which has no visitor's cookies to abuse, and is
accepted. With an ``Origin``, the handshake is accepted when the origin's host and port are
the request's ``Host``, or the origin is in the allowed list (``"*"`` allows every origin).

The frames after the handshake are wsproto's job (:mod:`pyweb.server.websocket`), compressed
when the client offers it (:mod:`pyweb.protocol.websocket_deflate`).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from wsproto.utilities import generate_accept_token

from .messages import Request
from .response import Response

__all__ = [
    "HandshakeError",
    "WebSocketOptions",
    "WebSocketClosed",
    "WebSocketUpgrade",
    "accept_head",
    "check_handshake",
    "same_origin",
]


class WebSocketClosed(Exception):
    """The WebSocket is closed: ``code`` and ``reason`` of the Close (1006: the connection
    was lost without one). Raised by ``ws.recv()`` and ``ws.send()``; ``pyweb.WebSocketClosed``."""

    def __init__(self, code: int, reason: str = "") -> None:
        super().__init__(f"the WebSocket is closed ({code}{': ' + reason if reason else ''})")
        self.code = code
        self.reason = reason


class HandshakeError(Exception):
    """A handshake the server refuses: answer ``status`` with ``headers`` and the message."""

    def __init__(self, status: int, message: str, headers: list[tuple[str, str]] | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers or []


def _tokens(value: str | None) -> set[str]:
    return {t.strip().lower() for t in (value or "").split(",") if t.strip()}


def _host_port(authority: str, default: int) -> tuple[str, int] | None:
    """``host[:port]`` or ``[v6]:port`` → (lower-case host, port); None when malformed.
    Written out rather than with ``urlsplit``, which is lenient (``other-[::1]`` would
    give the host ``::1``)."""
    if authority.startswith("["):
        host, sep, rest = authority[1:].partition("]")
        if not sep or not host or (rest and not rest.startswith(":")):
            return None
        port_text = rest[1:]
    else:
        host, _, port_text = authority.partition(":")
        if not host or "[" in host or "]" in host:
            return None
    if port_text and not (port_text.isascii() and port_text.isdigit()):
        return None
    port = int(port_text) if port_text else default
    if not 0 < port < 65536 or any(c in host for c in "/?#@ \t\\"):
        return None
    return host.lower(), port


def same_origin(origin: str, host: str | None) -> bool:
    """Whether ``origin`` (``http://example.org:8000``) names the same host and port as the
    request's ``Host`` field (``example.org:8000``); default ports are filled in."""
    scheme, sep, authority = origin.partition("://")
    if not sep or scheme.lower() not in ("http", "https") or not host:
        return False
    default = 443 if scheme.lower() == "https" else 80
    mine = _host_port(authority, default)
    return mine is not None and mine == _host_port(host, default)


def check_handshake(request: Request, origins: Iterable[str] | str = ()) -> str:
    """Check an opening handshake; return the ``Sec-WebSocket-Accept`` value to answer with.

    ``origins``: origins allowed besides the request's own host (``"*"``: any). Raises
    :class:`HandshakeError` naming what is wrong."""
    if request.method != "GET":
        raise HandshakeError(405, f"a WebSocket opens with GET, not {request.method}",
                             [("Allow", "GET")])  # fmt: skip
    upgrade = _tokens(request.header("upgrade"))
    if "websocket" not in upgrade:
        raise HandshakeError(
            426,
            "this URL is a WebSocket: the request must ask for Upgrade: websocket",
            [("Upgrade", "websocket"), ("Connection", "Upgrade"), ("Sec-WebSocket-Version", "13")],
        )
    if request.http_version != "1.1":
        raise HandshakeError(400, "a WebSocket handshake needs HTTP/1.1")
    if "upgrade" not in _tokens(request.header("connection")):
        raise HandshakeError(400, "a WebSocket handshake needs Connection: Upgrade")
    version = (request.header("sec-websocket-version") or "").strip()
    if version != "13":
        raise HandshakeError(
            426,
            f"unsupported WebSocket version {version!r} (this server speaks 13)",
            [("Sec-WebSocket-Version", "13")],
        )
    key = (request.header("sec-websocket-key") or "").strip()
    try:
        nonce = base64.b64decode(key, validate=True)
    except (binascii.Error, ValueError):
        nonce = b""
    if len(nonce) != 16:
        raise HandshakeError(400, f"bad Sec-WebSocket-Key {key!r} (16 bytes in base64)")
    origin = request.header("origin")
    if origin is not None and origins != "*":
        allowed = set() if isinstance(origins, str) else set(origins)
        if origin not in allowed and not same_origin(origin, request.host):
            raise HandshakeError(403, f"a page from {origin} may not open this WebSocket")
    return generate_accept_token(key.encode()).decode("ascii")


def accept_head(accept: str, headers: Iterable[tuple[str, str]] = ()) -> bytes:
    """The ``101 Switching Protocols`` head that completes the handshake."""
    lines = [
        "HTTP/1.1 101 Switching Protocols",
        "Upgrade: websocket",
        "Connection: Upgrade",
        f"Sec-WebSocket-Accept: {accept}",
    ]
    for name, value in headers:
        if "\r" in name + value or "\n" in name + value:
            raise ValueError(f"a header field may not contain CR or LF: {name!r}: {value!r}")
        lines.append(f"{name}: {value}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


@dataclass(frozen=True, slots=True)
class WebSocketOptions:
    """The settings of one WebSocket URL (``@pyweb.websocket(path, ...)``)."""

    origins: tuple[str, ...] | str = ()
    """Origins allowed besides the site's own (``"*"``: every origin)."""
    max_message: int = 1 << 20
    """Largest message accepted, in bytes (after reassembly, and after inflating a compressed
    one); a larger one closes with 1009."""
    ping_interval: float = 20.0
    """Seconds of quiet before a ping; a peer that does not answer it within as long again
    is dropped."""
    close_timeout: float = 5.0
    """Seconds to wait for the peer's Close after ours, and for a handler to end after the
    peer's Close or a server shutdown (then it is cancelled)."""
    max_fragments: int = 1024
    """Most frames one message may come in; more closes with 1009 (empty fragments cost
    the server work but count for nothing against ``max_message``)."""
    compression: bool = True
    """Accept a client's permessage-deflate offer (:mod:`.websocket_deflate`)."""
    compression_window_bits: int = 12
    """The largest compression window (2**bits bytes, 9..15) the server keeps per socket for
    its own messages, and for the client's when the client lets the server choose."""
    compression_no_context_takeover: bool = False
    """Both sides start each message's compression afresh: no zlib state kept between
    messages, worse compression of many small similar messages."""

    def __post_init__(self) -> None:
        for name in ("max_message", "max_fragments"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} is a positive whole number, got {value!r}")
        bits = self.compression_window_bits
        if not isinstance(bits, int) or isinstance(bits, bool) or not 9 <= bits <= 15:
            raise ValueError(f"compression_window_bits is from 9 to 15, got {bits!r}")
        for name in ("ping_interval", "close_timeout"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or not value > 0:
                raise ValueError(f"{name} is a positive number of seconds, got {value!r}")


@dataclass(slots=True)
class WebSocketUpgrade(Response):
    """What a handler returns to accept a WebSocket: the server sends the ``101`` head and
    runs ``session(ws)`` on the connection (:mod:`pyweb.server.websocket`)."""

    status: int = 101
    accept: str = ""
    """The ``Sec-WebSocket-Accept`` value (:func:`check_handshake`)."""
    session: Callable[[Any], Awaitable[None]] | None = None
    """``async def session(ws)``: the handler that talks on the socket."""
    options: WebSocketOptions = field(default_factory=WebSocketOptions)
