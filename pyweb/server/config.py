"""Server configuration: every knob of the server in one dataclass, each written once.

Marlow §6 keeps the run-time configuration in one ``Config`` record that every part of the
server reads; Hop §2.4.1 does the same with ``define-parameter`` (port, backlog size,
scheduling strategy, pool size). :class:`ServerConfig` is that record. Tests build one
directly with short timeouts.

Each setting is written once, as a field with its :func:`setting` metadata (help, how to
read it from text, a metavar): ``pyweb serve``'s flags (``pyweb/cli.py``) and the keys of
``pyweb.toml`` (:mod:`pyweb.server.configfile`) are both derived from :func:`settings`. To
add a setting, add a field here with ``setting(...)``: it becomes ``--the-name`` and
``the_name = ...`` in the file, checked the same way in both.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from pyweb.protocol.parser import Limits

from .collector import YOUNG
from .logging import ACCESS_FORMATS, LOG_FORMATS

__all__ = ["LOOPS", "ServerConfig", "SCHEDULERS", "Setting", "setting", "settings"]

SCHEDULERS = ("one-to-one", "pool", "nothread")
"""The scheduler names of Hop §2.4 that pyweb implements (see :mod:`pyweb.server.scheduling`)."""

LOOPS = ("trio", "asyncio")
"""The event loops ``pyweb serve`` runs on (``--loop``; asyncio uses uvloop when installed)."""



# ---- reading a setting from text (a flag's argument, a TOML value) --------------------------
# Each raises ValueError with words meant for the person who typed the value.


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise ValueError(f"must be at least 1, got {value}")
    return value


def port_number(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"not a port number: {text!r}") from None
    if not 0 <= value <= 65535:
        raise ValueError(f"a port is between 0 and 65535, got {value}")
    return value


def seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"not a number of seconds: {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise ValueError(f"must be a positive number of seconds, got {text}")
    return value


def log_target(text: str) -> str | None:
    return None if text == "none" else text


def text_list(text: str) -> tuple[str, ...]:
    """``"a, b"`` → ``("a", "b")``: a list setting given as one comma-separated value (a
    TOML list is joined with commas first, so both spellings are read the same way)."""
    return tuple(part.strip() for part in text.split(",") if part.strip())


def header_value(text: str) -> str | None:
    """A response header's value; ``"none"`` or nothing leaves the header out."""
    text = text.strip()
    if any(c in text for c in "\r\n\x00"):
        raise ValueError(f"a header value cannot hold CR, LF or NUL: {text!r}")
    return None if text in ("", "none") else text


def byte_count(text: str) -> int:
    """A size in bytes, 0 or more."""
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"not a whole number of bytes: {text!r}") from None
    if value < 0:
        raise ValueError(f"must be 0 or more bytes, got {value}")
    return value


def max_age(text: str) -> int | None:
    """HSTS max-age in seconds; 0 or ``none`` means no header."""
    if text.strip() == "none":
        return None
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"not a whole number of seconds: {text!r}") from None
    if value < 0:
        raise ValueError(f"must be 0 or more seconds, got {value}")
    return value or None


def site_path(text: str) -> str:
    if not text.startswith("/") or text.startswith("//"):
        raise ValueError(f"a path on this site, starting with one '/', got {text!r}")
    return text


@dataclass(frozen=True)
class Setting:
    """How one :class:`ServerConfig` field is set from outside: ``--flag`` and TOML key."""

    help: str
    """The flag's help; ``{default}`` is replaced by the field's default."""
    parse: Callable[[str], Any] | None = None
    """Text to value (raises ValueError); ``None`` for text, and for booleans (a switch)."""
    metavar: str | None = None
    choices: Sequence[str] | None = None
    group: str | None = None
    """A section of ``pyweb serve --help`` (``None``: the main one)."""
    in_file: bool = True
    """False for a setting that only the program itself passes (hidden from --help too)."""
    switch: bool = False
    """A boolean: a flag without a value (``--dev``), ``true``/``false`` in the file."""
    restart: bool = False
    """A reload (SIGHUP) cannot change it: it belongs to the listening socket, the scheduler
    or the open log files (Marlow §6 re-reads only what new connections use)."""


def setting(default: Any = dataclasses.MISSING, help: str = "", **how: Any) -> Any:
    """A :class:`ServerConfig` field that ``pyweb serve`` and ``pyweb.toml`` can set."""
    meta = {"setting": Setting(help=help, switch=isinstance(default, bool), **how)}
    if callable(default) and not isinstance(default, str | int | float | bool):
        return field(default_factory=default, metadata=meta)
    return field(default=default, metadata=meta)


def settings() -> list[tuple[dataclasses.Field[Any], Setting]]:
    """Every settable field of :class:`ServerConfig` with its :class:`Setting`, in order."""
    return [
        (f, f.metadata["setting"])
        for f in dataclasses.fields(ServerConfig)
        if "setting" in f.metadata
    ]


def setting_default(f: dataclasses.Field[Any]) -> Any:
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return f.default


@dataclass
class ServerConfig:
    """What the server listens on, how it schedules connections, and its limits and timeouts.

    Timeouts are in seconds (Marlow §4: a client that hangs must not hold resources forever).
    """

    host: str = setting("127.0.0.1", "address to listen on (default: {default})", restart=True)
    port: int = setting(
        8000, "port, 0 for any free one (default: {default})", parse=port_number, restart=True
    )
    """0 picks a free port; the chosen one is ``Server.port`` once listening."""
    site_dir: str | None = None
    """The site directory `pyweb serve` was given (the handler, a :class:`pyweb.app.site.Site`, serves it)."""
    scheduler: str = setting(
        "one-to-one",
        "how connections are scheduled, Hop §2.4 (default: {default})",
        choices=SCHEDULERS,
        restart=True,
    )
    """``"one-to-one"`` (a task per connection), ``"pool"`` or ``"nothread"`` (Hop §2.4)."""
    pool_size: int = setting(
        16, "tasks of the pool scheduler (default: {default})", parse=positive_int, restart=True
    )
    """Number of long-lived accepting tasks of the ``pool`` scheduler (Hop's max-threads)."""
    loop: str = setting(
        "trio",
        "event loop: trio, or asyncio (on uvloop when installed) (default: {default})",
        choices=LOOPS,
        restart=True,
    )
    """``"trio"`` (the default, the teaching model) or ``"asyncio"``
    (:mod:`pyweb.server.asyncio`)."""
    dev: bool = setting(
        False,
        "development mode: tracebacks and offending input on error pages, changed "
        "files reloaded on the next request, serve even if some pages have errors",
    )
    """Development mode: error pages show the traceback and the offending input."""
    access_log: str | TextIO | None = setting(
        "-",
        "access log file, - for stderr, none for nowhere (default: -)",
        parse=log_target,
        metavar="PATH|-|none",
        restart=True,
    )
    """Access log: a file path, ``"-"`` for stderr, ``None`` for nowhere, or an open text
    stream (a ``StringIO`` in tests and notebooks) (Marlow §5)."""
    error_log: str | TextIO | None = setting(
        "-",
        "error log file, - for stderr, none for nowhere (default: -)",
        parse=log_target,
        metavar="PATH|-|none",
        restart=True,
    )
    """Error log: a file path, ``"-"`` for stderr, ``None`` for nowhere, or an open text
    stream (Marlow §5.1)."""
    limits: Limits = field(default_factory=Limits)
    """Size limits of the request parser (414, 431, 413)."""
    max_body: int | None = setting(
        None,
        f"largest request body accepted, else 413 (default: {Limits().max_body})",
        parse=positive_int,
        metavar="BYTES",
    )
    """When given, replaces ``limits.max_body``."""
    header_timeout: float = setting(
        10.0, "seconds for a request head to arrive (default: {default:g})", parse=seconds,
        metavar="S",
    )  # fmt: skip
    """From the first byte of a request until its head is complete (then 408 and close)."""
    keepalive_timeout: float = setting(
        5.0, "idle seconds between requests (default: {default:g})", parse=seconds, metavar="S"
    )
    """Idle time allowed between two requests on a persistent connection (then close)."""
    body_timeout: float = setting(
        30.0, "seconds to wait for more of a body, and for a whole body plus a second per "
        "--body-min-rate bytes (default: {default:g})", parse=seconds, metavar="S",
    )  # fmt: skip
    """Longest wait for the next piece of a request body while the handler reads it, and
    the time a whole body may take (plus one second per ``body_min_rate`` bytes): a body
    trickled in forever ends in 408."""
    body_min_rate: int = setting(
        64 * 1024, "bytes per second that extend a body's deadline (default: {default})",
        parse=positive_int, metavar="BYTES",
    )  # fmt: skip
    """Bytes per second that extend a body's deadline beyond ``body_timeout`` (a 16 MB
    upload gets 30 s + 256 s; one byte every 5 s gets 30 s)."""
    max_body_memory: int = setting(
        256 * 1024 * 1024, "bytes of request bodies held at once by the process; a body "
        "that does not fit gets 503 (default: {default})", parse=positive_int, metavar="BYTES",
    )  # fmt: skip
    """Bytes of request bodies held in memory at once by the whole process (the forms
    being read); a body that does not fit is refused with 503 (:mod:`.budget`)."""
    gc_young: int = setting(
        YOUNG, "container objects allocated between two collections of the cyclic "
        "collector's young generation, process-wide (default: {default}; Python's: 700)",
        parse=positive_int, metavar="N",
    )  # fmt: skip
    """The cyclic garbage collector's first threshold, set for the whole process when a
    server starts: large enough that a request's objects are freed by their reference
    counts before a collection visits them (:mod:`.collector`)."""
    send_timeout: float = setting(
        30.0, "seconds to wait for a client to read (default: {default:g})", parse=seconds,
        metavar="S",
    )  # fmt: skip
    """Longest wait for a client to accept more response bytes (a client that doesn't read)."""
    page_timeout: float = setting(
        30.0,
        "seconds a page or service may run before it is stopped with a 503 "
        "(default: {default:g}; long polls and streams opt out)",
        parse=seconds,
        metavar="S",
    )
    """Longest a page or service may run (Marlow §4, applied to the handler): past it the
    page is stopped and the client gets a 503 saying it took too long. Long polls and
    streams opt out (docs/pages.md)."""
    max_connections: int = setting(
        1000, "connections served at once; at the limit an idle one makes room, else a "
        "fast 503 (default: {default})", parse=positive_int, metavar="N",
    )  # fmt: skip
    """Connections served at once. At the limit a newcomer waits for its request without a
    slot, then takes the slot of the connection idle longest (then of the slowest head or
    body); when every slot has a request in progress it gets a fast 503. Idle and silent
    connections may number as many again: they cost a socket, not work
    (:mod:`pyweb.server.slots`)."""
    max_streams: int = setting(
        1000, "long-polls, event streams and streamed replies served at once, apart from "
        "--max-connections (default: {default})", parse=positive_int, metavar="N",
    )  # fmt: skip
    """Requests in a long wait (a page waiting on ``client_gone_evt()``: long-polls,
    server-sent events; streamed replies), counted apart from ``max_connections``."""
    max_connections_per_client: int | None = setting(
        None, "connections one client address may hold, else 503 (default: no limit; "
        "behind a proxy every client is the proxy)", parse=positive_int, metavar="N",
    )  # fmt: skip
    """Connections one client address may hold (None: no limit). For a site without a
    proxy in front; behind one, every client is the proxy."""
    first_byte_timeout: float = setting(
        5.0, "seconds a new connection may stay silent (default: {default:g})",
        parse=seconds, metavar="S",
    )  # fmt: skip
    """How long a new connection may stay silent before its first byte (then it is closed;
    the header timeout starts with that byte)."""
    backlog: int = 1024
    """The listen backlog. Hop §3.3.2 found mid-range values such as 128 best for
    throughput; under a flood of connections (2,000 opened in a second) a short queue
    overflows and the kernel drops a normal client's SYN, which costs it a 1 s
    retransmission, so pyweb takes nginx's side (511) and rounds up. The kernel caps it at
    ``net.core.somaxconn``."""
    log_format: str = setting(
        "text",
        "text (the access log's format above, error lines as [time] [level] message) or "
        "json (one JSON object a line in both logs) (default: {default})",
        choices=LOG_FORMATS,
        restart=True,
    )
    """``"text"`` or ``"json"``: :data:`pyweb.server.logging.LOG_FORMATS`."""
    access_log_format: str = setting(
        "combined",
        "combined (Apache's Combined Log Format), timed (the same line, then "
        "rt=SECONDS worker=N) or alloc (the timed line, then alloc=BYTES/CALLS: what the "
        "page allocated, with --profile-alloc) (default: {default})",
        choices=ACCESS_FORMATS,
        restart=True,
    )
    """``"combined"`` (Combined Log Format), ``"timed"`` (the same, then
    ``rt=SECONDS worker=N``) or ``"alloc"`` (the timed line, then ``alloc=BYTES/CALLS``):
    see :data:`pyweb.server.logging.ACCESS_FORMATS`."""
    workers: int = setting(
        1,
        "serve with N processes sharing the port, under a supervisor that restarts a "
        "worker that dies (default: 1, no supervisor)",
        parse=positive_int,
        metavar="N",
    )
    """Processes serving the port (``pyweb serve`` starts a supervisor when more than one)."""
    max_requests: int | None = setting(
        None,
        "with --workers: a worker drains and is replaced after N requests",
        parse=positive_int,
        metavar="N",
    )
    """Shut down gracefully after this many requests (the supervisor starts a fresh worker)."""
    status: bool = setting(
        False,
        "answer /_pyweb/status (JSON: connections, requests, per-page latency, workers) "
        "to loopback clients",
    )
    """Answer ``/_pyweb/status`` (loopback clients, or with ``status_token``)."""
    status_token: str | None = setting(
        None,
        "also answer /_pyweb/status to clients sending 'Authorization: Bearer SECRET'",
        metavar="SECRET",
    )
    """A secret that lets non-loopback clients read the status page (``Bearer`` token); giving
    one turns ``status`` on."""
    metrics: bool = setting(
        False,
        "count requests and answer /_pyweb/metrics (Prometheus text: requests by route and "
        "status, latency, connections, slots, cache, database pools; summed over --workers) "
        "to loopback clients and --status-token holders; needs pyweb[metrics]",
        restart=True,
    )
    """Count requests and answer ``/_pyweb/metrics`` (:mod:`pyweb.server.metrics`), behind
    the operator pages' guard (loopback clients, or the ``status_token``)."""
    db: str | None = setting(
        None,
        "the database of pyweb.db: sqlite:///PATH, postgresql://USER@HOST/DB or "
        "mysql://USER@HOST/DB (default: sqlite:///DIR/data/pyweb.sqlite3, created on first "
        "use); the site's schema.sql runs on first use",
        metavar="URL",
    )
    """The database URL of :mod:`pyweb.db` (set up once per process: a reload keeps it)."""
    cache: str | None = setting(
        None,
        "where pyweb.cache keeps entries: memory (default, per process) or "
        "redis://HOST:PORT/DB (shared by every worker; also the PYWEB_CACHE variable)",
        metavar="URL",
    )
    """Where :mod:`pyweb.cache` keeps entries (set up once per process: a reload keeps it)."""
    per_process_cache: bool = setting(
        False,
        "with --workers N and the memory cache, serve a site that uses sessions, login, "
        "CSRF or push anyway (each worker then has its own; by default pyweb refuses)",
        restart=True,
    )
    """Run ``--workers N`` on the per-process memory cache even for a site whose sessions,
    CSRF tokens, login limits or push live in the cache: each worker then sees only its
    own (:mod:`pyweb.app.sharing`). Off: pyweb refuses to start and says to share the
    cache with ``cache = "redis://..."``."""
    listen_fd: int | None = setting(None, "", parse=int, in_file=False, restart=True)
    """Serve on this already listening socket (a worker under ``--workers``) instead of
    binding ``host:port``."""
    max_requests_jitter: int | None = setting(
        None, "with --max-requests: a worker recycles after N + a random 0..J more "
        "(default: a tenth of N)", parse=int, metavar="J",
    )  # fmt: skip
    """A worker recycles after ``max_requests`` plus a random 0..jitter more, so workers
    started together do not all recycle at once (gunicorn's name). ``None``: a tenth of
    ``max_requests``."""
    keepalive_requests: int = setting(
        1000, "requests on one keep-alive connection, then Connection: close "
        "(default: {default})", parse=positive_int, metavar="N",
    )  # fmt: skip
    """Requests served on one keep-alive connection; the last one's reply says
    ``Connection: close`` (nginx's ``keepalive_requests``). Clients reconnect now and
    then, so a worker that replaced a crashed one gets its share of them."""
    keepalive_time: float = setting(
        3600.0, "seconds a keep-alive connection may live (default: {default:g})",
        parse=seconds, metavar="S",
    )  # fmt: skip
    """Seconds a keep-alive connection may live; the first reply after it says close
    (nginx's ``keepalive_time``)."""
    close_grace: float = setting(
        1.0, "seconds an idle keep-alive connection is still served after a shutdown or "
        "recycle begins (default: {default:g})", parse=float, metavar="S",
    )  # fmt: skip
    """On a graceful shutdown or a recycle, how long an idle keep-alive connection is still
    watched for a next request (answered with ``Connection: close``) before it is closed:
    a request already on its way is answered instead of reset."""
    proxy_headers: bool = setting(
        True, "believe X-Forwarded-For/-Proto from --forwarded-allow-ips (on by default; "
        "false in pyweb.toml turns it off)",
    )  # fmt: skip
    """Believe ``X-Forwarded-For``/``-Proto`` on connections from ``forwarded_allow_ips``:
    the client's address becomes ``conn.peer`` and the access log's host, the scheme
    ``conn.scheme`` (:mod:`pyweb.server.proxy`)."""
    forwarded_allow_ips: str = setting(
        "127.0.0.1", "the trusted proxies: addresses or networks, comma-separated, * for "
        "any (default: {default})", metavar="IPS",
    )  # fmt: skip
    """The proxies whose forwarding fields are believed: addresses or networks,
    comma-separated, ``"*"`` for any (uvicorn's name and default)."""
    strict_regions: bool = setting(
        False,
        "a page that changes a library module's global fails with 500 (default: a "
        "warning in the error log, and a banner on the page in --dev)",
        group="regions",
    )
    no_script_cache: bool = setting(
        False,
        "compile the page script again on every request (SMLserver Table 1, column 5)",
        group="regions",
    )
    exec_library: bool = setting(
        False,
        "re-run the library's initialisation before every request instead of "
        "restoring its snapshot (SMLserver Table 1, column 6)",
        group="regions",
    )
    profile_alloc: bool = setting(
        False,
        "count the bytes each page allocates (C extension only); shown at "
        "/_pyweb/stats and, with --access-log-format alloc, in the access log",
        group="regions",
    )

    # ---- the site's security (pyweb.signing, sessions, auth, CSRF; docs/sessions.md) ----
    secret_key: tuple[str, ...] = setting(
        (),
        "the site's secret key for sessions, CSRF tokens and signed values; several, newest "
        "first, comma-separated, rotate it (better: PYWEB_SECRET_KEY, which ps does not show)",
        parse=text_list,
        metavar="KEY",
        group="site",
    )
    """Keys that sign, newest first (the first signs, all verify); empty: PYWEB_SECRET_KEY,
    or in --dev a key kept in the site's data/secret_key."""
    session_idle: float = setting(
        3600.0,
        "seconds a session lasts without being used (default: {default:g})",
        parse=seconds,
        metavar="S",
        group="site",
    )
    """A ``WhileUsed`` session: gone after this many seconds without a request."""
    session_lifetime: float = setting(
        43200.0,
        "seconds a session lasts at most, used or not; a login starts it again "
        "(default: {default:g}, 12 hours)",
        parse=seconds,
        metavar="S",
        group="site",
    )
    """The absolute lifetime of a session (its cookie's signature carries its age)."""
    session_memory_max: int = setting(
        100_000,
        "sessions the in-memory store holds at most; beyond, the least recently used goes "
        "(default: {default})",
        parse=positive_int,
        metavar="N",
        group="site",
    )
    """The bound of the in-memory session store (Redis bounds itself with maxmemory)."""
    login_url: str = setting(
        "/login",
        "where require_login() sends strangers (default: {default})",
        parse=site_path,
        metavar="PATH",
        group="site",
    )
    csrf_exempt: tuple[str, ...] = setting(
        (),
        "URL patterns whose POSTs need no CSRF token, comma-separated (/api/*)",
        parse=text_list,
        metavar="PATTERNS",
        group="site",
    )
    content_type_options: str | None = setting(
        "nosniff",
        "X-Content-Type-Options on every response (default: {default}; none: leave it out)",
        parse=header_value,
        metavar="VALUE",
        group="site",
    )
    frame_options: str | None = setting(
        "SAMEORIGIN",
        "X-Frame-Options on HTML responses (default: {default}; none: leave it out)",
        parse=header_value,
        metavar="VALUE",
        group="site",
    )
    referrer_policy: str | None = setting(
        "same-origin",
        "Referrer-Policy on HTML responses (default: {default}; none: leave it out)",
        parse=header_value,
        metavar="VALUE",
        group="site",
    )
    hsts: int | None = setting(
        None,
        "send Strict-Transport-Security: max-age=S (only behind https; default: not sent)",
        parse=max_age,
        metavar="S",
        group="site",
    )
    compress: bool = setting(
        True,
        "gzip or brotli for text answers and static files a client accepts (on by default; "
        "--no-compress or false in pyweb.toml turns it off)",
        group="site",
    )
    compress_min_size: int = setting(
        1024,
        "answers smaller than this many bytes are sent uncompressed (default: {default})",
        parse=byte_count,
        metavar="BYTES",
        group="site",
    )
    static_cache_control: str | None = setting(
        "no-cache",
        "Cache-Control of static files (default: {default}: kept, revalidated on each use; "
        "none: leave it out); a static_url() address is always immutable",
        parse=header_value,
        metavar="VALUE",
        group="site",
    )

    cors_origins: tuple[str, ...] = setting(
        (),
        "origins whose pages may read this site's answers (CORS), comma-separated: "
        "https://app.example, or * for any (default: none)",
        parse=text_list,
        metavar="ORIGINS",
        group="site",
    )
    cors_methods: tuple[str, ...] = setting(
        (),
        "methods those origins may use, comma-separated (default: a service's own, "
        "else GET, HEAD, POST)",
        parse=text_list,
        metavar="METHODS",
        group="site",
    )
    cors_headers: tuple[str, ...] = setting(
        (),
        "request headers those origins may send beyond the always-allowed ones, "
        "comma-separated (Content-Type, Authorization)",
        parse=text_list,
        metavar="NAMES",
        group="site",
    )
    cors_expose_headers: tuple[str, ...] = setting(
        (),
        "response headers their scripts may read beyond the basic ones, comma-separated",
        parse=text_list,
        metavar="NAMES",
        group="site",
    )
    cors_credentials: bool = setting(
        False,
        "let those origins send cookies and read the answers (never with origins *)",
        group="site",
    )
    cors_max_age: int | None = setting(
        None,
        "seconds a browser may keep a CORS preflight's answer (default: the browser's)",
        parse=max_age,
        metavar="S",
        group="site",
    )
    openapi: bool = setting(
        False,
        "answer /_pyweb/openapi.json and /_pyweb/openapi in production too (always in "
        "--dev; to loopback clients and status-token holders only)",
        group="site",
    )

    # ---- beside the requests: scheduled jobs, work after the reply, mail ----------------
    job_timeout: float = setting(
        300.0, "seconds a scheduled job may run before it is stopped (default: {default:g})",
        parse=seconds, metavar="S", group="background", restart=True,
    )  # fmt: skip
    """Longest run of a scheduled job without a ``timeout`` of its own (:mod:`pyweb.jobs`)."""
    missed_jobs: str = setting(
        "run", "a job run missed while the site was down: run it once at start-up, or "
        "skip it (default: {default})", choices=("run", "skip"), group="background",
        restart=True,
    )  # fmt: skip
    after_limit: int = setting(
        256, "pieces of conn.after work pending at once in a process; past it conn.after "
        "raises (a 503) (default: {default})", parse=positive_int, metavar="N",
        group="background", restart=True,
    )  # fmt: skip
    after_grace: float = setting(
        30.0, "seconds a shutdown waits for conn.after work before cancelling it "
        "(default: {default:g})", parse=seconds, metavar="S", group="background",
        restart=True,
    )  # fmt: skip
    mail_url: str | None = setting(
        None, "where pyweb.mail sends: smtp://USER:PASSWORD@HOST:587 (STARTTLS), "
        "smtps://HOST:465 (TLS), console (print; the default) or outbox (keep in memory); "
        "also the PYWEB_MAIL_URL variable", metavar="URL", group="background", restart=True,
    )  # fmt: skip

    def __post_init__(self) -> None:
        if self.scheduler not in SCHEDULERS:
            raise ValueError(
                f"unknown scheduler {self.scheduler!r}; choose one of {', '.join(SCHEDULERS)}"
            )
        if self.pool_size < 1:
            raise ValueError(f"pool_size must be at least 1, got {self.pool_size}")
        if self.max_requests is not None and self.max_requests < 1:
            raise ValueError(f"max_requests must be at least 1, got {self.max_requests}")
        self._check_hardening()
        timeouts = ("header_timeout", "keepalive_timeout", "body_timeout", "send_timeout")
        for name in (*timeouts, "page_timeout", "keepalive_time", "first_byte_timeout"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be a positive number of seconds")
        if self.max_body is not None and self.max_body != self.limits.max_body:
            self.limits = dataclasses.replace(self.limits, max_body=self.max_body)
        if self.status_token is not None:
            self.status = True

    def _check_hardening(self) -> None:
        """The limits against slow clients, floods and big bodies (docs/production.md,
        "Limits and attacks"): each a ValueError naming the setting."""
        at_least_one = (
            "max_connections", "max_streams", "keepalive_requests", "body_min_rate",
            "max_body_memory", "gc_young",
        )  # fmt: skip
        for name in at_least_one:
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        for name in ("max_connections_per_client", "max_requests_jitter"):
            value = getattr(self, name)
            if value is not None and value < (1 if name == "max_connections_per_client" else 0):
                raise ValueError(f"{name} is too small: {value}")
        if not self.close_grace >= 0:
            raise ValueError("close_grace must be zero or a positive number of seconds")
        from .proxy import TrustedProxies

        TrustedProxies(self.forwarded_allow_ips)  # raises ValueError naming a bad entry
