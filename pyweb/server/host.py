"""What a connection, a scheduler and the status page may ask of their server: the ``Host``
contract.

:class:`~pyweb.server.Server` (and :class:`~pyweb.server.asyncio.AsyncioServer`, which is one)
makes the connections, and the connections read its settings, its slots and its state
(Marlow §3: the server's state shared by its worker threads). They type the server by
this Protocol, not by the class, so that the import arrows of ``server/`` all point down:
the class imports its connections and schedulers; they import only this module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    import socket

    from pyweb.events import Latch
    from pyweb.handler import Handler
    from pyweb.protocol.messages import Request
    from pyweb.protocol.response import Response

    from .config import ServerConfig
    from .logging import ServerLog
    from .proxy import TrustedProxies
    from .slots import Slots

__all__ = ["Host", "RequestCounter"]


class RequestCounter(Protocol):
    """What a connection asks of the metrics (``metrics.py``): count a finished request."""

    def observe(self, request: Request | None, status: int, seconds: float) -> None: ...


@runtime_checkable
class Host(Protocol):
    """A running server, as its connections, its schedulers and its status page see it."""

    @property
    def config(self) -> ServerConfig:
        """The settings new connections start with (a reload replaces them: Marlow §6)."""

    @property
    def handler(self) -> Handler:
        """The handler with the server's layers, as new connections call it."""

    @property
    def site_handler(self) -> Handler:
        """The handler as given: it may draw the error pages."""

    @property
    def log(self) -> ServerLog | None:
        """The access and error logs, while the server serves."""

    @property
    def slots(self) -> Slots: ...

    @property
    def metrics(self) -> RequestCounter | None:
        """The counts of ``/_pyweb/metrics``, or None when metrics are off."""

    @property
    def proxies(self) -> TrustedProxies | None:
        """The trusted reverse proxies, or None."""

    @property
    def connections(self) -> set[Any]:
        """The live connections (for shutdown and the status page)."""

    @property
    def listener(self) -> socket.socket | None: ...

    @property
    def port(self) -> int: ...

    @property
    def stopping(self) -> Latch:
        """Set when the server begins a graceful shutdown."""

    @property
    def closing(self) -> bool:
        """True once shutdown began: no new requests, replies say close."""

    @property
    def closing_since(self) -> float:
        """The loop's time when shutdown began (idle connections get ``close_grace``)."""

    @property
    def access_enabled(self) -> bool: ...

    def error_page(
        self, status: int, *, dev: bool | None = None, site: Handler | None = None, **details: Any
    ) -> Response:
        """The page for an error the server answers itself."""
