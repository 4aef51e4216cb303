"""Method rules: a route answers only the methods it takes (RFC 9110 §15.5.6).

A service names its methods (``@service("/items", methods=["POST"])``); a static file takes
GET and HEAD; a page that changes something says ``conn.require_method("POST")`` (it needs
its ``conn`` first, so that rule is the page's own). Any other method is answered 405 with
``Allow`` before anything else runs: no body read, no session loaded.
"""

from __future__ import annotations

from typing import Any

from pyweb.protocol.response import Response

__all__ = ["before", "after"]


def before(site: Any, method: str, allowed: tuple[str, ...] | None) -> Response | None:
    """A 405 when ``method`` is not one of ``allowed`` (None: the route takes any)."""
    if allowed is None or method in allowed:
        return None
    return site._not_allowed(method, ", ".join(allowed))


def after() -> None:
    """Nothing to do after the page."""
