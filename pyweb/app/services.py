"""Services: functions bound to URLs, their parameters typed form variables (Hop §2.1).

Hop's ``(define-service (hello) ...)`` binds a function to the URL ``/hop/hello``; calling the
URL calls the function with the request's arguments, and what it returns becomes the
response (an HTML tree, a string, a file). pyweb adds types: each annotated parameter is a
form variable parsed with the :mod:`pyweb.forms` getter for its type::

    from pyweb import service
    from pyweb.forms import Nat

    @service("/mul")
    async def mul(n: Nat, title: str | None = None):
        ...                      # n is an int from 0 to 2**31-1, title a str or None

``n: Nat`` is required: missing or invalid, the request gets one 400 page listing every bad
variable (``wrap_fail``'s page). ``x: T | None`` is the paper's ``wrapOpt``: ``None`` when
missing or invalid. A parameter with a default is optional but must be valid when given.
A parameter named ``conn`` receives the request's :class:`~pyweb.app.conn.Conn`.

A service module is a file in the site directory that defines services; it is imported once
when the site loads (not run per request, unlike a script). ``@service`` without a path binds
``/<function name>``. Annotations are checked at import, so a type pyweb cannot parse is
reported by ``pyweb check``, not by the first request.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from typing import Any

from pyweb import forms

from .results import to_response

__all__ = ["Service", "service", "DEFAULT_METHODS"]

DEFAULT_METHODS = ("GET", "HEAD", "POST")


class Service:
    """A function bound to a URL path; ``await svc.respond(conn)`` runs it for a request."""

    def __init__(self, func: Callable[..., Any], path: str, methods: Iterable[str]) -> None:
        if not path.startswith("/"):
            raise ValueError(f"a service path starts with '/', got {path!r} for {func.__name__}")
        self.func = func
        self.path = path
        self.methods = tuple(m.upper() for m in methods)
        self.wants_conn = "conn" in inspect.signature(func).parameters
        forms.check_signature(func)  # a TypeError naming the parameter, at import time
        self.__doc__ = func.__doc__
        self.__name__ = func.__name__
        self.__wrapped__ = func

    async def respond(self, conn: Any) -> None:
        """Parse the arguments from ``conn.form``, call the function, give its response."""
        kwargs = forms.parse_arguments(self.func, conn.form)  # FormErrors → one 400 page
        if self.wants_conn:
            kwargs["conn"] = conn
        result = self.func(**kwargs)
        if inspect.isawaitable(result):
            result = await result
        if result is None:
            return  # the service answered through conn.return_ (or will be a 500)
        if conn.response is not None:
            conn.return_(result)  # raises ResponseAlreadySent, naming the service
        conn.response = to_response(result)

    async def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the function directly (in a test or a notebook), bypassing HTTP."""
        result = self.func(*args, **kwargs)
        if inspect.isawaitable(result):
            result = await result
        return result

    def __repr__(self) -> str:
        return f"<service {self.path} -> {self.func.__module__}.{self.func.__qualname__}>"


def service(
    path: str | Callable[..., Any] | None = None, *, methods: Iterable[str] = DEFAULT_METHODS
) -> Any:
    """Bind a function to a URL: ``@service`` (at ``/<name>``) or ``@service("/path")``."""
    if callable(path):
        return Service(path, "/" + path.__name__, methods)

    def bind(func: Callable[..., Any]) -> Service:
        return Service(func, path if path is not None else "/" + func.__name__, methods)

    return bind
