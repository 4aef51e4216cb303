"""The request pipeline: the guards every request passes, one module each, in one order.

Starlette and Django run their safeguards (sessions, CSRF, authentication, security
headers) as separate middleware in one declared order for every route; pyweb's are the
modules below, and :data:`GUARDS` is their order: the order in which they begin, each
with its ``before`` step; their ``after`` steps run once the page has answered, the inner
ones first (a guard with nothing to do on one side says so in its docstring). The runner
(:meth:`pyweb.app.runner.Runner.run_in_guards`) calls them, and every kind of route reaches the
runner: pages, services, templates, static files, WebSocket handshakes, error pages (a 404
is the answer of the static-file route), the notebook's server and ASGI (both serve a
:class:`~pyweb.app.site.Site`). docs/request-path.md shows this list, and a test keeps the
two equal; another proves each guard runs for each kind of route.

Every guard decides on every request, but a guard with nothing to do costs a test, not a
call: the runner makes each guard's cheap test itself (an attribute, the method's name),
on a line marked ``# guard: NAME``, and calls the guard's step only when the test says it
has work. A route no CORS policy covers is not looked at for one, a GET without a query,
cookie or body loads no session and checks no token, a service that takes the method
refuses nothing, a site without traps runs none, a page that never awaits gets no
deadline, a page that dropped no coroutine and held no loop is not looked at again, a body
under ``compress_min_size`` is not compressed (docs/performance.md has the measurement).
What depends only on the route and the site's settings is decided once, when the route is
found: the route's plan (:func:`pyweb.app.runner._plan`) names the methods the CORS and
methods guards let pass there and those that need no CSRF token, so their decision on a
request is one test of its method. The table test records these decisions, the marked
lines, for every kind of route.
"""

from __future__ import annotations

from . import (
    compress,
    cors,
    csrf,
    deadline,
    headers,
    methods,
    regions,
    sessions,
    traps,
    unawaited,
    watchdog,
)

__all__ = ["GUARDS"]

GUARDS = (
    cors,  # a CORS preflight answered (204 or 403); after: Access-Control-Allow-*, Vary: Origin
    methods,  # a method the route does not take: 405 with Allow
    sessions,  # the browser's session loaded; after: stored, with its cookie and cache headers
    csrf,  # any method but GET, HEAD, OPTIONS, TRACE without the session's token: 403
    watchdog,  # the page found on the loop's stack if it holds the loop; after: reported
    regions,  # the page in a region; after: library state checked and restored
    traps,  # the site's traps for this path (any spelling of it), before the page
    deadline,  # the page stopped after page_timeout seconds: 503
    unawaited,  # after: a coroutine the page dropped without await: 500 naming the line
    headers,  # after: the security headers (HSTS over https only)
    compress,  # after: the body gzip- or brotli-encoded for a client that accepts it
)
