"""permessage-deflate (RFC 7692): which compression a WebSocket uses, and a bounded inflater.

A browser opens every WebSocket with an offer to compress its messages::

    Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits

Each message is then deflated (zlib's raw format) by the side that sends it and inflated by
the other. The offer may carry parameters; the server picks the first offer it can honour and
answers with the parameters both sides will use (:func:`negotiate`), or with nothing, and then
the messages go uncompressed. The four parameters are about memory:

* ``server_max_window_bits=N``: the server's compressor looks back at most 2**N bytes (the
  client needs that much to inflate). The server may always use a smaller window: a stream
  made with one inflates with any larger.
* ``client_max_window_bits[=N]``: the client lets the server choose the window of the client's
  compressor (at most N), so the server's inflater can be small too.
* ``server_no_context_takeover``, ``client_no_context_takeover``: that side starts every
  message afresh, so neither needs to keep its zlib state between messages (less memory per
  idle connection, worse compression of many small similar messages).

An offer with an unknown or repeated parameter, or a value out of 8-15, is declined as RFC 7692
§5 and §7 say (the server goes on to the next offer). A window of 8 for the server's own
compressor is declined too: zlib cannot deflate in raw format with a window of 256 bytes.

The frames themselves are wsproto's (:class:`wsproto.extensions.PerMessageDeflate`, which runs
zlib): :class:`Deflate` adds two things to it. Its compressor uses a smaller ``memLevel``
(memory, not compatibility: the peer cannot tell), and its inflater never produces more than
``max_message`` bytes of one message: a small frame that inflates to gigabytes (a
decompression bomb) fails the connection with 1009 once the limit is passed, having held at
most the limit.
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass

from wsproto.extensions import PerMessageDeflate
from wsproto.frame_protocol import CloseReason, FrameDecoder, FrameProtocol, Opcode, RsvBits

from .websocket import WebSocketOptions

__all__ = ["Deflate", "DeflateParams", "negotiate", "parse_offers", "server_deflate"]

NAME = "permessage-deflate"
MEM_LEVEL = 5
"""zlib's memory level for the server's compressor: 16 KiB of hash tables instead of the 128
KiB of the default 8, for messages a little larger (the window matters more)."""
_NUMBER = re.compile(r"[1-9][0-9]?")  # 8..15 without leading zeros, checked below


def parse_offers(header: str) -> list[list[tuple[str, str | None]]]:
    """The permessage-deflate offers of a ``Sec-WebSocket-Extensions`` value, in order: each
    a list of ``(name, value or None)``. Other extensions are left out. Quoted values
    (``a="10"``) are unquoted; a comma inside quotes would be an invalid value anyway."""
    offers = []
    for item in header.split(","):
        name, *params = [part.strip() for part in item.split(";")]
        if name.lower() != NAME:
            continue
        parsed: list[tuple[str, str | None]] = []
        for param in params:
            key, eq, value = param.partition("=")
            value = value.strip()
            if len(value) >= 2 and value[0] == value[-1] == '"':
                value = value[1:-1]
            parsed.append((key.strip().lower(), value if eq else None))
        offers.append(parsed)
    return offers


def _bits(value: str | None, required: bool) -> int | None:
    """A window size parameter's value (8..15); None for no value; ValueError when bad."""
    if value is None:
        if required:
            raise ValueError("needs a value")
        return None
    if not _NUMBER.fullmatch(value) or not 8 <= int(value) <= 15:
        raise ValueError(f"bad window size {value!r}")
    return int(value)


@dataclass(frozen=True, slots=True)
class DeflateParams:
    """What the server answers to one offer: the parameters both sides then use."""

    server_window: int
    """Bits of the server's compressor window (9..15)."""
    server_window_asked: bool
    """Whether the client asked for a limit (else the answer leaves it out: a client's
    inflater reads a stream made with any smaller window anyway)."""
    client_window: int | None
    """Bits the client's compressor is held to, or None when the client did not let the
    server choose (it may then use 15)."""
    server_no_context: bool
    client_no_context: bool

    def header(self) -> str:
        """The ``Sec-WebSocket-Extensions`` value of the ``101`` answer."""
        parts = [NAME]
        if self.server_window_asked:
            parts.append(f"server_max_window_bits={self.server_window}")
        if self.client_window is not None:
            parts.append(f"client_max_window_bits={self.client_window}")
        if self.server_no_context:
            parts.append("server_no_context_takeover")
        if self.client_no_context:
            parts.append("client_no_context_takeover")
        return "; ".join(parts)


def accept_offer(
    offer: list[tuple[str, str | None]], window_bits: int, no_context_takeover: bool
) -> DeflateParams:
    """The answer to one offer under the site's limits (``window_bits``: the largest window
    the server keeps either way; ``no_context_takeover``: no zlib state between messages).
    Raises ValueError when the offer must be declined."""
    seen: dict[str, str | None] = {}
    for name, value in offer:
        if name in seen:
            raise ValueError(f"{name} given twice")
        seen[name] = value
    unknown = set(seen) - {
        "server_max_window_bits", "client_max_window_bits",
        "server_no_context_takeover", "client_no_context_takeover",
    }  # fmt: skip
    if unknown:
        raise ValueError(f"unknown parameter {sorted(unknown)[0]!r}")
    for flag in ("server_no_context_takeover", "client_no_context_takeover"):
        if seen.get(flag, None) is not None:
            raise ValueError(f"{flag} takes no value")
    server_window, asked = window_bits, None
    if "server_max_window_bits" in seen:  # the client limits the server's window
        asked = _bits(seen["server_max_window_bits"], required=True)
        assert asked is not None
        if asked == 8:
            raise ValueError("zlib cannot deflate with a window of 8 bits")
        server_window = min(asked, window_bits)
    client_window = None
    if "client_max_window_bits" in seen:  # the client lets the server choose
        hint = _bits(seen["client_max_window_bits"], required=False)
        client_window = min(hint or 15, window_bits)
    return DeflateParams(
        server_window=server_window,
        server_window_asked=asked is not None,
        client_window=client_window,
        server_no_context=no_context_takeover or "server_no_context_takeover" in seen,
        client_no_context=no_context_takeover,
    )


def negotiate(
    header: str | None, window_bits: int = 15, no_context_takeover: bool = False
) -> DeflateParams | None:
    """The answer to a handshake's ``Sec-WebSocket-Extensions`` (None: no compression):
    the first permessage-deflate offer that can be honoured (module doc)."""
    for offer in parse_offers(header or ""):
        try:
            return accept_offer(offer, window_bits, no_context_takeover)
        except ValueError:
            continue  # declined: RFC 7692 §5 lets the server try the next offer
    return None


class Deflate(PerMessageDeflate):
    """wsproto's permessage-deflate for the server side of one connection, set up from the
    negotiated :class:`DeflateParams`, with an inflater bounded by ``max_message``."""

    def __init__(self, params: DeflateParams, max_message: int) -> None:
        super().__init__(
            client_no_context_takeover=params.client_no_context,
            # (a client held to 8 bits deflates with 9 in zlib: inflating with 9 reads both)
            client_max_window_bits=max(params.client_window or 15, 9),
            server_no_context_takeover=params.server_no_context,
            server_max_window_bits=params.server_window,
        )
        self.params = params
        self.max_message = max_message
        self._inflated = 0  # bytes of the current message so far
        self._enabled = True  # negotiated already (wsproto's own handshake would set it)

    def frame_inbound_payload_data(
        self, proto: FrameDecoder | FrameProtocol, data: bytes
    ) -> bytes | CloseReason:
        if not self._inbound_compressed or not self._inbound_is_compressible:
            return data
        assert self._decompressor is not None
        room = self.max_message - self._inflated
        try:
            # at most one byte past the limit: enough to know it is passed
            out = self._decompressor.decompress(data, room + 1)
        except zlib.error:
            return CloseReason.INVALID_FRAME_PAYLOAD_DATA
        return self._count(out)

    def frame_inbound_complete(
        self, proto: FrameDecoder | FrameProtocol, fin: bool
    ) -> bytes | CloseReason | None:
        tail = super().frame_inbound_complete(proto, fin)
        if isinstance(tail, bytes):
            tail = self._count(tail)
        if fin:
            self._inflated = 0
        return tail

    def _count(self, out: bytes) -> bytes | CloseReason:
        self._inflated += len(out)
        if self._inflated > self.max_message:
            return CloseReason.MESSAGE_TOO_BIG
        return out

    def frame_outbound(
        self,
        proto: FrameDecoder | FrameProtocol,
        opcode: Opcode,
        rsv: RsvBits,
        data: bytes,
        fin: bool,
    ) -> tuple[RsvBits, bytes]:
        if self._compressor is None and opcode in (Opcode.TEXT, Opcode.BINARY):
            # wsproto would make it with the default memLevel (MEM_LEVEL's doc)
            self._compressor = zlib.compressobj(
                zlib.Z_DEFAULT_COMPRESSION, zlib.DEFLATED, -self.server_max_window_bits, MEM_LEVEL
            )
        return super().frame_outbound(proto, opcode, rsv, data, fin)


def server_deflate(header: str | None, options: WebSocketOptions) -> Deflate | None:
    """The extension a socket uses, from its handshake's ``Sec-WebSocket-Extensions`` and its
    URL's options; None when the URL does not compress or no offer can be honoured."""
    if not options.compression:
        return None
    params = negotiate(
        header, options.compression_window_bits, options.compression_no_context_takeover
    )
    return None if params is None else Deflate(params, options.max_message)
