"""What the shared server code may ask of a connection: the ``ServerConnection`` contract.

A connection is Marlow's ``talk`` loop (§3.2) on one socket. pyweb runs it on two loops
(Hop §2.4, pluggable schedulers): trio (``trio/connection.py``) and asyncio
(``asyncio/connection.py``). What a request does on its connection is written once,
against this contract and ``core.py``, not against either loop's class:

- the request body (``body.py``): read on demand, ``100 Continue``, the deadlines, the
  memory budget, draining what the handler left;
- the request as the handler sees it (``context.py``);
- the WebSocket session (``websocket.py``);
- the connection slots (``slots.py``).

Each loop supplies only what moves bytes and waits: :meth:`ServerConnection.receive_now`,
:meth:`ServerConnection.wait_for_bytes`, :meth:`ServerConnection.send_all`,
:meth:`ServerConnection.evict`, :meth:`ServerConnection.client_watch`. The two connection
classes are checked against the contract by mypy wherever one is handed to the shared
code, and at run time by ``tests/server/test_contract.py`` (the Protocols are
``runtime_checkable``: ``isinstance`` sees whether every member is there).

This module imports nothing of the server but its settings and its log, so every module
of the server may import it: the arrows of the import graph all point down.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from collections.abc import Callable

    from pyweb.events import Event, Latch
    from pyweb.protocol.parser import RequestParser

    from .config import ServerConfig
    from .logging import ServerLog

__all__ = ["Evicted", "Peekable", "ServerConnection", "ServerSide", "Watch"]

# What the connection is waiting for (slots.py closes the idle ones first for a newcomer).
IDLE = 0
"""The first byte of a request: close silently on timeout or shutdown."""
HEAD = 1
"""The rest of a request head: 408 on timeout, shutdown waits for it."""
HANDLER = 2
"""The handler runs (and reads the body on demand): no deadline."""


class Evicted(Exception):
    """The connection was closed for a newcomer while it waited for bytes (slots.py)."""


class Peekable(Protocol):
    """A socket the slots may peek at (``recv`` with ``MSG_PEEK``)."""

    def recv(self, bufsize: int, flags: int = ..., /) -> bytes: ...


class Watch(Protocol):
    """What ``ctx.client_gone_evt()`` waits on (``gone.py`` on trio, a Latch on asyncio)."""

    def evt(self) -> Event[None]: ...


@runtime_checkable
class ServerSide(Protocol):
    """What a request sees of its server."""

    @property
    def port(self) -> int:
        """The port the server listens on."""

    @property
    def stopping(self) -> Latch:
        """Set when the server begins a graceful shutdown."""


@runtime_checkable
class ServerConnection(Protocol):
    """One client connection, as the shared code sees it (see the module doc)."""

    # ------------------------------------------------------------------ read by the shared code

    @property
    def server(self) -> ServerSide: ...

    @property
    def config(self) -> ServerConfig:
        """The settings the connection started with, kept to its end (Marlow §6)."""

    @property
    def log(self) -> ServerLog: ...

    @property
    def parser(self) -> RequestParser:
        """The connection's sans-IO parser: the body's bytes are read from it."""

    @property
    def peer(self) -> str:
        """The client's address, ``"host:port"``."""

    @property
    def phase(self) -> int:
        """:data:`IDLE`, :data:`HEAD` or :data:`HANDLER`."""

    @property
    def fresh(self) -> bool:
        """No request has been read yet."""

    @property
    def sock(self) -> Peekable | None:
        """The socket, to peek at (None: not known)."""

    # ------------------------------------------------------------------ written by the shared code

    client: str
    """The current request's client (a trusted proxy may name another): the access log's."""
    reserved: int
    """Bytes of the process's body budget the current request holds (budget.py)."""
    in_stream_budget: bool
    """The request is in a long wait, counted against ``max_streams`` (slots.py)."""

    # ------------------------------------------------------------------ what each loop supplies

    def proxy_test(self) -> Callable[[str], bool] | None:
        """The test of the further proxies when the peer is a trusted one (proxy.py)."""

    async def receive_now(self) -> bool:
        """Feed the parser what has arrived, without waiting: True when something was fed
        (then the other connections get a turn). False when nothing was there, or when the
        loop feeds the parser itself (asyncio)."""

    async def wait_for_bytes(self, seconds: float) -> bool:
        """Wait at most ``seconds`` for more of a request body: True when bytes arrived (on
        asyncio they are in the parser; on trio :meth:`receive_now` reads them). While it
        waits the connection may be closed for a newcomer: :class:`Evicted`."""

    async def turn(self) -> None:
        """Let the other connections run (a read may hold several body pieces)."""

    async def receive_frames(self) -> bytes:
        """A WebSocket session's next bytes (``b""``: the peer closed its side)."""

    async def send_all(self, data: bytes) -> None:
        """Write ``data`` (a ``100 Continue``, a WebSocket frame) to the client."""

    def client_watch(self) -> Watch:
        """What ``ctx.client_gone_evt()`` waits on; the request moves to the stream budget."""

    def evict(self) -> None:
        """Close this waiting connection to make room for a newcomer (slots.py)."""
