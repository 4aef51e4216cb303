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
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from .csrf import matches
from .results import to_response

__all__ = ["Trap", "trap"]


class Trap:
    """A function registered to run before the requests whose path matches ``pattern``."""

    def __init__(self, pattern: str, func: Callable[..., Any]) -> None:
        if not isinstance(pattern, str) or not pattern.startswith("/"):
            raise ValueError(f"a trap's pattern starts with '/', got {pattern!r}")
        self.pattern = pattern
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
        return matches(self.pattern, path)

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
