"""A small Redis client: RESP2 encoding and parsing (sans-IO) and one connection that can be
driven blocking (plain calls, notebooks) or non-blocking (trio or asyncio, through
:mod:`pyweb.runtime`).

Why not the ``redis`` package? Its asyncio client cannot run under trio, and its blocking
client in a worker thread (``trio.to_thread.run_sync``) costs a thread round trip per call.
Measured on the project machine (GET of 20 bytes, loopback, 3000 calls, two runs):
blocking ``redis`` client inside the trio loop 52-66 µs, the same through
``trio.to_thread.run_sync`` 230 µs, a raw non-blocking socket with trio waits 32-34 µs.
RESP is a small protocol (the reply types below are all of it), so pyweb speaks it itself,
syscall first like the server: send and receive at once, wait only when the kernel says so.
``benchmarks/bench_cache.py`` keeps measuring it against the ``redis`` package.
"""

from __future__ import annotations

import errno
import socket
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

from pyweb import runtime

__all__ = [
    "encode_command",
    "ReplyParser",
    "ReplyError",
    "RespProtocolError",
    "Address",
    "Connection",
]


class ReplyError(Exception):
    """An error reply (``-ERR ...``) from the server; the connection stays usable."""


class RespProtocolError(ConnectionError):
    """Bytes that are not RESP: the connection cannot be trusted any more."""


def _arg(value: Any) -> bytes:
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value).encode()
    raise TypeError(f"a Redis argument must be bytes, str or a number, got {value!r}")


def encode_command(*args: Any) -> bytes:
    """A command as RESP: an array of bulk strings."""
    parts = [b"*%d\r\n" % len(args)]
    for arg in args:
        data = _arg(arg)
        parts.append(b"$%d\r\n%s\r\n" % (len(data), data))
    return b"".join(parts)


class _Incomplete(Exception):
    pass


_NEED_MORE = object()


class ReplyParser:
    """Bytes in, replies out: ``feed(data)`` then ``next_reply()`` until it says "need more".

    Replies: simple string → ``str``, error → :class:`ReplyError` (returned, not raised),
    integer → ``int``, bulk string → ``bytes`` or ``None``, array → ``list`` or ``None``.
    """

    NEED_MORE = _NEED_MORE

    def __init__(self) -> None:
        self._buf = bytearray()

    def feed(self, data: bytes) -> None:
        self._buf += data

    def next_reply(self) -> Any:
        try:
            value, end = self._parse(0)
        except _Incomplete:
            return _NEED_MORE
        del self._buf[:end]
        return value

    def _line(self, pos: int) -> tuple[bytes, int]:
        end = self._buf.find(b"\r\n", pos)
        if end < 0:
            if len(self._buf) - pos > 65536:
                raise RespProtocolError("a RESP header line longer than 64 KiB")
            raise _Incomplete
        return bytes(self._buf[pos:end]), end + 2

    def _parse(self, pos: int) -> tuple[Any, int]:
        if pos >= len(self._buf):
            raise _Incomplete
        kind = self._buf[pos : pos + 1]
        line, pos = self._line(pos + 1)
        if kind == b"+":
            return line.decode(errors="replace"), pos
        if kind == b"-":
            return ReplyError(line.decode(errors="replace")), pos
        try:
            number = int(line)
        except ValueError:
            raise RespProtocolError(f"bad RESP number {line!r}") from None
        if kind == b":":
            return number, pos
        if kind == b"$":
            if number < 0:
                return None, pos
            if len(self._buf) < pos + number + 2:
                raise _Incomplete
            if self._buf[pos + number : pos + number + 2] != b"\r\n":
                raise RespProtocolError("bulk string not followed by CRLF")
            return bytes(self._buf[pos : pos + number]), pos + number + 2
        if kind == b"*":
            if number < 0:
                return None, pos
            items = []
            for _ in range(number):
                item, pos = self._parse(pos)
                items.append(item)
            return items, pos
        raise RespProtocolError(f"unknown RESP reply type {bytes(kind)!r}")


@dataclass(frozen=True, slots=True)
class Address:
    """Where the server is: from ``redis://[:password@]host[:port][/db]``."""

    host: str
    port: int
    db: int
    password: str | None

    @classmethod
    def from_url(cls, url: str) -> Address:
        parts = urlsplit(url)
        if parts.scheme != "redis":
            raise ValueError(f"a Redis cache URL looks like redis://host:port/db, got {url!r}")
        path = parts.path.strip("/")
        if path and not path.isdigit():
            raise ValueError(f"the database in {url!r} must be a number, got {path!r}")
        return cls(
            parts.hostname or "127.0.0.1",
            parts.port or 6379,
            int(path or 0),
            unquote(parts.password) if parts.password else None,
        )

    def __str__(self) -> str:
        return f"redis://{self.host}:{self.port}/{self.db}"


class Connection:
    """One socket to Redis. Use it either blocking (``call``) or non-blocking
    (``await acall``), never both: the pool keeps one kind apart from the other."""

    def __init__(self, address: Address, timeout: float) -> None:
        self.address = address
        self.timeout = timeout
        self.sock: socket.socket | None = None
        self.parser = ReplyParser()

    def _hello(self) -> list[bytes]:
        out = []
        if self.address.password is not None:
            out.append(encode_command("AUTH", self.address.password))
        if self.address.db:
            out.append(encode_command("SELECT", self.address.db))
        return out

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None

    # -- blocking ----------------------------------------------------------------------

    def call(self, *args: Any) -> Any:
        """Send one command and return its reply (blocking, with the timeout)."""
        if self.sock is None:
            self.sock = socket.create_connection(
                (self.address.host, self.address.port), timeout=self.timeout
            )
            self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            for hello in self._hello():
                self.sock.sendall(hello)
                self._check(self._read_blocking())
        self.sock.sendall(encode_command(*args))
        return self._read_blocking()

    def _read_blocking(self) -> Any:
        assert self.sock is not None
        while True:
            reply = self.parser.next_reply()
            if reply is not _NEED_MORE:
                return reply
            data = self.sock.recv(65536)
            if not data:
                raise ConnectionError("Redis closed the connection")
            self.parser.feed(data)

    @staticmethod
    def _check(reply: Any) -> None:
        if isinstance(reply, ReplyError):
            raise ConnectionError(f"Redis refused the connection set-up: {reply}")

    # -- non-blocking ------------------------------------------------------------------

    async def acall(self, *args: Any) -> Any:
        """Send one command and return its reply, suspending only when the socket blocks."""
        if self.sock is None:
            await self._aconnect()
            for hello in self._hello():
                await self.send_all(hello)
                self._check(await self._aread())
        await self.send_all(encode_command(*args))
        return await self._aread()

    async def _aconnect(self) -> None:
        infos = socket.getaddrinfo(
            self.address.host, self.address.port, type=socket.SOCK_STREAM
        )  # numeric hosts (the usual case) do not touch DNS
        family, kind, proto, _, sockaddr = infos[0]
        sock = socket.socket(family, kind, proto)
        sock.setblocking(False)
        try:
            err = sock.connect_ex(sockaddr)
            if err in (errno.EINPROGRESS, errno.EWOULDBLOCK, errno.EAGAIN):
                await runtime.wait_socket(sock, writable=True, timeout=self.timeout)
                err = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if err:
                raise OSError(err, f"connect to {self.address}: {errno.errorcode.get(err, err)}")
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except BaseException:
            sock.close()
            raise
        self.sock = sock

    async def send_all(self, data: bytes) -> None:
        """Send all of ``data``, waiting for the socket when it is full (on trio or asyncio)."""
        assert self.sock is not None
        view = memoryview(data)
        while view:
            try:
                sent = self.sock.send(view)
            except BlockingIOError:
                await runtime.wait_socket(self.sock, writable=True, timeout=self.timeout)
                continue
            view = view[sent:]

    async def _aread(self) -> Any:
        assert self.sock is not None
        while True:
            reply = self.parser.next_reply()
            if reply is not _NEED_MORE:
                return reply
            try:
                data = self.sock.recv(65536)
            except BlockingIOError:
                await runtime.wait_socket(self.sock, writable=False, timeout=self.timeout)
                continue
            if not data:
                raise ConnectionError("Redis closed the connection")
            self.parser.feed(data)
