"""Content codings: which coding a client accepts, which bodies are worth compressing, and
the gzip and brotli encoders (RFC 9110 §8.4 and §12.5.3, RFC 1952, RFC 7932).

The compression guard (:mod:`pyweb.app.guards.compress`) and the static files
(:mod:`pyweb.app.static`, for precompressed ``.br``/``.gz`` files) decide with these
functions, so a page and a file are negotiated by one rule:

* :func:`accepted`: the codings a request's ``Accept-Encoding`` allows, best first
  (its q-values; on a tie the server's order, brotli before gzip, since it is smaller);
* :func:`compressible`: an allow-list of media types that shrink (text, scripts, JSON,
  XML, SVG, WebAssembly, fonts without their own compression); images, video, archives,
  PDF and ``woff2`` are compressed already and are sent as they are;
* :func:`encode`: the bytes in one coding, at a level that is cheap enough to run per
  response (docs/performance.md has the cost per size);
* :func:`coded_etag` and :func:`add_vary`: each coding of a resource is its own
  representation, so it has its own ``ETag``, and a cache must key the answer by the
  request's ``Accept-Encoding`` (``Vary``).

Brotli needs the ``brotli`` package (the ``compress`` extra); without it only gzip is made
on the fly, and a precompressed ``.br`` file is still served.
"""

from __future__ import annotations

import gzip
from typing import Any

__all__ = [
    "CODINGS",
    "ENCODERS",
    "accepted",
    "compressible",
    "encode",
    "coded_etag",
    "uncoded_etag",
    "add_vary",
    "GZIP_LEVEL",
    "BROTLI_QUALITY",
]

brotli: Any
try:
    import brotli  # type: ignore[no-redef]
except ImportError:  # pragma: no cover - the compress extra is part of dev
    brotli = None

CODINGS = ("br", "gzip")
"""Every coding pyweb knows, in its order of preference (the smaller output first)."""
ENCODERS = CODINGS if brotli is not None else ("gzip",)
"""The codings this process can make on the fly."""
SUFFIXES = {"br": ".br", "gzip": ".gz"}
"""The file suffix of a precompressed static file in each coding (``style.css.br``)."""

GZIP_LEVEL = 6
"""zlib's default: most of level 9's gain at a third of its cost."""
BROTLI_QUALITY = 2
"""Brotli's quality 2: in the server, cheaper than gzip 6 at every size measured (1 KiB to
100 KiB) and a third to a half smaller. Quality 4 costs about 170 µs more per call (its
encoder's table is big enough to be mapped and unmapped on every call under the server's
malloc setting, :func:`pyweb.server.budget.give_big_buffers_back`); 11, the package's
default, belongs to files compressed once, ahead of time (docs/performance.md)."""

# Media types that shrink, besides every text/* type. An allow-list: a type nobody
# listed (image/png, application/zip, font/woff2) is already compressed or unknown.
_COMPRESSIBLE = frozenset((
    "application/javascript", "application/json", "application/xml", "application/xhtml+xml",
    "application/rss+xml", "application/atom+xml", "application/ld+json",
    "application/manifest+json", "application/wasm", "application/x-ipynb+json",
    "application/problem+json", "image/svg+xml", "image/x-icon", "font/ttf", "font/otf",
))  # fmt: skip

_accepted_cache: dict[str, tuple[str, ...]] = {}


def compressible(content_type: str | None) -> bool:
    """Whether a body of ``content_type`` (a ``Content-Type`` value) is worth compressing."""
    if not content_type:
        return False
    media = content_type.split(";", 1)[0].strip().lower()
    return media.startswith("text/") or media in _COMPRESSIBLE


def accepted(accept_encoding: str | None) -> tuple[str, ...]:
    """The codings of :data:`CODINGS` that ``accept_encoding`` allows, best first; ``()``
    for none (no header, ``identity`` only, or every coding refused with ``q=0``).

    >>> accepted("gzip, deflate, br")
    ('br', 'gzip')
    >>> accepted("gzip;q=1, br;q=0.5")
    ('gzip', 'br')
    >>> accepted("*;q=0, gzip")
    ('gzip',)
    """
    if not accept_encoding:
        return ()
    found = _accepted_cache.get(accept_encoding)
    if found is None:
        found = _parse(accept_encoding)
        if len(_accepted_cache) >= 256:  # bounded: the header is the client's to choose
            _accepted_cache.clear()
        _accepted_cache[accept_encoding] = found
    return found


def _parse(value: str) -> tuple[str, ...]:
    weights: dict[str, float] = {}
    for item in value.split(","):
        name, _, params = item.partition(";")
        name = name.strip().lower()
        if name == "x-gzip":  # RFC 9110 §8.4.1.3: the same coding
            name = "gzip"
        weights[name] = _q(params)
    star = weights.get("*", 0.0)
    ranked = [(weights.get(coding, star), -i, coding) for i, coding in enumerate(CODINGS)]
    return tuple(coding for q, _, coding in sorted(ranked, reverse=True) if q > 0)


def _q(params: str) -> float:
    """The q-value of one ``Accept-Encoding`` item's parameters (1 when absent or bad)."""
    for param in params.split(";"):
        key, _, number = param.partition("=")
        if key.strip().lower() == "q":
            try:
                q = float(number.strip())
            except ValueError:
                return 1.0
            return q if 0.0 <= q <= 1.0 else 1.0
    return 1.0


def encode(data: bytes, coding: str) -> bytes:
    """``data`` in ``coding`` (``"br"`` or ``"gzip"``). The gzip header carries no time,
    so the same bytes always give the same output (an ETag may name it)."""
    if coding == "gzip":
        return gzip.compress(data, GZIP_LEVEL, mtime=0)
    if coding == "br" and brotli is not None:
        # A window no larger than the body: brotli's default (4 MiB) is allocated and
        # cleared on every call, which costs more than compressing a small page.
        window = max(10, min(22, (len(data) - 1).bit_length()))
        return brotli.compress(data, quality=BROTLI_QUALITY, lgwin=window)
    raise ValueError(f"cannot encode in {coding!r}: this process makes {', '.join(ENCODERS)}")


def coded_etag(etag: str, coding: str) -> str:
    """The ETag of ``coding``'s representation: ``"abc"`` → ``"abc-br"`` (weak stays weak)."""
    if etag.endswith('"'):
        return f'{etag[:-1]}-{coding}"'
    return etag


def uncoded_etag(etag: str) -> tuple[str, str | None]:
    """``(the identity ETag, the coding)`` of a tag :func:`coded_etag` made, or
    ``(etag, None)`` for any other tag."""
    for coding in CODINGS:
        end = f'-{coding}"'
        if etag.endswith(end):
            return etag[: -len(end)] + '"', coding
    return etag, None


def add_vary(fields: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """``fields`` with ``Accept-Encoding`` among the ``Vary`` names (a new list)."""
    out = []
    done = False
    for name, value in fields:
        if name.lower() == "vary":
            names = {n.strip().lower() for n in value.split(",")}
            if "accept-encoding" not in names and "*" not in names:
                value = f"{value}, Accept-Encoding"
            done = True
        out.append((name, value))
    if not done:
        out.append(("Vary", "Accept-Encoding"))
    return out
