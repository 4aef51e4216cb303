"""Server configuration: every knob of the server in one dataclass.

Marlow §6 keeps the run-time configuration in one ``Config`` record that every part of the
server reads; Hop §2.4.1 does the same with ``define-parameter`` (port, backlog size,
scheduling strategy, pool size). :class:`ServerConfig` is that record. The CLI
(``pyweb serve``) fills it from its arguments; tests build one directly with short timeouts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TextIO

from pyweb.protocol.parser import Limits

__all__ = ["ServerConfig", "SCHEDULERS"]

SCHEDULERS = ("one-to-one", "pool", "nothread")
"""The scheduler names of Hop §2.4 that pyweb implements (see :mod:`pyweb.server.schedulers`)."""


@dataclass
class ServerConfig:
    """What the server listens on, how it schedules connections, and its limits and timeouts.

    Timeouts are in seconds (Marlow §4: a client that hangs must not hold resources forever).
    """

    host: str = "127.0.0.1"
    port: int = 8000
    """0 picks a free port; the chosen one is ``Server.port`` once listening."""
    site_dir: str | None = None
    """The site directory `pyweb serve` was given (the handler, a :class:`pyweb.app.site.Site`, serves it)."""
    scheduler: str = "one-to-one"
    """``"one-to-one"`` (a task per connection), ``"pool"`` or ``"nothread"`` (Hop §2.4)."""
    pool_size: int = 16
    """Number of long-lived accepting tasks of the ``pool`` scheduler (Hop's max-threads)."""
    dev: bool = False
    """Development mode: error pages show the traceback and the offending input."""
    limits: Limits = field(default_factory=Limits)
    """Size limits of the request parser (414, 431, 413)."""
    header_timeout: float = 10.0
    """From the first byte of a request until its head is complete (then 408 and close)."""
    keepalive_timeout: float = 5.0
    """Idle time allowed between two requests on a persistent connection (then close)."""
    body_timeout: float = 30.0
    """Longest wait for the next piece of a request body while the handler reads it, and
    the time a whole body may take (plus one second per ``body_min_rate`` bytes): a body
    trickled in forever ends in 408."""
    body_min_rate: int = 64 * 1024
    """Bytes per second that extend a body's deadline beyond ``body_timeout`` (a 16 MB
    upload gets 30 s + 256 s; one byte every 5 s gets 30 s)."""
    max_body_memory: int = 256 * 1024 * 1024
    """Bytes of request bodies held in memory at once by the whole process (the forms
    being read); a body that does not fit is refused with 503 (:mod:`.budget`)."""
    send_timeout: float = 30.0
    """Longest wait for a client to accept more response bytes (a client that doesn't read)."""
    page_timeout: float = 30.0
    """Longest a page or service may run (Marlow §4, applied to the handler): past it the
    page is stopped and the client gets a 503 saying it took too long. Long polls and
    streams opt out (docs/pages.md)."""
    max_connections: int = 1000
    """Connections served at once. At the limit a newcomer takes the slot of the connection
    idle longest (then of the slowest head or body); when every slot has a request in
    progress it gets a fast 503 (:mod:`pyweb.server.slots`)."""
    max_streams: int = 1000
    """Requests in a long wait (a page waiting on ``client_gone_evt()``: long-polls,
    server-sent events; streamed replies), counted apart from ``max_connections``."""
    max_connections_per_client: int | None = None
    """Connections one client address may hold (None: no limit). For a site without a
    proxy in front; behind one, every client is the proxy."""
    first_byte_timeout: float = 5.0
    """How long a new connection may stay silent before its first byte (then it is closed;
    the header timeout starts with that byte)."""
    backlog: int = 1024
    """The listen backlog. Hop §3.3.2 found mid-range values such as 128 best for
    throughput; under a flood of connections (2,000 opened in a second) a short queue
    overflows and the kernel drops a normal client's SYN, which costs it a 1 s
    retransmission, so pyweb takes nginx's side (511) and rounds up. The kernel caps it at
    ``net.core.somaxconn``."""
    access_log: str | TextIO | None = "-"
    """Access log: a file path, ``"-"`` for stderr, ``None`` for nowhere, or an open text
    stream (a ``StringIO`` in tests and notebooks) (Marlow §5)."""
    error_log: str | TextIO | None = "-"
    """Error log: a file path, ``"-"`` for stderr, ``None`` for nowhere, or an open text
    stream (Marlow §5.1)."""
    access_log_format: str = "combined"
    """``"combined"`` (Combined Log Format), ``"timed"`` (the same, then
    ``rt=SECONDS worker=N``) or ``"alloc"`` (the timed line, then ``alloc=BYTES/CALLS``):
    see :data:`pyweb.server.logging.ACCESS_FORMATS`."""
    status: bool = False
    """Answer ``/_pyweb/status`` (loopback clients, or with ``status_token``)."""
    status_token: str | None = None
    """A secret that lets non-loopback clients read the status page (``Bearer`` token)."""
    listen_fd: int | None = None
    """Serve on this already listening socket (a worker under ``--workers``) instead of
    binding ``host:port``."""
    max_requests: int | None = None
    """Shut down gracefully after this many requests (the supervisor starts a fresh worker)."""
    max_requests_jitter: int | None = None
    """A worker recycles after ``max_requests`` plus a random 0..jitter more, so workers
    started together do not all recycle at once (gunicorn's name). ``None``: a tenth of
    ``max_requests``."""
    keepalive_requests: int = 1000
    """Requests served on one keep-alive connection; the last one's reply says
    ``Connection: close`` (nginx's ``keepalive_requests``). Clients reconnect now and
    then, so a worker that replaced a crashed one gets its share of them."""
    keepalive_time: float = 3600.0
    """Seconds a keep-alive connection may live; the first reply after it says close
    (nginx's ``keepalive_time``)."""
    close_grace: float = 1.0
    """On a graceful shutdown or a recycle, how long an idle keep-alive connection is still
    watched for a next request (answered with ``Connection: close``) before it is closed:
    a request already on its way is answered instead of reset."""
    proxy_headers: bool = True
    """Believe ``X-Forwarded-For``/``-Proto`` on connections from ``forwarded_allow_ips``:
    the client's address becomes ``conn.peer`` and the access log's host, the scheme
    ``conn.scheme`` (:mod:`pyweb.server.proxy`)."""
    forwarded_allow_ips: str = "127.0.0.1"
    """The proxies whose forwarding fields are believed: addresses or networks,
    comma-separated, ``"*"`` for any (uvicorn's name and default)."""

    def __post_init__(self) -> None:
        if self.scheduler not in SCHEDULERS:
            raise ValueError(
                f"unknown scheduler {self.scheduler!r}; choose one of {', '.join(SCHEDULERS)}"
            )
        if self.pool_size < 1:
            raise ValueError(f"pool_size must be at least 1, got {self.pool_size}")
        if self.max_requests is not None and self.max_requests < 1:
            raise ValueError(f"max_requests must be at least 1, got {self.max_requests}")
        if self.max_requests_jitter is not None and self.max_requests_jitter < 0:
            raise ValueError(f"max_requests_jitter must be >= 0, got {self.max_requests_jitter}")
        if self.keepalive_requests < 1:
            raise ValueError(f"keepalive_requests must be at least 1, got {self.keepalive_requests}")
        if not self.close_grace >= 0:
            raise ValueError("close_grace must be zero or a positive number of seconds")
        if self.body_min_rate < 1:
            raise ValueError(f"body_min_rate must be at least 1 byte/s, got {self.body_min_rate}")
        if self.max_body_memory < 1:
            raise ValueError(f"max_body_memory must be at least 1, got {self.max_body_memory}")
        if self.max_streams < 1:
            raise ValueError(f"max_streams must be at least 1, got {self.max_streams}")
        if self.max_connections_per_client is not None and self.max_connections_per_client < 1:
            raise ValueError("max_connections_per_client must be at least 1 (or None)")
        if self.max_connections < 1:
            raise ValueError(f"max_connections must be at least 1, got {self.max_connections}")
        from .proxy import TrustedProxies

        TrustedProxies(self.forwarded_allow_ips)  # raises ValueError naming a bad entry
        timeouts = ("header_timeout", "keepalive_timeout", "body_timeout", "send_timeout")
        for name in (*timeouts, "page_timeout", "keepalive_time", "first_byte_timeout"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be a positive number of seconds")
