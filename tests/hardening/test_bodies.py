"""Bodies under a budget, over real sockets: a body trickled in ends in 408 within its
deadline (``body_timeout`` plus a second per ``body_min_rate`` bytes), Content-Length or
chunked; a page that does not read its body is answered without waiting for it; the bodies
held at once fit ``max_body_memory`` (beyond: 503); url-encoded forms have a smaller limit
than uploads; ``ctx.body()`` holds the bytes once."""

from __future__ import annotations

import socket
import threading
import time
import tracemalloc

import pytest

import pyweb.testing
from pyweb.protocol.response import Response
from pyweb.server.budget import BUDGET
from tests.helpers import until

pytestmark = pytest.mark.loops("trio", "asyncio")

FORM = "application/x-www-form-urlencoded"


def site(root, **options):
    """The test pages as a site whose POSTs need no CSRF token (these tests are about
    bodies; CSRF has its own tests)."""
    from pyweb.app.site import Site

    return Site(root, csrf_exempt=["/*"], **options)


def read_reply(s: socket.socket) -> bytes:
    data = b""
    while True:
        try:
            chunk = s.recv(65536)
        except ConnectionResetError:
            break
        if not chunk:
            break
        data += chunk
        if b"\r\n\r\n" in data:
            head, _, body = data.partition(b"\r\n\r\n")
            length = [int(v) for k, _, v in (ln.partition(b": ") for ln in head.split(b"\r\n"))
                      if k.lower() == b"content-length"]  # fmt: skip
            if length and len(body) >= length[0]:
                break
    return data


def trickle(
    port: int, head: bytes, piece: bytes, every: float, limit: float
) -> tuple[bytes, float]:
    """Send ``head``, then ``piece`` every ``every`` s until the server answers (or
    ``limit`` s pass); return (the reply, seconds until it came)."""
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=limit) as s:
        s.sendall(head)
        s.settimeout(every)
        while time.monotonic() - started < limit:
            try:
                s.sendall(piece)
            except OSError:
                break
            try:
                first = s.recv(65536)
            except TimeoutError:
                continue
            except ConnectionResetError:
                return b"", time.monotonic() - started
            s.settimeout(5)
            return first + read_reply(s), time.monotonic() - started
    return b"", time.monotonic() - started


async def echo_length(ctx):
    body = await ctx.body()
    return Response(200, [("Content-Type", "text/plain")], str(len(body)).encode())


@pytest.fixture
def quick():
    with pyweb.testing.serve(echo_length, body_timeout=1.0, body_min_rate=1_000_000) as c:
        yield c.server.port


def test_a_content_length_body_trickled_in_gets_408_within_its_deadline(quick):
    head = b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n"
    reply, took = trickle(quick, head, b"a", 0.2, limit=20)
    assert reply.startswith(b"HTTP/1.1 408"), reply[:100]
    assert took < 10  # each byte came within body_timeout: only the whole-body deadline ends it


def test_a_chunked_body_that_never_ends_gets_408_within_its_deadline(quick):
    head = b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
    reply, took = trickle(quick, head, b"400\r\n" + b"a" * 1024 + b"\r\n", 0.2, limit=20)
    assert reply.startswith(b"HTTP/1.1 408"), reply[:100]
    assert took < 10


def test_a_steady_upload_is_not_cut_by_the_deadline():
    # 256 KiB at ~200 KiB/s takes longer than body_timeout; body_min_rate extends it.
    with pyweb.testing.serve(echo_length, body_timeout=0.5, body_min_rate=64 * 1024) as c:
        head = b"POST / HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 262144\r\n\r\n"
        with socket.create_connection(("127.0.0.1", c.server.port), timeout=10) as s:
            s.sendall(head)
            for _ in range(32):
                s.sendall(b"a" * 8192)
                time.sleep(0.04)
            assert read_reply(s).endswith(b"\r\n\r\n262144")


def test_a_page_that_does_not_read_its_body_is_answered_at_once(tmp_path):
    (tmp_path / "ignore.py").write_text('conn.return_("ignored")\n')
    with pyweb.testing.serve(site(tmp_path)) as c:
        started = time.monotonic()
        with socket.create_connection(("127.0.0.1", c.server.port), timeout=10) as s:
            s.sendall(b"POST /ignore HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream"
                      b"\r\nContent-Length: 10000000\r\n\r\n" + b"a" * 1000)  # fmt: skip
            reply = read_reply(s)
        assert b"200 OK" in reply and reply.endswith(b"ignored")
        assert b"connection: close" in reply.lower()  # the unread rest is not waited for
        assert time.monotonic() - started < 5


def test_bodies_held_at_once_fit_max_body_memory(tmp_path):
    # The page holds its form for a moment: a second one that does not fit gets a 503.
    (tmp_path / "hold.py").write_text(
        "from pyweb import runtime\nawait runtime.sleep(1.0)\nconn.return_(str(len(conn.form['data'])))\n"
    )
    with pyweb.testing.serve(site(tmp_path), max_body_memory=1_000_000) as c:
        body = b"data=" + b"x" * 600_000
        head = (f"POST /hold HTTP/1.1\r\nHost: x\r\nContent-Type: {FORM}\r\n"
                f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode()  # fmt: skip
        replies: list[bytes] = []

        def post() -> None:
            with socket.create_connection(("127.0.0.1", c.server.port), timeout=10) as s:
                s.sendall(head + body)
                replies.append(read_reply(s))

        first = threading.Thread(target=post)
        first.start()
        until(lambda: BUDGET.held >= len(body), "the first body held")
        post()
        first.join()
        statuses = sorted(int(r.split(b" ", 2)[1]) for r in replies)
        assert statuses == [200, 503], [r[:60] for r in replies]
        assert BUDGET.held == 0  # given back when the replies went out
        post()  # room again
        assert replies[-1].startswith(b"HTTP/1.1 200")


def test_bodies_trickled_in_hold_no_budget(tmp_path):
    """The budget counts the bytes that arrived, not the declared length: bodies trickled
    in (declaring 600 KB each, against a 1 MB budget) do not make a real one a 503."""
    (tmp_path / "size.py").write_text("conn.return_(str(len(conn.form['data'])))\n")
    with pyweb.testing.serve(site(tmp_path), max_body_memory=1_000_000) as c:
        head = (f"POST /size HTTP/1.1\r\nHost: x\r\nContent-Type: {FORM}\r\n"
                f"Content-Length: 600005\r\n\r\ndata=").encode()  # fmt: skip
        trickles = [socket.create_connection(("127.0.0.1", c.server.port)) for _ in range(5)]
        try:
            for s in trickles:
                s.sendall(head + b"x")
            # (their pages are reading their bodies: the bytes that came are held)
            until(lambda: BUDGET.held >= 5 * len(b"data=x"), "five trickles held")
            r = c.request("POST", "/size", body=b"data=" + b"y" * 600_000,
                          headers={"Content-Type": FORM})  # fmt: skip
            assert r.status == 200 and r.text == "600000", r.text
        finally:
            for s in trickles:
                s.close()


def test_urlencoded_forms_have_a_smaller_limit_than_uploads(tmp_path):
    (tmp_path / "size.py").write_text(
        "f = conn.files.get('f')\nconn.return_(str(len(f.data) if f else len(conn.form['data'])))\n"
    )
    with pyweb.testing.serve(site(tmp_path)) as c:
        big = "x" * (2 * 1024 * 1024)
        with socket.create_connection(("127.0.0.1", c.server.port), timeout=10) as s:
            s.sendall(f"POST /size HTTP/1.1\r\nHost: x\r\nContent-Type: {FORM}\r\n"
                      f"Content-Length: {len(big) + 5}\r\n\r\ndata=".encode())  # fmt: skip
            assert read_reply(s).startswith(b"HTTP/1.1 413")  # answered before the body
        multipart = (b"--b\r\nContent-Disposition: form-data; name=\"f\"; filename=\"a\"\r\n\r\n"
                     + big.encode() + b"\r\n--b--\r\n")  # fmt: skip
        r = c.request("POST", "/size", body=multipart,
                      headers={"Content-Type": "multipart/form-data; boundary=b"})  # fmt: skip
        assert r.status == 200 and r.text == str(len(big))


def test_ctx_body_holds_the_bytes_once():
    """Reading a 4 MiB body allocates about 4 MiB more, not twice that (pieces + join)."""
    peaks: list[int] = []

    async def measured(ctx):
        tracemalloc.start()
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        body = await ctx.body()
        peaks.append(tracemalloc.get_traced_memory()[1] - before)
        tracemalloc.stop()
        return Response(200, [], str(len(body)).encode())

    with pyweb.testing.serve(measured) as c:
        size = 4 * 1024 * 1024
        r = c.request("POST", "/", body=b"a" * size)
        assert r.text == str(size)
    assert peaks[0] < 1.5 * size, peaks
