"""Traps: code run before every page, service or file under a URL pattern (SMLserver's
``registerTrap``, Flask's ``before_request``).

SMLserver lets a site register a script to run before the requests matching a pattern,
which is how a whole folder gets a login check without touching each page. pyweb's traps
are functions in a service module::

    import pyweb
    from pyweb import auth

    @pyweb.trap("/admin/*")
    def members_only(conn):
        auth.require_login()            # a stranger is sent to /login; the page never runs

A trap is called like a service (a parameter named ``conn`` gets the request; ``def`` or
``async def``) before the page, service or static file, in registration order (files in
the order ``pyweb check`` lists them, then top to bottom). It *answers* (``conn.redirect``,
``conn.return_(..., status=403)``, returning a value) and nothing else runs, or it lets the
request through by returning ``None`` without answering. Patterns: ``*`` matches anything,
``/`` included; ``/admin/*`` also matches ``/admin``.

**One URL per page.** A page has many spellings: ``/admin``, ``/admin.py``, ``/admin%2Epy``,
``/ADMIN``, ``/x/../admin``, ``//admin``. A trap is matched against :func:`canonical`, the
one spelling they all come down to (percent-decoded, dot segments and empty segments
removed, lower case, without the ``.py`` alias), so no spelling of a guarded path reaches a
page without its trap. (The site also answers the ``.py`` alias of a page with a redirect to
its URL without ``.py``: docs/routing.md.)
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from .csrf import matches
from .results import to_response

__all__ = ["Trap", "trap", "canonical"]


def canonical(decoded: str) -> str:
    """The one spelling of a (percent-decoded) path that traps are matched against:
    ``/Admin/./x/../index.py`` → ``/admin/index``. Dot segments are resolved as RFC 3986
    §5.2.4 does, empty segments dropped, letters lowered (a case-insensitive file system
    serves ``/ADMIN.py`` too) and the ``.py`` alias dropped. A trailing ``/`` stays
    (``/admin/`` is the folder's index)."""
    segments: list[str] = []
    for segment in decoded.split("/"):
        if segment == "..":
            if segments:
                segments.pop()
        elif segment and segment != ".":
            segments.append(segment)
    text = "/" + "/".join(segments).lower()
    if text.endswith(".py"):
        text = text[:-3]
    if decoded.endswith(("/", "/.", "/..")) and not text.endswith("/"):
        text += "/"
    return text


class Trap:
    """A function registered to run before the requests whose path matches ``pattern``."""

    def __init__(self, pattern: str, func: Callable[..., Any]) -> None:
        if not isinstance(pattern, str) or not pattern.startswith("/"):
            raise ValueError(f"a trap's pattern starts with '/', got {pattern!r}")
        self.pattern = pattern
        self._canonical = pattern.lower()  # matched against canonical() paths
        self.func = func
        params = inspect.signature(func).parameters
        others = [name for name in params if name != "conn"]
        if others:
            raise TypeError(f"trap {func.__qualname__} takes only a 'conn' parameter, not {others}")
        self.wants_conn = "conn" in params
        self.__name__ = func.__name__
        self.__doc__ = func.__doc__
        self.__wrapped__ = func

    def applies(self, path: str) -> bool:
        """Whether the trap runs for ``path`` (any spelling: it is made :func:`canonical`)."""
        return matches(self._canonical, canonical(path))

    def covers(self, canonical_path: str) -> bool:
        """:meth:`applies` for a path made :func:`canonical` already (once per request)."""
        return matches(self._canonical, canonical_path)

    async def run(self, conn: Any) -> None:
        """Call the trap; a value it returns becomes the response."""
        result = self.func(conn) if self.wants_conn else self.func()
        if inspect.isawaitable(result):
            result = await result
        if result is not None and conn.response is None:
            conn.response = to_response(result)

    def __repr__(self) -> str:
        return f"<trap {self.pattern} -> {self.func.__module__}.{self.func.__qualname__}>"


def trap(pattern: str) -> Callable[[Callable[..., Any]], Trap]:
    """Register the decorated function as a trap for ``pattern`` (see the module doc)."""

    def register(func: Callable[..., Any]) -> Trap:
        return Trap(pattern, func)

    return register
