"""Arena: region pages from a process-wide free list, views, O(1) reset that refuses while
a view is alive (SMLserver §5.1's region pages, Hop §3.1's reusable I/O buffer). Both
implementations; a hypothesis state machine checks them against a Python model."""

from __future__ import annotations

import socket
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from .conftest import load


def test_write_and_read_back(impl):
    a = impl.Arena()
    a.write(b"HTTP/1.1 200 OK\r\n")
    a.writev(["Content-Type: text/plain\r\n", b"\r\n", bytearray(b"caf"), "é", memoryview(b"!")])
    assert a.getvalue() == "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\ncafé!".encode()
    assert len(a) == len(a.getvalue())
    assert b"".join(a.views()) == a.getvalue()


def test_grows_by_pages_then_fails_cleanly(impl):
    a = impl.Arena(max_pages=3)
    page = impl.PAGE_SIZE
    a.write(b"x" * (page + 10))  # spills into a second page
    assert a.pages == 2 and len(a) == page + 10
    with pytest.raises(MemoryError, match="arena full"):
        a.write(b"y" * (2 * page))  # would need a fourth page: nothing is written
    assert len(a) == page + 10 and a.pages == 2
    with pytest.raises(MemoryError):
        a.writev([b"z" * 100, b"w" * (2 * page)])  # all or nothing
    assert a.getvalue() == b"x" * (page + 10)
    with pytest.raises(TypeError, match="bytes-like"):
        a.writev([b"ok", 42])
    assert a.getvalue() == b"x" * (page + 10)


def test_reset_refuses_while_a_view_is_alive(impl):
    a = impl.Arena()
    a.write(b"request bytes")
    views = a.views()
    with pytest.raises(BufferError, match="1 exported view"):
        a.reset()
    part = views[0][0:7]  # a slice still holds the export
    del views
    with pytest.raises(BufferError):
        a.reset()
    assert bytes(part) == b"request"
    part.release()
    a.reset()
    assert len(a) == 0 and a.generation == 1 and a.pages == 0
    with a.tail() as t:  # a view released by `with` is released at once
        t[:2] = b"ok"
    a.commit(2)
    assert a.getvalue() == b"ok"
    a.reset()


def test_reset_returns_pages_to_the_free_list(impl):
    a = impl.Arena(max_pages=8)
    a.write(b"x" * (impl.PAGE_SIZE * 4))
    in_use = impl.pool_stats()["in_use"]
    free = impl.pool_stats()["free"]
    a.reset()
    stats = impl.pool_stats()
    assert stats["in_use"] == in_use - 4 and stats["free"] == free + 4
    assert a.high_water == 4 and a.pages == 0
    hits = impl.pool_stats()["hits"]
    b = impl.Arena(max_pages=8)  # its three pages are recycled ones
    b.write(b"y" * (impl.PAGE_SIZE * 3))
    assert impl.pool_stats()["hits"] == hits + 3
    a.close()
    b.close()
    with pytest.raises(ValueError, match="closed"):
        a.write(b"x")


def test_tail_and_commit_errors(impl):
    a = impl.Arena()
    with pytest.raises(ValueError):
        a.tail(0)
    with pytest.raises(ValueError):
        a.tail(impl.PAGE_SIZE + 1)
    with pytest.raises(ValueError, match="free bytes"):
        a.commit(impl.PAGE_SIZE + 1)
    with pytest.raises(ValueError):
        impl.Arena(max_pages=0)


def test_an_empty_arena_holds_no_page(impl):
    """A connection keeps its arena between requests; only a request in flight holds pages
    (an idle keep-alive connection costs an object, not 16 KiB)."""
    in_use = impl.pool_stats()["in_use"]
    a = impl.Arena(max_pages=2)
    assert a.pages == 0 and len(a) == 0 and a.views() == [] and a.getvalue() == b""
    a.write(b"")  # nothing to hold: still no page
    a.commit(0)
    assert a.pages == 0 and impl.pool_stats()["in_use"] == in_use
    a.write(b"reply")
    assert a.pages == 1 and impl.pool_stats()["in_use"] == in_use + 1
    with pytest.raises(MemoryError):
        a.writev([b"x" * impl.PAGE_SIZE, b"y" * impl.PAGE_SIZE])  # all or nothing
    assert a.getvalue() == b"reply" and a.pages == 1
    a.reset()
    assert a.pages == 0 and impl.pool_stats()["in_use"] == in_use
    b = impl.Arena(max_pages=1)
    with pytest.raises(MemoryError):  # a failed first write gives its page back
        b.writev([b"x" * 100, b"y" * impl.PAGE_SIZE])
    assert b.pages == 0 and impl.pool_stats()["in_use"] == in_use
    a.close()
    b.close()


def test_recv_into_the_arena_from_a_real_socket(impl):
    """Receive 100 KB over TCP on 127.0.0.1 straight into the arena's pages."""
    payload = bytes(range(256)) * 400
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]

    def send() -> None:
        with socket.create_connection(("127.0.0.1", port)) as c:
            c.sendall(payload)

    sender = threading.Thread(target=send)
    sender.start()
    conn, _ = server.accept()
    a = impl.Arena(max_pages=16)
    with conn:
        while True:
            with a.tail() as tail:
                n = conn.recv_into(tail)
            if n == 0:
                break
            a.commit(n)
    sender.join()
    server.close()
    assert a.getvalue() == payload and len(a) == len(payload)
    a.reset()


def test_recv_reads_one_page_and_gives_back_what_it_did_not_use(impl):
    """Arena.recv(fd): what the server's read path does (pyweb/server/trio/recvbuf.py): one read
    into a page, no bytes object; BlockingIOError and end of file keep no page."""
    in_use = impl.pool_stats()["in_use"]
    a = impl.Arena(max_pages=2)
    left, right = socket.socketpair()
    with left, right:
        right.setblocking(False)
        with pytest.raises(BlockingIOError):
            a.recv(right)  # nothing there: no page kept
        assert a.pages == 0 and len(a) == 0 and impl.pool_stats()["in_use"] == in_use
        payload = bytes(range(256)) * (impl.PAGE_SIZE // 128)  # exactly two pages
        left.sendall(payload[:100])
        assert a.recv(right.fileno()) == 100  # an int works as well as a socket
        left.sendall(payload[100:])
        assert a.recv(right) == impl.PAGE_SIZE - 100  # what the first page has room for
        assert a.recv(right) == impl.PAGE_SIZE  # then a second page
        assert a.getvalue() == payload and a.pages == 2
        left.sendall(b"more")
        with pytest.raises(MemoryError, match="arena full"):
            a.recv(right)  # both pages full: nothing read, the bytes wait in the socket
        assert a.getvalue() == payload and a.pages == 2
        a.reset()
        assert a.recv(right) == 4 and a.getvalue() == b"more"
        a.reset()
        left.close()
        assert a.recv(right) == 0  # end of file
        assert a.pages == 0 and impl.pool_stats()["in_use"] == in_use
    with pytest.raises(ValueError, match="negative"):
        a.recv(right)  # closed socket: fileno() is -1
    with pytest.raises(OSError):
        a.recv(10_000)  # no such descriptor: EBADF
    a.close()
    with pytest.raises(ValueError, match="closed"):
        a.recv(0)


def test_send_the_views_with_one_sendmsg(impl):
    a = impl.Arena()
    body = b"<p>" + b"x" * 20000 + b"</p>"
    a.writev([b"HTTP/1.1 200 OK\r\nContent-Length: ", str(len(body)), b"\r\n\r\n", body])
    left, right = socket.socketpair()
    with left, right:
        views = a.views()
        sent = left.sendmsg(views)
        for v in views:
            v.release()
        del views
        left.close()
        got = b""
        while chunk := right.recv(65536):
            got += chunk
    assert sent == len(a) and got == a.getvalue()
    a.reset()


def test_send_in_batches_through_a_full_socket(impl):
    """send(fd, start) writes what the socket takes; the caller resumes from the byte
    count, as the server does between waits for the client to read (a partial write is
    never lost or repeated)."""
    payload = bytes(range(256)) * 500  # 128,000 bytes: 8 pages
    a = impl.Arena(max_pages=8)
    a.writev([payload[:100], payload[100:70000], payload[70000:]])
    assert a.pages == 8
    left, right = socket.socketpair()
    with left, right:
        left.setblocking(False)
        right.setblocking(False)
        left.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
        sent, got, blocked = 0, bytearray(), 0
        while sent < len(payload):
            try:
                sent += a.send(left.fileno(), sent)
            except BlockingIOError:
                blocked += 1
                got += right.recv(1 << 20)
        while len(got) < len(payload):
            got += right.recv(1 << 20)
    assert blocked > 0 and bytes(got) == payload
    assert a.send(left.fileno(), len(payload)) == 0  # nothing left: no system call
    with pytest.raises(ValueError, match="start must be between 0 and 128000"):
        a.send(0, len(payload) + 1)
    with pytest.raises(OSError):
        a.send(left.fileno(), 0)  # closed descriptor: EBADF, nothing else happens
    a.reset()
    assert a.pages == 0


# ---- the model-based test -----------------------------------------------------------------


class ArenaMachine(RuleBasedStateMachine):
    """Random sequences of write, writev, tail+commit, view, release, reset against a
    model (the bytes written and the views alive): never corrupts, never leaks a page."""

    MAX_PAGES = 4

    def __init__(self) -> None:
        super().__init__()
        self.impl = None
        self.arena = None
        self.model = b""
        self.views: list[tuple[memoryview, bytes]] = []

    @precondition(lambda self: self.impl is None)
    @rule(which=st.sampled_from(["c", "python"]))
    def start(self, which: str) -> None:
        self.impl = load(which)
        self.in_use_before = self.impl.pool_stats()["in_use"]
        self.arena = self.impl.Arena(max_pages=self.MAX_PAGES)

    def capacity_left(self) -> int:
        return self.MAX_PAGES * self.impl.PAGE_SIZE - len(self.model)

    @precondition(lambda self: self.arena is not None)
    @rule(data=st.binary(max_size=6000) | st.integers(1, 20000).map(lambda n: b"q" * n))
    def write(self, data: bytes) -> None:
        before = self.arena.pages
        try:
            self.arena.write(data)
        except MemoryError:
            # Full: only when it could not fit even if pages were packed; nothing written.
            assert self.arena.pages == before
            assert self.arena.getvalue() == self.model
            return
        self.model += data

    @precondition(lambda self: self.arena is not None)
    @rule(parts=st.lists(st.binary(max_size=3000) | st.text(max_size=300), max_size=6))
    def writev(self, parts: list) -> None:
        encoded = b"".join(p.encode() if isinstance(p, str) else p for p in parts)
        try:
            self.arena.writev(parts)
        except MemoryError:
            assert self.arena.getvalue() == self.model
            return
        self.model += encoded

    @precondition(lambda self: self.arena is not None)
    @rule(data=st.binary(min_size=1, max_size=5000))
    def receive(self, data: bytes) -> None:
        try:
            tail = self.arena.tail(1)
        except MemoryError:
            return
        n = min(len(tail), len(data))
        tail[:n] = data[:n]
        tail.release()
        self.arena.commit(n)
        self.model += data[:n]

    @precondition(lambda self: self.arena is not None)
    @rule(data=st.binary(max_size=20000), close=st.booleans())
    def recv(self, data: bytes, close: bool) -> None:
        """recv(fd): one read into the last page's free space (or a new page), committed;
        nothing there, end of file and a full arena leave the arena as it was."""
        left, right = socket.socketpair()
        with left, right:
            right.setblocking(False)
            if data:
                left.sendall(data)
            if close:
                left.shutdown(socket.SHUT_WR)
            room = self.arena.pages * self.impl.PAGE_SIZE - len(self.model)
            pages = self.arena.pages
            try:
                n = self.arena.recv(right)
            except BlockingIOError:  # nothing sent, not closed
                assert not data and not close and self.arena.pages == pages
                return
            except MemoryError:  # the last page is full and the arena has no page left
                assert room == 0 and self.arena.pages == self.MAX_PAGES
                return
            expected = room if room else self.impl.PAGE_SIZE
            assert n == min(len(data), expected) and (n > 0 or close)
            self.model += data[:n]

    @precondition(lambda self: self.arena is not None and len(self.model) > 0)
    @rule()
    def take_views(self) -> None:
        views = self.arena.views()
        joined = b"".join(views)
        assert joined == self.model
        for v in views:
            self.views.append((v, bytes(v)))

    @precondition(lambda self: self.arena is not None)
    @rule(start=st.integers(0, 70000))
    def send(self, start: int) -> None:
        """What send(fd, start) writes is the model from `start` on (as much as fits)."""
        start = min(start, len(self.model))
        left, right = socket.socketpair()
        with left, right:
            left.setblocking(False)
            try:
                n = self.arena.send(left.fileno(), start)
            except BlockingIOError:  # pragma: no cover - a fresh socketpair takes bytes
                return
            got = b""
            while len(got) < n:
                got += right.recv(1 << 20)
        assert got == self.model[start : start + n] and (n > 0 or start == len(self.model))

    @precondition(lambda self: self.views)
    @rule(i=st.integers(0, 100))
    def release_view(self, i: int) -> None:
        view, contents = self.views.pop(i % len(self.views))
        assert bytes(view) == contents  # what a view shows never changes under it
        view.release()

    @precondition(lambda self: self.arena is not None)
    @rule()
    def reset(self) -> None:
        if self.views:
            with pytest.raises(BufferError):
                self.arena.reset()
            assert self.arena.getvalue() == self.model
        else:
            self.arena.reset()
            self.model = b""
            assert self.arena.pages == 0  # every page went back

    @invariant()
    def agrees_with_the_model(self) -> None:
        if self.arena is None:
            return
        assert len(self.arena) == len(self.model)
        assert 0 <= self.arena.pages <= self.MAX_PAGES
        assert self.arena.pages > 0 or not self.model
        # No page is lost or counted twice: the pool sees exactly the arena's pages.
        assert self.impl.pool_stats()["in_use"] == self.in_use_before + self.arena.pages
        for view, contents in self.views:
            assert bytes(view) == contents

    def teardown(self) -> None:
        if self.arena is None:
            return
        for view, _ in self.views:
            view.release()
        self.views.clear()
        self.arena.close()
        # Every page went back: the pool's in-use count is what it was before.
        assert self.impl.pool_stats()["in_use"] == self.in_use_before


ArenaMachine.TestCase.settings = settings(max_examples=80, stateful_step_count=30, deadline=None)
TestArenaMachine = ArenaMachine.TestCase


# ---- utf8_length: a reply's Content-Length before its fragments are written ----------------


@given(parts=st.lists(st.text(alphabet=st.characters(blacklist_categories=("Cs",))), max_size=8))
def test_utf8_length_is_the_encoded_length(parts):
    expected = len("".join(parts).encode("utf-8"))
    for which in ("c", "python"):
        impl = load(which)
        assert impl.utf8_length(parts) == expected
        a = impl.Arena(max_pages=16)
        a.writev(parts)  # what the server then writes has exactly that length
        assert len(a) == expected
        a.close()


def test_utf8_length_names_what_it_cannot_count(impl):
    with pytest.raises(TypeError, match="str fragments, not bytes"):
        impl.utf8_length(["ok", b"bytes"])
    with pytest.raises(UnicodeEncodeError, match="surrogates not allowed"):
        impl.utf8_length(["ok", "lone \ud800 surrogate"])
    with pytest.raises(TypeError):
        impl.utf8_length(42)
