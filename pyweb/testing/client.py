"""An HTTP/1.1 client for tests and notebooks: keep-alive, a cookie jar, whole responses.

:class:`Client` keeps one keep-alive connection (reconnecting when the server closed it)
and a small cookie jar: cookies set by responses go back on later requests whose path
matches (RFC 6265 §5.1.4, §5.3; ``Max-Age``/``Expires`` in the past delete a cookie;
``Domain`` is ignored since a client talks to one host). :func:`pyweb.testing.serve`
hands one out for the server it starts; talk to a server that is already running with::

    client = pyweb.testing.Client("http://127.0.0.1:8000")
    client.get("/").status
"""

from __future__ import annotations

import html
import http.client
import json as jsonlib
import re
import time
from collections.abc import Iterable, Iterator, Mapping
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import urlencode, urlsplit

__all__ = ["Client", "TestResponse", "Headers", "csrf_token_in", "CSRF_FIELD", "CSRF_HEADER"]

CSRF_FIELD = "csrf_token"
"""The form field that carries a site's CSRF token (pyweb's sessions)."""
CSRF_HEADER = "X-CSRF-Token"
"""The header that may carry it instead (for requests that are not forms)."""

# <input ... name="csrf_token" ... value="..."> with the attributes in either order.
_INPUT = re.compile(r"<input\b[^>]*>", re.IGNORECASE)
_ATTR = re.compile(r"""([a-zA-Z_:-]+)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))""")


def csrf_token_in(page: str) -> str | None:
    """The value of the first ``<input name="csrf_token">`` in ``page``, or None."""
    if CSRF_FIELD not in page:
        return None
    for tag in _INPUT.findall(page):
        attrs = {m[0].lower(): m[1] or m[2] or m[3] for m in _ATTR.findall(tag)}
        if attrs.get("name") == CSRF_FIELD and "value" in attrs:
            return html.unescape(attrs["value"])
    return None


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
        self.last_csrf_token: str | None = None
        """The CSRF token of the last HTML form received (see :meth:`post`)."""

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
        csrf: bool = False,
    ) -> TestResponse:
        """POST ``data``: a dict is form-encoded (``application/x-www-form-urlencoded``),
        ``str`` is sent as UTF-8 text, ``bytes`` as they are; or ``json=`` any JSON value.

        ``csrf=True``: send the CSRF token of the last form the client saw
        (``<input name="csrf_token">``; if none yet, it first GETs ``/``), as the
        ``csrf_token`` field of a dict and as the ``X-CSRF-Token`` header, as a browser
        submitting that form would. By default nothing is added: a test sees exactly what
        it sends (a POST without a token is refused by a site with CSRF on)."""
        if csrf and self.last_csrf_token is None:
            self.csrf_token("/")
        token = self.last_csrf_token if csrf else None
        if token is not None:
            headers = {CSRF_HEADER: token, **(headers or {})}
            if isinstance(data, Mapping) and CSRF_FIELD not in data:
                data = {**data, CSRF_FIELD: token}
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
        if "html" in response.content_type:
            self.last_csrf_token = csrf_token_in(response.text) or self.last_csrf_token
        return response

    def csrf_token(self, path: str = "/") -> str | None:
        """GET ``path`` and return the CSRF token of its form (the value of the hidden
        ``<input name="csrf_token">``), or None; later POSTs send it."""
        self.get(path)
        return self.last_csrf_token

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
