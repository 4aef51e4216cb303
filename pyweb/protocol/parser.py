"""The incremental HTTP/1.1 request parser (sans-IO): bytes in, events out.

INTERFACE (fixed; the server is written against it):

    parser = RequestParser(Limits(...))
    parser.feed(data)          # bytes from the socket; b"" means the client closed (EOF)
    ev = parser.next_event()   # Request | Data | EndOfMessage | ConnectionClosed | NEED_DATA
                               # raises ProtocolError (and only ProtocolError) on bad input

    parser.buffered            # number of bytes fed but not yet consumed
    parser.pending_body        # True between a Request with a body and its EndOfMessage

After ``EndOfMessage`` the parser moves on to the next request by itself (pipelining) when
the request was keep-alive; when it was not, ``next_event`` returns NEED_DATA forever after
(the server closes). After a ProtocolError the parser is broken and every further call
raises the same error.

TO BE IMPLEMENTED by the protocol work (see tests/protocol).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Limits", "RequestParser"]


@dataclass(frozen=True, slots=True)
class Limits:
    """Size limits, each with the status it produces when exceeded. Named defaults, on by
    default (bounded time and space for any input)."""

    max_request_line: int = 8 * 1024
    """Longest request line, CRLF excluded → 414."""
    max_header_bytes: int = 64 * 1024
    """Largest header block (request line + fields) → 431."""
    max_headers: int = 100
    """Most header fields → 431."""
    max_body: int = 16 * 1024 * 1024
    """Largest body, Content-Length or the sum of the chunks → 413."""
    max_chunk_line: int = 4 * 1024
    """Longest chunk-size line with its extensions → 400."""


class RequestParser:
    """Placeholder so the package imports while the parser is written; see the module doc."""

    def __init__(self, limits: Limits = Limits()) -> None:
        raise NotImplementedError("RequestParser is being written")
