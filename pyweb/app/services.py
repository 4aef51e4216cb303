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

**Methods.** A service names the methods it answers: ``@service("/items", methods=["POST"])``.
Without ``methods=``, a service answers GET (and HEAD), which must never change anything:
a GET carries no CSRF token, so a link on another site could make a browser send it. A
service whose parameter is a JSON body answers POST by default. A GET service and a POST
service may share one path (one service per path and method); another method gets 405
with ``Allow``. To answer a status on purpose, ``raise pyweb.HTTPError(404, "no to-do 17")``
(:mod:`pyweb.app.apierrors`).

A service module is a file in the site directory that defines services; it is imported once
when the site loads (not run per request, unlike a script). ``@service`` without a path binds
``/<function name>``. Annotations are checked at import, so a type pyweb cannot parse is
reported by ``pyweb check``, not by the first request.

A path may have parameters (:mod:`pyweb.app.routes`): ``@service("/todo/{id}")`` with
``id: Nat`` gets the segment parsed by the getter for ``Nat``; a segment that does not
parse is a 404 (there is no such to-do), not a 400. A parameter annotated with a dataclass or
a TypedDict is read from a JSON body (:mod:`pyweb.app.jsonbody`). POSTs need the CSRF token
(:mod:`pyweb.app.csrf`) unless the service says ``csrf=False``. Pages of other origins may
call it when its ``cors=`` policy or the site's settings allow them (:mod:`pyweb.app.cors`).
"""

from __future__ import annotations

import dis
import inspect
import typing
from collections.abc import Awaitable, Callable, Iterable
from types import CodeType, CoroutineType
from typing import Any

from pyweb import forms

from . import pages
from .conn import RequestError
from .cors import CORS
from .jsonbody import check_json_type, is_json_type, read_json
from .results import to_response
from .routes import service_pattern

__all__ = ["Service", "service", "DEFAULT_METHODS", "BODY_METHODS", "JSONFieldErrors", "bind"]

DEFAULT_METHODS = ("GET", "HEAD")
"""A service's methods unless it names them: safe ones only (RFC 9110 §9.2.1)."""
BODY_METHODS = ("POST",)
"""The default methods of a service whose parameter is a JSON body (a body needs one)."""


class Service:
    """A function bound to a URL path; ``await svc.respond(conn)`` runs it for a request."""

    def __init__(
        self,
        func: Callable[..., Any],
        path: str,
        methods: Iterable[str] | None = None,
        *,
        csrf: bool = True,
        cors: CORS | None = None,
    ) -> None:
        if not path.startswith("/"):
            raise ValueError(f"a service path starts with '/', got {path!r} for {func.__name__}")
        self.func = func
        self.path = path
        self.pattern = service_pattern(path)
        """The path's parameters (``/todo/{id}``), or ``None`` for a fixed path."""
        self.csrf = csrf
        """Whether unsafe methods need the CSRF token (``csrf=False``: a token-authenticated API)."""
        if cors is not None and not isinstance(cors, CORS):
            raise TypeError(
                f"service {path}: cors is a pyweb.CORS(...) policy or None, got {cors!r}"
            )
        self.cors = cors
        """This service's own CORS policy (None: the site's settings decide)."""
        self.login_required = False
        """Set by ``@login_required`` written above ``@service``."""
        parameters = inspect.signature(func).parameters
        self.wants_conn = "conn" in parameters
        self.json_param = self._json_parameter(func)
        self.methods = _methods(func, methods, self.json_param is not None)
        """The methods this service answers (GET brings HEAD)."""
        self.by_method: dict[str, Service] = dict.fromkeys(self.methods, self)
        """Every service bound to this path, by method (:func:`bind` joins them)."""
        skip = ("conn",) if self.json_param is None else ("conn", self.json_param[0])
        self.skip: tuple[str, ...] = skip
        """The parameters not read from the form: ``conn`` and a JSON body's."""
        forms.check_signature(func, skip=skip)  # a TypeError naming the parameter, at import
        self._reads_form = bool(forms.form_parameters(func, skip))  # (the plan check_signature made)
        self.at_once = (
            inspect.iscoroutinefunction(func)
            and self.json_param is None
            and not _may_wait(getattr(func, "__code__", None))
        )
        """An async function that never awaits, with no JSON body to read: it cannot
        wait, so it runs to its end at once (:meth:`respond_at_once`) and needs no page
        deadline (Hop's hello-ast returns a tree built once)."""
        if self.pattern is not None:
            for name in self.pattern.names:
                if name not in parameters and not any(
                    p.kind is p.VAR_KEYWORD for p in parameters.values()
                ):
                    raise TypeError(
                        f"service {path}: {func.__name__} has no parameter {name!r} for the "
                        f"path parameter {{{name}}}"
                    )
        self.__doc__ = func.__doc__
        self.__name__ = func.__name__
        self.__wrapped__ = func

    @staticmethod
    def _json_parameter(func: Callable[..., Any]) -> tuple[str, type] | None:
        try:
            hints = typing.get_type_hints(func)
        except Exception:
            return None  # forms.check_signature reports it
        found = []
        for name, hint in hints.items():
            if name == "return":
                continue
            inner, _optional = forms.split_optional(hint)
            if is_json_type(inner):
                found.append((name, hint))
        if len(found) > 1:
            names = ", ".join(name for name, _ in found)
            raise TypeError(f"{func.__name__}: only one parameter can be the JSON body ({names})")
        if not found:
            return None
        check_json_type(forms.split_optional(found[0][1])[0])
        return found[0]

    def for_method(self, method: str) -> Service | None:
        """The service of this path that answers ``method`` (None: a 405)."""
        return self.by_method.get(method)

    @property
    def allow(self) -> str:
        """The ``Allow`` field of a 405 at this path: every method some service answers."""
        return ", ".join(self.by_method)

    def _check_path(self, conn: Any) -> None:
        """A path parameter that its getter refuses means there is no such resource: 404."""
        for p in forms.form_parameters(self.func, self.skip):
            value = conn.path_params.get(p.name)
            if value is None:
                continue
            try:
                p.getter(p.name, form={p.name: value})
            except forms.FormError as exc:
                raise RequestError(
                    404, f"no resource at {conn.path}: {p.name} = {exc.value!r} is not {exc.expected}"
                ) from None

    async def _read_body(self, conn: Any) -> Any:
        assert self.json_param is not None
        name, annotation = self.json_param
        annotation, optional = forms.split_optional(annotation)
        if optional and not conn.request.content_length and not conn.request.chunked:
            return None  # ``body: Item | None``: no body at all is None
        value, errors = read_json(await conn.json(), annotation)
        if errors:
            raise JSONFieldErrors(errors)
        return value

    def _arguments(self, conn: Any) -> dict[str, Any]:
        """The function's arguments from ``conn.form`` (all but a JSON body)."""
        if self.login_required:
            from pyweb.auth import require_login

            require_login()
        if conn.path_params:
            self._check_path(conn)
        kwargs: dict[str, Any] = {}
        if self._reads_form:  # FormErrors → one 400 page
            kwargs = forms.parse_arguments(self.func, conn.form, skip=self.skip)
        if self.wants_conn:
            kwargs["conn"] = conn
        return kwargs

    async def respond(self, conn: Any) -> None:
        """Parse the arguments from ``conn.form``, call the function, give its response."""
        kwargs = self._arguments(conn)
        if self.json_param is not None:
            kwargs[self.json_param[0]] = await self._read_body(conn)
        result = self.func(**kwargs)
        if inspect.isawaitable(result):
            result = await result
        self._answer(conn, result)

    def respond_at_once(self, conn: Any) -> Awaitable[None]:
        """:meth:`respond` for a service that cannot wait (:attr:`at_once`): its coroutine
        runs to its end in one step, here, and the site gets ``pages.DONE``, as from a
        script without ``await`` (no coroutine of respond's own, no deadline)."""
        result: Any = self.func(**self._arguments(conn))
        if type(result) is CoroutineType:
            try:
                result.send(None)
            except StopIteration as done:
                result = done.value
            else:  # (its code has no await: a coroutine without one ends at its first step)
                result.close()
                raise RuntimeError(f"{self!r} waited, though its code has no await")
        self._answer(conn, result)
        return pages.DONE

    def _answer(self, conn: Any, result: Any) -> None:
        if result is None:
            return  # the service answered through conn.return_ (or will be a 500)
        if conn.response is not None:
            conn.return_(result)  # raises ResponseAlreadySent, naming the service
        response = conn.response = to_response(result)
        if response is not result:  # made here, as conn.return_'s: the site may add its
            conn.own_response = response  # headers to it in place (a returned Response may be shared)

    async def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the function directly (in a test or a notebook), bypassing HTTP."""
        result = self.func(*args, **kwargs)
        if inspect.isawaitable(result):
            result = await result
        return result

    def __repr__(self) -> str:
        methods = ",".join(m for m in self.methods if m != "HEAD" or "GET" not in self.methods)
        return (
            f"<service {methods} {self.path} -> {self.func.__module__}.{self.func.__qualname__}>"
        )


_WAITS = frozenset(
    {"GET_AWAITABLE", "GET_AITER", "GET_ANEXT", "BEFORE_ASYNC_WITH", "SEND", "YIELD_VALUE"}
)
"""The instructions through which a coroutine can hand control to the loop (``await``,
``async for``, ``async with``): a coroutine whose code has none ends at its first step."""


def _may_wait(code: CodeType | None) -> bool:
    """Whether a coroutine running ``code`` may wait (``True`` when there is no code to read)."""
    if code is None:
        return True
    return any(instruction.opname in _WAITS for instruction in dis.get_instructions(code))


class JSONFieldErrors(Exception):
    """A JSON body that does not fit the parameter's type: every bad field (a 400)."""

    http_status = 400

    def __init__(self, errors: list[Any]) -> None:
        self.errors = errors
        listing = "; ".join(f"{e.field}: {e.message}" for e in errors)
        super().__init__(f"{len(errors)} bad field(s) in the JSON body: {listing}")


_METHOD = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ-")


def _methods(func: Callable[..., Any], methods: Iterable[str] | None, has_body: bool) -> tuple[str, ...]:
    """The methods a service answers: the ones named (upper case, GET bringing HEAD), or
    the default (:data:`DEFAULT_METHODS`, or :data:`BODY_METHODS` for a JSON body)."""
    if methods is None:
        return BODY_METHODS if has_body else DEFAULT_METHODS
    if isinstance(methods, str):
        raise TypeError(
            f"{func.__name__}: methods is a list of names, e.g. methods=[{methods!r}], "
            f"not the string {methods!r}"
        )
    found: list[str] = []
    for method in methods:
        name = method.upper() if isinstance(method, str) else ""
        if not name or not set(name) <= _METHOD:
            raise ValueError(f"{func.__name__}: {method!r} is not an HTTP method name")
        if name not in found:
            found.append(name)
        if name == "GET" and "HEAD" not in found:
            found.append("HEAD")  # a HEAD is a GET without the body (RFC 9110 §9.3.2)
    if not found:
        raise ValueError(f"{func.__name__}: methods=[] answers nothing; name at least one")
    return tuple(found)


def bind(services: dict[str, Service], svc: Service) -> str | None:
    """Add ``svc`` to ``services`` (path → the first service bound there), joining the
    services of one path: each method is answered by one of them. Returns the load error
    when a method of ``svc`` is taken already (None when it was bound)."""
    first = services.get(svc.path)
    if first is None or first is svc:
        services[svc.path] = svc
        return None
    taken = [m for m in svc.methods if m in first.by_method and first.by_method[m] is not svc]
    if taken:
        other = first.by_method[taken[0]]
        return (
            f"{svc!r} and {other!r} have the same URL and both answer "
            f"{', '.join(taken)}: a path has one service per method"
        )
    for method in svc.methods:
        first.by_method[method] = svc
    svc.by_method = first.by_method  # one table for the path, whichever service is found
    return None


def service(
    path: str | Callable[..., Any] | None = None,
    *,
    methods: Iterable[str] | None = None,
    csrf: bool = True,
    cors: CORS | None = None,
) -> Any:
    """Bind a function to a URL: ``@service`` (at ``/<name>``) or ``@service("/path")``.

    ``methods=["POST"]`` names the methods it answers (default GET and HEAD; POST for a
    service that reads a JSON body). ``csrf=False`` lets POSTs in without the CSRF token
    (an API authenticated otherwise). ``cors=pyweb.CORS(origins=[...])`` lets pages of
    other origins call it (instead of the site's ``cors_*`` settings; docs/cors.md)."""
    if callable(path):
        return Service(path, "/" + path.__name__, methods, csrf=csrf, cors=cors)

    def bind(func: Callable[..., Any]) -> Service:
        where = path if path is not None else "/" + func.__name__
        return Service(func, where, methods, csrf=csrf, cors=cors)

    return bind
