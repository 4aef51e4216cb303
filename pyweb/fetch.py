"""``fetch_url``: get a page from another web site, or ``None`` (SMLserver §3's
``Ns.fetchUrl``, which the currency exchange service uses to read a foreign rate).

An HTTP/1.1 client with h11 doing the protocol, on whichever loop the page runs (trio or
asyncio, through anyio's sockets and timeouts): one ``GET``, one connection
(``Connection: close``), and three limits so a foreign site can never hold a page hostage:

* ``timeout``: seconds for the whole exchange (connect, send, every byte of the answer);
* ``max_bytes``: the body may not be longer (checked against ``Content-Length`` and while
  reading, so an endless body is cut off);
* only a ``200 OK`` answer is a page.

As in the paper, any failure is ``None``, never an exception: the caller shows "not
available". The reason goes to the ``pyweb.fetch`` logger (the server's error log), since a
silent ``None`` would be impossible to debug. ``https`` URLs are fetched over TLS with the
system's certificates.
"""

from __future__ import annotations

import logging
import re
import ssl
from urllib.parse import urlsplit

import anyio
import h11
from anyio.abc import ByteStream

__all__ = ["fetch_url", "FetchError"]

log = logging.getLogger("pyweb.fetch")

_CHARSET = re.compile(rb"charset\s*=\s*\"?([A-Za-z0-9._-]+)", re.IGNORECASE)


class FetchError(Exception):
    """Why a fetch failed (logged, never raised by :func:`fetch_url`)."""


async def fetch_url(url: str, *, timeout: float = 10.0, max_bytes: int = 1 << 20) -> str | None:
    """The body of ``url`` as text, or ``None`` if it could not be fetched in ``timeout``
    seconds, was not ``200 OK``, or was longer than ``max_bytes``."""
    try:
        with anyio.fail_after(timeout):
            return await _fetch(url, max_bytes)
    except TimeoutError:
        log.warning("fetch_url %s: no complete answer in %g s", url, timeout)
    except FetchError as error:
        log.warning("fetch_url %s: %s", url, error)
    except (OSError, anyio.BrokenResourceError, h11.ProtocolError, UnicodeError) as error:
        log.warning("fetch_url %s: %s: %s", url, type(error).__name__, error)
    return None


def _target(url: str) -> tuple[str, str, int, str, bool]:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise FetchError(f"only http and https URLs can be fetched, not {parts.scheme!r}")
    if not parts.hostname:
        raise FetchError("the URL has no host")
    https = parts.scheme == "https"
    try:
        port = parts.port or (443 if https else 80)
    except ValueError as error:
        raise FetchError(f"bad port: {error}") from None
    host_header = parts.netloc.rsplit("@", 1)[-1]
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    return parts.hostname, host_header, port, path, https


async def _fetch(url: str, max_bytes: int) -> str:
    host, host_header, port, path, https = _target(url)
    stream: ByteStream
    if https:  # Connection: close, so the end of the body is the end of the stream
        stream = await anyio.connect_tcp(
            host, port, tls=True, ssl_context=ssl.create_default_context(),
            tls_standard_compatible=False,
        )  # fmt: skip
    else:
        stream = await anyio.connect_tcp(host, port)
    async with stream:
        client = h11.Connection(h11.CLIENT)
        request = h11.Request(
            method="GET",
            target=path,
            headers=[
                ("Host", host_header),
                ("User-Agent", "pyweb-fetch"),
                ("Accept", "*/*"),
                ("Connection", "close"),
            ],
        )
        await stream.send(client.send(request) + client.send(h11.EndOfMessage()))
        body = bytearray()
        response: h11.Response | None = None
        while True:
            event = client.next_event()
            if event is h11.NEED_DATA:
                try:
                    data = await stream.receive(65536)
                except anyio.EndOfStream:
                    data = b""  # h11 takes b"" as the end of the stream
                client.receive_data(data)
                continue
            if isinstance(event, h11.Response):
                response = event
                if response.status_code != 200:
                    raise FetchError(
                        f"answered {response.status_code} {response.reason.decode(errors='replace')}"
                    )
                for name, value in response.headers:
                    if name == b"content-length" and int(value) > max_bytes:
                        raise FetchError(
                            f"body of {int(value)} bytes, more than max_bytes={max_bytes}"
                        )
            elif isinstance(event, h11.Data):
                body += event.data
                if len(body) > max_bytes:
                    raise FetchError(f"body longer than max_bytes={max_bytes}")
            elif isinstance(event, h11.EndOfMessage):
                break
            elif isinstance(event, h11.ConnectionClosed):
                raise FetchError("the connection closed before the answer was complete")
        assert response is not None
        charset = "utf-8"
        for name, value in response.headers:
            if name == b"content-type":
                found = _CHARSET.search(value)
                if found:
                    charset = found.group(1).decode("ascii")
        try:
            return body.decode(charset, errors="replace")
        except LookupError:
            return body.decode("utf-8", errors="replace")
