"""Whether a client wants its errors as JSON or as an HTML page (RFC 9110 §12.5.1).

A program that calls a URL (a page's ``fetch``, a phone app, ``curl``) is not a browser,
and an HTML error page is noise to it. This module decides from two header values alone,
so every error answered anywhere is decided the same way: by the site's pages and services
(:func:`pyweb.app.apierrors.wants_json` asks here), by the server for the errors it answers
itself (a bad request, 413, 431), and by the ASGI adapter.

* :func:`prefers_json`: the request body is JSON (``Content-Type: application/json`` or a
  ``+json`` type), or ``Accept`` ranks JSON above HTML, with its ``q`` weights.
* :func:`prefers_html`: a browser. No ``Accept`` at all counts as one (a bare client keeps
  the HTML page); ``Accept: */*`` (``fetch``, ``curl``) does not.

Sans-IO like the rest of ``protocol/``: strings in, a bool out.
"""

from __future__ import annotations

__all__ = ["accept_weights", "prefers_json", "prefers_html", "is_json_type"]

_JSON_TYPES = ("application/json",)
_HTML_TYPES = ("text/html", "application/xhtml+xml")


def accept_weights(accept: str) -> dict[str, float]:
    """``Accept``'s media ranges and their weights: ``"text/html;q=0.8, */*"`` →
    ``{"text/html": 0.8, "*/*": 1.0}``. A malformed weight counts as 0 (not wanted)."""
    found: dict[str, float] = {}
    for item in accept.split(","):
        media, *params = item.split(";")
        media = media.strip().lower()
        if not media:
            continue
        weight = 1.0
        for param in params:
            key, _, value = param.partition("=")
            if key.strip().lower() == "q":
                try:
                    weight = float(value.strip())
                except ValueError:
                    weight = 0.0
                if not 0.0 <= weight <= 1.0:
                    weight = 0.0
        found[media] = max(weight, found.get(media, 0.0))
    return found


def is_json_type(content_type: str | None) -> bool:
    """Whether a ``Content-Type`` value names JSON (``application/json``, ``...+json``)."""
    mime = (content_type or "").split(";", 1)[0].strip().lower()
    return mime in _JSON_TYPES or mime.endswith("+json")


def _best(weights: dict[str, float], types: tuple[str, ...]) -> float:
    return max(weights.get(t, 0.0) for t in types)


def prefers_json(content_type: str | None, accept: str | None) -> bool:
    """Whether errors for a request with these ``Content-Type`` and ``Accept`` values
    should be JSON: a JSON body, or ``Accept`` ranks JSON (``+json`` types too) above HTML."""
    if is_json_type(content_type):
        return True
    if not accept:
        return False
    weights = accept_weights(accept)
    as_json = max(
        [_best(weights, _JSON_TYPES)] + [w for m, w in weights.items() if m.endswith("+json")]
    )
    return as_json > 0 and as_json > _best(weights, _HTML_TYPES)


def prefers_html(content_type: str | None, accept: str | None) -> bool:
    """Whether the client is a browser showing pages: no ``Accept`` at all, or one that
    names ``text/html`` (or XHTML) above JSON, and no JSON body."""
    if is_json_type(content_type):
        return False
    if not accept:
        return True
    html = _best(accept_weights(accept), _HTML_TYPES)
    return html > 0 and not prefers_json(content_type, accept)
