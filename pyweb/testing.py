"""A test client that speaks real HTTP to a real pyweb server (for tests and notebooks).

Serve a directory and fetch a page::

    import pyweb.testing

    with pyweb.testing.serve("pages") as client:
        response = client.get("/index.html")
        print(response.status, response.headers["content-type"])
        print(response.text[:60])

Serve an async handler and post a form to it::

    from pyweb.protocol.response import Response

    async def echo(ctx):
        return Response(200, [("Content-Type", "text/plain")], await ctx.body())

    with pyweb.testing.serve(echo) as client:
        assert client.post("/", {"name": "Ada", "age": "36"}).text == "name=Ada&age=36"

Talk to a server that is already running::

    client = pyweb.testing.Client("http://127.0.0.1:8000")
    client.get("/").status

:func:`serve` starts :class:`pyweb.server.Server` in its own thread, with its own
``trio.run``, on 127.0.0.1 and a free port (port 0), with the access log off; any keyword
overrides a :class:`~pyweb.server.ServerConfig` field. Leaving the ``with`` block shuts the
server down gracefully (in its own trio run, via ``trio.from_thread``) and re-raises
anything that crashed it. Nothing is simulated: requests go through a socket, the parser,
the scheduler and the connection loop exactly as a browser's would.

:class:`Client` keeps one keep-alive connection (reconnecting when the server closed it)
and a small cookie jar: cookies set by responses go back on later requests whose path
matches (RFC 6265 §5.1.4, §5.3; ``Max-Age``/``Expires`` in the past delete a cookie;
``Domain`` is ignored since a client talks to one host).
"""

from __future__ import annotations

import http.client
import json as jsonlib
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import urlencode, urlsplit

import trio

__all__ = ["serve", "Client", "TestResponse", "Headers"]


class Headers(Mapping[str, str]):
    """Response header fields: case-insensitive, in order, repeated fields kept.

    ``headers["content-type"]`` is the first value; ``headers.get_all("set-cookie")`` is
    every value of a field; ``headers.items()`` yields unique names (see :attr:`raw`
    for the list of pairs as received).
    """

    def __init__(self, raw: Iterable[tuple[str, str]] = ()):
        self.raw: list[tuple[str, str]] = list(raw)

    def get_all(self, name: str) -> list[str]:
        name = name.lower()
        return [value for key, value in self.raw if key.lower() == name]

    def __getitem__(self, name: str) -> str:
        name = name.lower()
        for key, value in self.raw:
            if key.lower() == name:
                return value
        raise KeyError(name)

    def __iter__(self) -> Iterator[str]:
        seen: set[str] = set()
        for key, _ in self.raw:
            if key.lower() not in seen:
                seen.add(key.lower())
                yield key

    def __len__(self) -> int:
        return len({key.lower() for key, _ in self.raw})

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and any(key.lower() == name.lower() for key, _ in self.raw)

    def __repr__(self) -> str:
        return f"Headers({self.raw!r})"


class TestResponse:
    """One response: ``status``, ``reason``, ``headers`` (:class:`Headers`), ``body``
    (bytes), ``text`` (decoded with the charset of Content-Type, UTF-8 by default) and
    :meth:`json`."""

    __test__ = False  # not a pytest test class, despite the name

    def __init__(self, status: int, reason: str, headers: Headers, body: bytes):
        self.status = status
        self.reason = reason
        self.headers = headers
        self.body = body

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "").split(";")[0].strip().lower()

    @property
    def charset(self) -> str:
        for param in self.headers.get("content-type", "").split(";")[1:]:
            key, _, value = param.partition("=")
            if key.strip().lower() == "charset":
                return value.strip().strip('"') or "utf-8"
        return "utf-8"

    @property
    def text(self) -> str:
        try:
            return self.body.decode(self.charset, errors="replace")
        except LookupError:  # an unknown charset name
            return self.body.decode("utf-8", errors="replace")

    def json(self) -> Any:
        return jsonlib.loads(self.body)

    def __repr__(self) -> str:
        return f"<TestResponse {self.status} {self.reason}>"


class _Cookie:
    __slots__ = ("name", "value", "path", "expires")

    def __init__(self, name: str, value: str, path: str, expires: float | None):
        self.name, self.value, self.path, self.expires = name, value, path, expires


def _default_path(request_path: str) -> str:
    # RFC 6265 §5.1.4: the directory of the request path.
    if not request_path.startswith("/") or request_path.count("/") == 1:
        return "/"
    return request_path[: request_path.rfind("/")]


def _path_matches(request_path: str, cookie_path: str) -> bool:
    if request_path == cookie_path:
        return True
    if request_path.startswith(cookie_path):
        return cookie_path.endswith("/") or request_path[len(cookie_path)] == "/"
    return False


class Client:
    """An HTTP/1.1 client for one server (``base_url``), with keep-alive and cookies.

    >>> client = Client("http://127.0.0.1:8000")       # doctest: +SKIP
    >>> client.get("/", params={"q": "trio"}).status    # doctest: +SKIP
    200
    """

    def __init__(self, base_url: str, *, timeout: float = 30.0):
        parts = urlsplit(base_url)
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError(f"Client needs an http:// URL with a host, got {base_url!r}")
        self.base_url = base_url.rstrip("/")
        self.host = parts.hostname
        self.port = parts.port or 80
        self._prefix = parts.path.rstrip("/")
        self.timeout = timeout
        self._conn: http.client.HTTPConnection | None = None
        self._jar: dict[tuple[str, str], _Cookie] = {}
        self.connections_opened = 0
        """How many TCP connections this client has opened (1 while keep-alive works)."""

    # -- the verbs --

    def get(
        self,
        path: str,
        *,
        headers: Mapping[str, str] | None = None,
        params: Mapping[str, Any] | None = None,
    ) -> TestResponse:
        if params:
            path += ("&" if "?" in path else "?") + urlencode(params, doseq=True)
        return self.request("GET", path, headers=headers)

    def head(self, path: str, *, headers: Mapping[str, str] | None = None) -> TestResponse:
        return self.request("HEAD", path, headers=headers)

    def post(
        self,
        path: str,
        data: Mapping[str, Any] | bytes | str | None = None,
        *,
        headers: Mapping[str, str] | None = None,
        json: Any = None,
    ) -> TestResponse:
        """POST ``data``: a dict is form-encoded (``application/x-www-form-urlencoded``),
        ``str`` is sent as UTF-8 text, ``bytes`` as they are; or ``json=`` any JSON value."""
        content_type: str | None = None
        body: bytes
        if json is not None:
            body, content_type = jsonlib.dumps(json).encode(), "application/json"
        elif data is None:
            body = b""
        elif isinstance(data, bytes):
            body = data
        elif isinstance(data, str):
            body, content_type = data.encode(), "text/plain; charset=utf-8"
        else:
            body, content_type = (
                urlencode(data, doseq=True).encode(),
                "application/x-www-form-urlencoded",
            )
        merged = dict(headers or {})
        if content_type and not any(k.lower() == "content-type" for k in merged):
            merged["Content-Type"] = content_type
        return self.request("POST", path, body=body, headers=merged)

    def request(
        self,
        method: str,
        path: str,
        *,
        body: bytes | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> TestResponse:
        """Send one request and read the whole response."""
        if not path.startswith("/"):
            raise ValueError(f"path must start with '/', got {path!r}")
        target = self._prefix + path
        send_headers = dict(headers or {})
        if not any(k.lower() == "cookie" for k in send_headers):
            cookie = self._cookie_header(urlsplit(target).path)
            if cookie:
                send_headers["Cookie"] = cookie
        if body is not None and method in ("GET", "HEAD") and not body:
            body = None
        response = self._exchange(method, target, body, send_headers)
        self._store_cookies(urlsplit(target).path, response.headers.get_all("set-cookie"))
        return response

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- cookies --

    @property
    def cookies(self) -> dict[str, str]:
        """The cookies the client holds, ``{name: value}`` (the longest path wins)."""
        now = time.time()
        found: dict[str, str] = {}
        for cookie in sorted(self._jar.values(), key=lambda c: len(c.path)):
            if cookie.expires is None or cookie.expires > now:
                found[cookie.name] = cookie.value
        return found

    def _cookie_header(self, path: str) -> str:
        now = time.time()
        matching = [
            c
            for c in self._jar.values()
            if _path_matches(path, c.path) and (c.expires is None or c.expires > now)
        ]
        matching.sort(key=lambda c: -len(c.path))  # RFC 6265 §5.4: longer paths first
        return "; ".join(f"{c.name}={c.value}" for c in matching)

    def _store_cookies(self, request_path: str, set_cookies: list[str]) -> None:
        for line in set_cookies:
            pair, *attributes = line.split(";")
            name, eq, value = pair.partition("=")
            name, value = name.strip(), value.strip()
            if not eq or not name:
                continue  # RFC 6265 §5.2: ignore a cookie without a name=value pair
            path = _default_path(request_path)
            expires: float | None = None
            max_age_seen = False
            for attribute in attributes:
                key, _, attr_value = attribute.partition("=")
                key, attr_value = key.strip().lower(), attr_value.strip()
                if key == "path" and attr_value.startswith("/"):
                    path = attr_value
                elif key == "max-age":
                    try:
                        expires = time.time() + int(attr_value)
                        max_age_seen = True  # Max-Age wins over Expires (§5.3 step 3)
                    except ValueError:
                        pass
                elif key == "expires" and not max_age_seen:
                    try:
                        expires = parsedate_to_datetime(attr_value).timestamp()
                    except (TypeError, ValueError):
                        pass
            if expires is not None and expires <= time.time():
                self._jar.pop((name, path), None)
            else:
                self._jar[(name, path)] = _Cookie(name, value, path, expires)

    # -- the wire --

    def _connect(self) -> http.client.HTTPConnection:
        conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
        conn.connect()
        self.connections_opened += 1
        self._conn = conn
        return conn

    def _exchange(
        self, method: str, target: str, body: bytes | None, headers: dict[str, str]
    ) -> TestResponse:
        reused = self._conn is not None
        conn = self._conn or self._connect()
        try:
            return self._send(conn, method, target, body, headers)
        except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
            # The server closed the idle keep-alive connection before our request reached
            # it (its keep-alive timeout, a shutdown): nothing was processed, so try once
            # more on a fresh connection. A fresh connection failing is a real error.
            self.close()
            if not reused:
                raise
            return self._send(self._connect(), method, target, body, headers)

    def _send(
        self,
        conn: http.client.HTTPConnection,
        method: str,
        target: str,
        body: bytes | None,
        headers: dict[str, str],
    ) -> TestResponse:
        try:
            conn.request(method, target, body=body, headers=headers)
            raw = conn.getresponse()
            data = raw.read()
        except BaseException:
            self.close()
            raise
        if raw.will_close:
            self.close()
        return TestResponse(raw.status, raw.reason, Headers(raw.getheaders()), data)


# --- running a server in the background ---------------------------------------------------


class _ServerThread:
    """A pyweb Server in its own thread and trio run (so the caller may block freely)."""

    def __init__(self, server: Any):
        self.server = server
        self.token: trio.lowlevel.TrioToken | None = None
        self.error: BaseException | None = None
        self.ready = threading.Event()
        self.thread = threading.Thread(target=self._main, name="pyweb-testing-server", daemon=True)

    def _main(self) -> None:
        async def run() -> None:
            self.token = trio.lowlevel.current_trio_token()
            async with trio.open_nursery() as nursery:
                await nursery.start(self.server.serve)
                self.ready.set()

        try:
            trio.run(run)
        except BaseException as exc:  # handed to the caller's thread by stop()/start()
            self.error = exc
        finally:
            self.ready.set()

    def start(self, timeout: float) -> None:
        self.thread.start()
        if not self.ready.wait(timeout):
            raise TimeoutError(f"the pyweb server did not start listening within {timeout} s")
        self._raise_crash()

    def stop(self, timeout: float) -> None:
        if self.thread.is_alive() and self.token is not None:
            try:
                trio.from_thread.run_sync(self.server.shutdown, trio_token=self.token)
            except trio.RunFinishedError:
                pass  # it already stopped (crashed): the error is reported below
        self.thread.join(timeout)
        if self.thread.is_alive():
            raise TimeoutError(f"the pyweb server did not shut down within {timeout} s")
        self._raise_crash()

    def _raise_crash(self) -> None:
        if self.error is not None:
            error, self.error = self.error, None
            # Nurseries wrap errors in groups; one error is easier to read (and to catch).
            while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
                error = error.exceptions[0]
            raise error


@contextmanager
def serve(target: Any, *, timeout: float = 30.0, **config: Any) -> Iterator[Client]:
    """Run a real pyweb server for the ``with`` block and yield a :class:`Client` for it.

    ``target`` is a directory (served as a site) or an async handler
    ``async def handler(ctx) -> Response``. Keywords override
    :class:`~pyweb.server.ServerConfig` fields (``scheduler="pool"``, ``dev=True``, ...).
    The client's ``server`` attribute is the :class:`~pyweb.server.Server`.
    """
    from pyweb.server import Server, ServerConfig

    options: dict[str, Any] = {"host": "127.0.0.1", "port": 0, "access_log": None}
    handler = None
    if callable(target):
        handler = target
    else:
        options["site_dir"] = str(target)
    options.update(config)
    server_config = ServerConfig(**options)
    if handler is None:
        from pyweb.app.site import Site

        handler = Site(str(target), dev=server_config.dev, page_timeout=server_config.page_timeout)
    server = Server(server_config, handler)
    runner = _ServerThread(server)
    runner.start(timeout)
    host = options["host"]
    client = Client(
        f"http://[{host}]:{server.port}" if ":" in host else f"http://{host}:{server.port}"
    )
    client.server = server  # type: ignore[attr-defined]
    try:
        yield client
    finally:
        client.close()
        runner.stop(timeout)
