"""CORS policies: which other origins a browser may let read this site's answers.

A browser runs a page from ``https://shop.example`` and lets its scripts ``fetch`` from
``https://api.example`` only if the answer says so (the Fetch standard's CORS protocol):
``Access-Control-Allow-Origin`` names the page's origin. For a request that is not
"simple" (a ``PUT``, a JSON body, an ``Authorization`` header) the browser first asks with
a *preflight*, an ``OPTIONS`` request naming the method and the headers it wants to send,
and sends the real request only if the preflight's answer allows them.

A :class:`CORS` object is a policy: the origins let in, the methods and request headers
they may use, whether credentials (cookies) go along, how long a browser may remember a
preflight's answer. A site gets one from its settings (``cors_origins`` ...), a service
its own with ``@service(..., cors=CORS(...))``; without one, nothing is allowed, and the
browser keeps other origins out. The guard :mod:`pyweb.app.guards.cors` applies it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

__all__ = ["CORS", "SIMPLE_METHODS"]

SIMPLE_METHODS = ("GET", "HEAD", "POST")
"""The methods a policy allows when it names none (a browser sends them without asking
first, unless they carry a header or a body type it must ask about)."""

_TOKEN = frozenset("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyz")


@dataclass(frozen=True)
class CORS:
    """A CORS policy (see the module doc). ``CORS()`` allows no origin: a service that
    must not be read from another origin even though the site allows some.

    * ``origins``: ``"https://app.example"`` (scheme, host and port, no path), or ``"*"``
      for any origin (never with ``credentials``: a browser refuses that, and it would let
      every site read a visitor's own data);
    * ``methods``: the methods another origin may use; by default the route's own (a
      service's ``methods``), else GET, HEAD and POST;
    * ``headers``: the request headers it may send beyond the ones a browser always may
      (``Content-Type: application/json`` and ``Authorization`` must be named);
    * ``expose``: response headers its scripts may read beyond the basic ones;
    * ``credentials``: cookies and HTTP authentication go along, and the answer may be read;
    * ``max_age``: seconds a browser may keep a preflight's answer (None: its default).

    A bad value is a ``ValueError`` naming it."""

    origins: tuple[str, ...] = ()
    methods: tuple[str, ...] | None = None
    headers: tuple[str, ...] = ()
    expose: tuple[str, ...] = ()
    credentials: bool = False
    max_age: int | None = None
    any_origin: bool = field(init=False)
    """``origins`` is ``("*",)``: the answer is the same for every origin."""

    def __init__(
        self,
        origins: Iterable[str] = (),
        *,
        methods: Iterable[str] | None = None,
        headers: Iterable[str] = (),
        expose: Iterable[str] = (),
        credentials: bool = False,
        max_age: int | None = None,
    ) -> None:
        found = tuple(_origin(o) for o in _names("origins", origins))
        if "*" in found and len(found) > 1:
            raise ValueError(f"CORS origins: '*' means any origin; list it alone, got {found!r}")
        if not isinstance(credentials, bool):
            raise ValueError(f"CORS credentials is True or False, got {credentials!r}")
        if credentials and found == ("*",):
            raise ValueError(
                "CORS credentials=True with origins '*' would let every site read a visitor's "
                "own data (and browsers refuse it): list the origins"
            )
        if max_age is not None and (
            isinstance(max_age, bool) or not isinstance(max_age, int) or max_age < 0
        ):
            raise ValueError(
                f"CORS max_age is a whole number of seconds, 0 or more, got {max_age!r}"
            )
        set_ = object.__setattr__  # (a frozen dataclass with its own __init__)
        set_(self, "origins", found)
        set_(self, "methods", None if methods is None else _methods(methods))
        set_(self, "headers", tuple(_header(h, credentials) for h in _names("headers", headers)))
        set_(self, "expose", tuple(_header(h, credentials) for h in _names("expose", expose)))
        set_(self, "credentials", credentials)
        set_(self, "max_age", max_age)
        set_(self, "any_origin", found == ("*",))

    def allows_origin(self, origin: str) -> bool:
        """Whether ``origin`` (a request's ``Origin`` field) is let in."""
        return self.any_origin or origin in self.origins

    def methods_for(self, route_methods: tuple[str, ...] | None) -> tuple[str, ...]:
        """The methods another origin may use on a route answering ``route_methods``
        (None: any): the policy's own (those the route answers), else the route's."""
        if self.methods is None:
            return route_methods if route_methods is not None else SIMPLE_METHODS
        if route_methods is None:
            return self.methods
        return tuple(m for m in self.methods if m in route_methods)

    def allows_headers(self, requested: str) -> bool:
        """Whether every header named in ``requested`` (a preflight's
        ``Access-Control-Request-Headers``: a comma-separated list) is allowed."""
        if self.headers == ("*",):
            return True
        names = [name.strip().lower() for name in requested.split(",")]
        return all(not name or name in self.headers for name in names)


def _names(what: str, values: Iterable[str]) -> list[str]:
    if isinstance(values, str):  # CORS("https://a.example") would iterate its letters
        return [values]
    found = list(values)
    for value in found:
        if not isinstance(value, str):
            raise ValueError(f"CORS {what} are strings, got {value!r}")
    return found


def _origin(text: str) -> str:
    """An origin as a browser sends it: ``scheme://host[:port]``, lower case."""
    if text == "*":
        return text
    if text == "null":
        raise ValueError(
            "CORS origin 'null' is shared by every sandboxed frame and local file: "
            "allowing it allows them all"
        )
    parts = urlsplit(text)
    if (
        parts.scheme not in ("http", "https")
        or not parts.hostname
        or parts.path
        or parts.query
        or parts.fragment
        or parts.username
        or any(c in text for c in " \t\r\n,")
    ):
        raise ValueError(
            f"CORS origin {text!r} is not an origin: write scheme://host[:port], such as "
            "'https://app.example' (no path, no trailing /)"
        )
    return text.lower()


def _methods(methods: Iterable[str]) -> tuple[str, ...]:
    found: list[str] = []
    for method in _names("methods", methods):
        name = method.upper()
        if not name or not set(name.lower()) <= _TOKEN:
            raise ValueError(f"CORS method {method!r} is not an HTTP method name")
        if name not in found:
            found.append(name)
        if name == "GET" and "HEAD" not in found:
            found.append("HEAD")
    return tuple(found)


def _header(name: str, credentials: bool) -> str:
    lowered = name.strip().lower()
    if lowered == "*":
        if credentials:
            raise ValueError("CORS headers '*' is not a wildcard with credentials: name them")
        return lowered
    if not lowered or not set(lowered) <= _TOKEN:
        raise ValueError(f"CORS header {name!r} is not a header name")
    return lowered
