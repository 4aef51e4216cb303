"""Replies assembled in the connection's arena and sent with one writev (Hop §3.1,
SMLserver §5; ``Replies.send_arena`` in pyweb/server/trio/replies.py), over real sockets, with h11
as the oracle, with the C arena and its pure-Python twin (one reply path, either arena)."""

from __future__ import annotations

import socket
import time

import h11
import pytest

import pyweb_regions
from pyweb.protocol.response import Fragments, Response
from pyweb.server import reply
from pyweb.server.trio import replies
from pyweb_regions import _fallback

pytestmark = pytest.mark.loops("trio", "asyncio")

PAGE = pyweb_regions.PAGE_SIZE
ARENA_BYTES = reply.REPLY_PAGES * PAGE

# Around every boundary the reply path has: page edges, the 64 KiB join limit, the
# arena's capacity (a larger body goes straight from its own bytes, after the head).
SIZES = [0, 1, 983, PAGE - 150, PAGE, 3 * PAGE + 7, 64 * 1024, ARENA_BYTES - 100, ARENA_BYTES]
SIZES += [ARENA_BYTES + 1, 300_000]


def body_of(n: int) -> bytes:
    return (bytes(range(251)) * (n // 251 + 1))[:n]


async def sized(ctx) -> Response:
    path = ctx.request.path
    if path == "/huge-header":  # 100 KB of header fields: more than the arena holds
        return Response(200, [("X-Big", "v" * 100_000)], b"never sent")
    if path == "/bad-field":  # a handler's header value with a CR LF in it
        return Response(200, [("X-Note", "a\r\nSet-Cookie: evil=1")], b"never sent")
    if path == "/wrong-length":  # a hand-made Fragments whose length is a lie
        return Response(200, [], Fragments(["<p>hello</p>"], 5))
    if path == "/not-str":
        return Response(200, [], Fragments(["<p>", 42, "</p>"], 9))  # type: ignore[list-item]
    if path == "/wrong-length-big":  # too large for the arena: checked all the same
        return Response(200, [], Fragments(["x" * 90_000], 100_000))
    if path == "/not-str-big":
        return Response(200, [], Fragments(["x" * 90_000, 42], 90_002))  # type: ignore[list-item]
    if path.startswith("/fragments/"):  # what a Quot or an HTML node page gives the server
        parts = fragments_of(int(path.rsplit("/", 1)[1]))
        return Response(200, [("Content-Type", "text/html")], Fragments(parts, utf8(parts)))
    n = int(path.strip("/"))
    return Response(200, [("Content-Type", "application/octet-stream")], body_of(n))


def fragments_of(n: int) -> list[str]:
    """About n bytes of HTML in pieces, some of them not ASCII."""
    piece = ["<p>", "caf\u00e9 \u20ac \U0001f600", "</p>\n", "x" * 40]
    return piece * (n // 60 + 1)


def utf8(parts: list[str]) -> int:
    return len("".join(parts).encode())


@pytest.fixture(params=["arena", "python-arena"])
def arena_mode(request, monkeypatch):
    if request.param == "arena":
        if pyweb_regions.IMPLEMENTATION != "c":
            pytest.skip("the C implementation of pyweb_regions is not built")
    else:  # the pure-Python Arena: the same API, so the same reply path
        monkeypatch.setattr(replies, "Arena", _fallback.Arena)
    return request.param


def h11_get(sock: socket.socket, targets: list[str]) -> list[tuple[int, bytes, dict]]:
    """Send keep-alive GETs one after another; h11 parses the replies."""
    client = h11.Connection(h11.CLIENT, max_incomplete_event_size=1 << 20)
    replies = []
    for target in targets:
        if client.our_state is h11.DONE:
            client.start_next_cycle()
        sock.sendall(client.send(h11.Request(method="GET", target=target, headers=[("Host", "t")])))
        sock.sendall(client.send(h11.EndOfMessage()))
        status, body, headers = 0, bytearray(), {}
        while True:
            event = client.next_event()
            if event is h11.NEED_DATA:
                client.receive_data(sock.recv(65536))
            elif isinstance(event, h11.Response):
                status = event.status_code
                headers = {k.decode(): v.decode() for k, v in event.headers}
            elif isinstance(event, h11.Data):
                body += event.data
            elif isinstance(event, h11.EndOfMessage):
                break
        replies.append((status, bytes(body), headers))
    return replies


def test_replies_of_every_size_arrive_whole(kit, arena_mode):
    with kit.running(sized) as srv:
        with socket.create_connection(("127.0.0.1", srv.port)) as sock:
            replies = h11_get(sock, [f"/{n}" for n in SIZES])
    for n, (status, body, headers) in zip(SIZES, replies, strict=True):
        assert status == 200 and int(headers["content-length"]) == n
        assert body == body_of(n), n


def test_html_fragments_are_sent_as_utf8(kit, arena_mode):
    """A page's str pieces (a Quot's, a node's) go into the arena as UTF-8, with the right
    Content-Length; a page larger than the arena is sent after its head, whole."""
    sizes = [0, 1000, 3 * PAGE, ARENA_BYTES - 500, ARENA_BYTES * 2]
    with kit.running(sized) as srv:
        with socket.create_connection(("127.0.0.1", srv.port)) as sock:
            replies = h11_get(sock, [f"/fragments/{n}" for n in sizes])
    for n, (status, body, headers) in zip(sizes, replies, strict=True):
        expected = "".join(fragments_of(n)).encode()
        assert status == 200 and int(headers["content-length"]) == len(expected)
        assert body == expected, n


def test_a_slow_reader_gets_every_byte(kit, arena_mode):
    """The kernel takes part of the reply; the rest goes out as the client reads, resumed
    from the byte count (nothing lost, nothing sent twice)."""
    with kit.running(sized) as srv:
        with socket.socket() as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            sock.connect(("127.0.0.1", srv.port))
            n = ARENA_BYTES - 200
            sock.sendall(kit.build(target=f"/{n}"))
            got = b""
            while b"\r\n\r\n" not in got or len(got.split(b"\r\n\r\n", 1)[1]) < n:
                time.sleep(0.002)
                got += sock.recv(2048)
            assert got.split(b"\r\n\r\n", 1)[1] == body_of(n)
            # The connection is still good for the next request.
            assert h11_get(sock, ["/5"])[0][1] == body_of(5)


def test_a_head_larger_than_the_arena_gets_a_500_and_nothing_partial(kit, arena_mode):
    with kit.running(sized, dev=True) as srv:
        with socket.create_connection(("127.0.0.1", srv.port)) as sock:
            ((status, body, headers),) = h11_get(sock, ["/huge-header"])
        assert status == 500 and "x-big" not in headers
        assert b"do not fit the reply arena" in body  # dev mode says why
        deadline = time.monotonic() + 5  # the logging task writes it a moment later
        while "do not fit the reply arena" not in srv.error_log.getvalue():
            assert time.monotonic() < deadline, srv.error_log.getvalue()
            time.sleep(0.01)
        with socket.create_connection(("127.0.0.1", srv.port)) as sock:
            assert h11_get(sock, ["/7"])[0][:2] == (200, body_of(7))  # still serving


def test_idle_keep_alive_connections_hold_no_pages(kit, arena_mode):
    """Pages are held only while a reply is on its way: twenty open keep-alive
    connections that each had a 40 KB reply hold none."""
    before = pyweb_regions.pool_stats()["in_use"]
    with kit.running(sized) as srv:
        socks = [socket.create_connection(("127.0.0.1", srv.port)) for _ in range(20)]
        try:
            for sock in socks:
                assert h11_get(sock, ["/40000"])[0][1] == body_of(40000)
            # The server resets the arena right after writev returns; writev runs without
            # the GIL, so this thread may see the reply before the reset: wait a little.
            deadline = time.monotonic() + 5
            while pyweb_regions.pool_stats()["in_use"] != before and time.monotonic() < deadline:
                time.sleep(0.01)
            assert pyweb_regions.pool_stats()["in_use"] == before
        finally:
            for sock in socks:
                sock.close()


@pytest.mark.parametrize(
    "target, says",
    [
        ("/bad-field", "invalid character (CR, LF or NUL) in response header X-Note"),
        ("/wrong-length", "bad reply body: 12 bytes, not 5"),
        ("/not-str", "bad reply body: "),
        ("/wrong-length-big", "bad reply body: 90000 bytes, not 100000"),
        ("/not-str-big", "bad reply body: "),
    ],
)
def test_a_reply_that_cannot_be_framed_gets_a_500_not_a_broken_stream(
    kit, arena_mode, target, says
):
    """Nothing has been sent when the server finds out, so the client gets a 500 naming the
    problem (development mode), the log says it, and the connection keeps working."""
    with kit.running(sized, dev=True) as srv:
        with socket.create_connection(("127.0.0.1", srv.port)) as sock:
            (status, body, headers), again = h11_get(sock, [target, "/3"])
        assert status == 500 and "x-note" not in headers
        assert says.encode() in body.replace(b"&#x27;", b"'")
        assert again[:2] == (200, body_of(3))
        deadline = time.monotonic() + 5
        while says not in srv.error_log.getvalue():
            assert time.monotonic() < deadline, srv.error_log.getvalue()
            time.sleep(0.01)
