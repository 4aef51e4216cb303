"""Shared helpers for the protocol tests: run pyweb's parser and h11 over the same bytes.

Both are driven the same way: the input is fed in pieces, events are drained after every
piece, and EOF may be fed at the end. Each returns a list of requests as plain tuples so
they can be compared, or the error raised.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import h11

from pyweb.protocol import (
    NEED_DATA,
    ConnectionClosed,
    Data,
    EndOfMessage,
    Limits,
    ProtocolError,
    Request,
    RequestParser,
)

DEFAULT_LIMITS = Limits()


@dataclass
class Parsed:
    """One complete request as seen by a parser, normalised for comparison."""

    method: str
    target: str
    version: str
    headers: list[tuple[str, str]]
    body: bytes = b""
    trailers: list[tuple[str, str]] = field(default_factory=list)
    keep_alive: bool = True


def split_points(data: bytes, cuts: list[int]) -> list[bytes]:
    """Cut ``data`` at the given offsets (taken modulo its length, sorted, deduplicated)."""
    if not data:
        return []
    points = sorted({c % len(data) for c in cuts} | {0, len(data)})
    return [data[a:b] for a, b in zip(points, points[1:], strict=False) if b > a]


def run_pyweb(pieces: list[bytes], eof: bool = False, limits: Limits = DEFAULT_LIMITS,
              max_buffered: int | None = None):
    """Feed pieces to pyweb; return (requests, error or None, closed)."""
    p = RequestParser(limits)
    done: list[Parsed] = []
    cur: Parsed | None = None
    body: list[bytes] = []
    closed = False

    def drain() -> None:
        nonlocal cur, body, closed
        for _ in range(100_000):  # bound: a parser that loops forever fails the test
            ev = p.next_event()
            if ev is NEED_DATA:
                return
            if isinstance(ev, Request):
                assert cur is None
                cur = Parsed(ev.method, ev.target, ev.http_version, list(ev.headers),
                             keep_alive=ev.keep_alive)
                body = []
            elif isinstance(ev, Data):
                assert cur is not None and ev.data
                body.append(ev.data)
            elif isinstance(ev, EndOfMessage):
                assert cur is not None
                cur.body = b"".join(body)
                cur.trailers = list(ev.trailers)
                done.append(cur)
                cur = None
            elif isinstance(ev, ConnectionClosed):
                closed = True
                return
            else:  # pragma: no cover
                raise AssertionError(f"unexpected event {ev!r}")
        raise AssertionError("parser produced events forever")

    try:
        for piece in pieces:
            p.feed(piece)
            drain()
            if max_buffered is not None:
                assert p.buffered <= max_buffered
            if closed:
                break
        if eof and not closed:
            p.feed(b"")
            drain()
    except ProtocolError as exc:
        return done, exc, closed
    return done, None, closed


def run_h11(pieces: list[bytes], eof: bool = False):
    """Feed pieces to h11 as a server; return (requests, error or None, closed).

    h11 needs our side of each cycle: after each request we send a response and call
    start_next_cycle() so the next pipelined request is read (h11 pauses otherwise)."""
    conn = h11.Connection(h11.SERVER)
    done: list[Parsed] = []
    cur: Parsed | None = None
    body: list[bytes] = []
    closed = False

    def drain() -> None:
        nonlocal cur, body, closed
        while True:
            ev = conn.next_event()
            if ev is h11.NEED_DATA:
                return
            if ev is h11.PAUSED:
                if conn.our_state is h11.MUST_CLOSE or conn.their_state is h11.MUST_CLOSE:
                    return
                return
            if isinstance(ev, h11.Request):
                cur = Parsed(ev.method.decode("latin-1"), ev.target.decode("latin-1"),
                             ev.http_version.decode("latin-1"),
                             [(n.decode("latin-1"), v.decode("latin-1")) for n, v in ev.headers])
                body = []
            elif isinstance(ev, h11.Data):
                body.append(bytes(ev.data))
            elif isinstance(ev, h11.EndOfMessage):
                assert cur is not None
                cur.body = b"".join(body)
                cur.trailers = [(n.decode("latin-1"), v.decode("latin-1"))
                                for n, v in ev.headers]
                cur.keep_alive = conn.their_state is h11.DONE
                done.append(cur)
                cur = None
                # 404, not 2xx: a 2xx answer to CONNECT would switch protocols.
                conn.send(h11.Response(status_code=404, headers=[("content-length", "0")]))
                conn.send(h11.EndOfMessage())
                if conn.our_state is h11.DONE and conn.their_state is h11.DONE:
                    conn.start_next_cycle()
                else:
                    return
            elif isinstance(ev, h11.ConnectionClosed):
                closed = True
                return

    try:
        for piece in pieces:
            if conn.their_state is h11.MUST_CLOSE or conn.our_state is h11.MUST_CLOSE:
                break
            conn.receive_data(piece)
            drain()
            if closed:
                break
        if eof and not closed and conn.their_state is not h11.MUST_CLOSE:
            conn.receive_data(b"")
            drain()
    except h11.RemoteProtocolError as exc:
        return done, exc, closed
    return done, None, closed
