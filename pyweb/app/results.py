"""What a page or a service gives back, turned into a :class:`~pyweb.protocol.response.Response`.

SMLserver's ``Ns.Conn.return`` takes a string or a quotation and sends it as ``text/html``
(§2, §2.3); Hop's "Response" stage wraps whatever a service returns into a response object
(§2.2: a string, an HTML tree, a file). pyweb accepts the same family, so a student can
return the most natural thing:

========================================  ==========================================
value                                      sent as
========================================  ==========================================
``str``                                    UTF-8 text, ``text/html`` by default
a :class:`~pyweb.quot.Quot`, an HTML node  its HTML (anything with ``__html__``)
``bytes``                                  as is
``dict`` / ``list``                        JSON, ``application/json``
an async iterator of ``str``/``bytes``     streamed (chunked on HTTP/1.1, Hop §3.2)
a :class:`Response`                        unchanged
========================================  ==========================================

Anything else is a :class:`TypeError` naming the type, never a silent ``str()``.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import AsyncIterable, AsyncIterator

import pyweb_regions
from pyweb.protocol.response import Fragments, Response

from .unawaited import coroutine_message

__all__ = ["HTML", "to_response", "encode_body"]

HTML = "text/html; charset=utf-8"
JSON = "application/json"


async def _encode_stream(parts: AsyncIterable[str | bytes]) -> AsyncIterator[bytes]:
    try:
        async for part in parts:
            if isinstance(part, str):
                yield part.encode("utf-8")
            elif isinstance(part, bytes | bytearray | memoryview):
                yield bytes(part)
            elif hasattr(part, "__html__"):
                yield part.__html__().encode("utf-8")
            else:
                raise TypeError(
                    f"a streamed body yields str or bytes, not {type(part).__name__}: {part!r:.60}"
                )
    finally:
        # Closed by the server (a client gone): close the page's generator now, so its
        # cleanup runs while the page's names are there (pages.ScopedStream).
        aclose = getattr(parts, "aclose", None)  # (an async generator's: the page's)
        if aclose is not None:
            await aclose()


def _json_default(value: object) -> object:
    """json.dumps calls this for what JSON cannot hold: name a forgotten await plainly."""
    if inspect.iscoroutine(value):
        raise TypeError(coroutine_message(value))
    raise TypeError(f"cannot send a {type(value).__name__} as JSON: {value!r:.60}")


def encode_body(
    value: object,
) -> tuple[bytes | Fragments | AsyncIterable[bytes], str | None]:
    """``(body, default content type)`` for a returned value (see the module's table).
    A Quot or an HTML node becomes :class:`Fragments`: its rendering's pieces, not joined,
    which the server writes straight into its reply arena (Hop §3.1)."""
    if isinstance(value, str):
        return value.encode("utf-8"), HTML
    if isinstance(value, bytes):  # before the getattr below: a missing attribute is costly
        return value, HTML
    html_parts = getattr(value, "html_parts", None)
    if html_parts is not None and hasattr(value, "__html__"):
        parts = html_parts()
        return Fragments(parts, pyweb_regions.utf8_length(parts)), HTML
    if isinstance(value, bytearray | memoryview):
        return bytes(value), HTML
    encode = getattr(value, "encode", None)
    if encode is not None and hasattr(value, "__html__"):
        return encode(), HTML  # an HTML node renders straight to bytes
    if hasattr(value, "__html__"):
        return value.__html__().encode("utf-8"), HTML
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False, default=_json_default).encode("utf-8"), JSON
    if isinstance(value, AsyncIterable):
        return _encode_stream(value), HTML
    if inspect.iscoroutine(value):  # a forgotten await: say so, not "cannot send a coroutine"
        raise TypeError(coroutine_message(value))
    raise TypeError(
        f"cannot send a {type(value).__name__} as a page: return a str, bytes, a Quot, "
        f"an HTML node, a dict/list (JSON), an async iterator or a Response (got {value!r:.60})"
    )


def to_response(
    value: object,
    status: int = 200,
    content_type: str | None = None,
    headers: list[tuple[str, str]] | None = None,
) -> Response:
    """A :class:`Response` for ``value`` (a Response is returned as it is)."""
    kind = value.__class__
    if kind is bytes:  # the usual answers first, without encode_body's call and tuple
        body: bytes | Fragments | AsyncIterable[bytes] = value  # type: ignore[assignment]
        default_type: str | None = HTML
    elif kind is str:
        body, default_type = value.encode("utf-8"), HTML  # type: ignore[attr-defined]
    elif isinstance(value, Response):
        return value
    else:
        body, default_type = encode_body(value)
    fields = [("Content-Type", content_type or default_type or HTML)]
    if headers:
        fields.extend(headers)
    return Response(status, fields, body)
