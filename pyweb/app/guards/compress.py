"""Compression: the answer's body gzip- or brotli-encoded for a client that accepts it, on
the way out of every route (RFC 9110 §8.4, §12.5.3; :mod:`pyweb.app.compression` has
the rules it applies).

A ``200`` whose body is known (bytes, a page's fragments, a file) of at least
``compress_min_size`` bytes, of a type that shrinks (:func:`~pyweb.app.compression.compressible`),
is encoded in the best coding the request's ``Accept-Encoding`` names, gets
``Content-Encoding``, ``Vary: Accept-Encoding`` and its own ``ETag``, and loses
``Accept-Ranges`` (ranges are served on the file as it is, never compressed). The same
answer to a client that accepts no coding gets only the ``Vary``. Left as they are: any
other status (a ``206`` range, a ``304``, a WebSocket's ``101``), a stream, an answer
that has a ``Content-Encoding`` already (a precompressed file, a page's own), one marked
``Cache-Control: no-transform``, and anything smaller or of another type. A ``HEAD`` is
encoded like its ``GET``, so both heads say the same. The refusals the runner makes
before a page runs (a 405, a form's 400 or 413, CSRF's 403) are short and go as they are.

Cost: the runner decides on one line without a call for a small body (the usual page);
a body of :data:`THREAD_AT` bytes or more, and every file, is compressed in a worker
thread so the loop goes on serving, and a file's coding is kept (:class:`FileCodings`)
until the file changes (docs/performance.md has the measurement).
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Coroutine
from typing import Any

from pyweb import runtime
from pyweb.protocol.messages import Request
from pyweb.protocol.response import FileBody, Fragments, Response

from .. import compression

__all__ = ["before", "after", "THREAD_AT", "MAX_FILE", "FileCodings"]

THREAD_AT = 128 * 1024
"""A body this large is compressed in a worker thread: on the loop it would hold every
other connection for more than a millisecond (gzip takes about 1.5 ms per 128 KiB here)."""
MAX_FILE = 16 * 1024 * 1024
"""A larger static file is sent as it is unless a precompressed ``.br``/``.gz`` is beside it
(its coding would be held in memory)."""


def before() -> None:
    """Nothing to do before the page."""


def after(
    site: Any, request: Request, response: Response
) -> Response | Coroutine[Any, Any, Response]:
    """``response`` encoded for ``request`` (see the module doc), or as it is. A coroutine
    when the work goes to a worker thread (a large body, a file)."""
    body = response.body
    size = _size(body) if response.status == 200 else None
    if (
        size is None
        or size < site.compress_at  # (larger than any body with compression off)
        or not _may_encode(response.headers)
    ):
        return response
    coding = _coding(request.header("accept-encoding"))
    if coding is None:  # (a cache must still know the answer depends on the header)
        return Response(200, compression.add_vary(response.headers), body)
    if type(body) is FileBody:
        if size > MAX_FILE:
            return Response(200, compression.add_vary(response.headers), body)
        return _file_encoded(site.file_codings, response, body, coding)
    data = body if type(body) is bytes else bytes(body)  # type: ignore[arg-type]
    if size >= THREAD_AT:
        return _encoded_in_thread(response, data, coding)
    return _encoded(response, compression.encode(data, coding), coding)


def _size(body: object) -> int | None:
    """The length of a body that can be encoded whole; None for a stream or a range."""
    if type(body) is FileBody:
        return body.length if body.offset == 0 else None
    if type(body) is bytes or type(body) is Fragments:
        return len(body)
    return None


def _may_encode(fields: list[tuple[str, str]]) -> bool:
    """Whether an answer with these header fields may be encoded: a type that shrinks, no
    coding or range of its own, no ``Cache-Control: no-transform``."""
    content_type = None
    for name, value in fields:
        lower = name.lower()
        if lower == "content-type":
            content_type = value
        elif lower == "content-encoding" or lower == "content-range":
            return False
        elif lower == "cache-control" and "no-transform" in value.lower():
            return False
    return compression.compressible(content_type)


def _coding(accept_encoding: str | None) -> str | None:
    """The best coding the client accepts that this process can make."""
    for coding in compression.accepted(accept_encoding):
        if coding in compression.ENCODERS:
            return coding
    return None


def _encoded(response: Response, data: bytes, coding: str) -> Response:
    """A new Response (the page's own object may be shared) carrying ``data``."""
    fields = []
    for name, value in response.headers:
        lower = name.lower()
        if lower == "accept-ranges":
            continue  # a range of the encoded bytes is not one of the file's
        if lower == "etag":
            value = compression.coded_etag(value, coding)
        fields.append((name, value))
    fields.append(("Content-Encoding", coding))
    return Response(200, compression.add_vary(fields), data)


async def _encoded_in_thread(response: Response, data: bytes, coding: str) -> Response:
    encoded = await runtime.to_thread(compression.encode, data, coding)
    return _encoded(response, encoded, coding)


async def _file_encoded(
    codings: FileCodings, response: Response, body: FileBody, coding: str
) -> Response:
    encoded = codings.get(body.path, coding)
    if encoded is None:
        encoded = await runtime.to_thread(codings.make, body.path, body.length, coding)
    if encoded is None:  # the file changed under us: send what the head describes
        return response
    return _encoded(response, encoded, coding)


class FileCodings:
    """The codings of static files made on the fly, kept while the file is unchanged (its
    inode, size and modification time) and while they fit in ``max_bytes`` (the least
    recently used go first). Shared by the loop and the worker threads: one lock."""

    def __init__(self, max_bytes: int = 64 * 1024 * 1024) -> None:
        self.max_bytes = max_bytes
        self._held = 0
        self._lock = threading.Lock()
        self._items: OrderedDict[tuple[str, str], tuple[tuple[int, int, int], bytes]] = (
            OrderedDict()
        )

    def get(self, path: str, coding: str) -> bytes | None:
        """The kept coding of the file at ``path`` if the file has not changed since."""
        key = (path, coding)
        with self._lock:
            item = self._items.get(key)
        if item is None:
            return None
        try:
            st = os.stat(path)
        except OSError:
            return None
        if item[0] != (st.st_ino, st.st_size, st.st_mtime_ns):
            return None
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
        return item[1]

    def make(self, path: str, length: int, coding: str) -> bytes | None:
        """Read and encode the file (in a worker thread) and keep the result; None when the
        file is no longer ``length`` bytes long (it changed after its head was made)."""
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            data = f.read()
        if len(data) != length or st.st_size != length:
            return None
        encoded = compression.encode(data, coding)
        self._keep((path, coding), (st.st_ino, st.st_size, st.st_mtime_ns), encoded)
        return encoded

    def _keep(self, key: tuple[str, str], version: tuple[int, int, int], data: bytes) -> None:
        if len(data) > self.max_bytes:
            return
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._held -= len(old[1])
            self._items[key] = (version, data)
            self._held += len(data)
            while self._held > self.max_bytes:
                _, (_, dropped) = self._items.popitem(last=False)
                self._held -= len(dropped)
