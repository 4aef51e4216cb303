"""pyweb.testing: tools for testing web programs, pyweb's own and its users'.

* :func:`serve` runs a real pyweb server in a thread for a ``with`` block and hands out a
  :class:`Client` (keep-alive, cookies) for it (``pyweb.testing.server``,
  ``pyweb.testing.client``), on trio or on asyncio (``loop="asyncio"``; :func:`use_loop`
  changes the default for a block);
* ``pyweb.testing.http``: hypothesis strategies for HTTP/1.1 requests (valid, pipelined,
  split at random, invalid with the RFC rule each breaks) and :func:`check_parser
  <pyweb.testing.http.check_parser>`, which property-tests anyone's request parser against
  pyweb's (needs ``hypothesis``);
* ``pyweb.testing.locust``: a locust ``HttpUser`` that speaks pyweb's conventions, for
  load tests (``pyweb loadtest``; needs ``locust``).

Serve a directory and fetch a page::

    import pyweb.testing

    with pyweb.testing.serve("pages") as client:
        response = client.get("/index.html")
        print(response.status, response.headers["content-type"])

Serve an async handler and post a form to it::

    from pyweb.protocol.response import Response

    async def echo(ctx):
        return Response(200, [("Content-Type", "text/plain")], await ctx.body())

    with pyweb.testing.serve(echo) as client:
        assert client.post("/", {"name": "Ada", "age": "36"}).text == "name=Ada&age=36"

The two optional submodules are imported only when asked for, so ``import pyweb.testing``
needs neither hypothesis nor locust; the server part (trio) is imported on first use, so
that ``pyweb.testing.locust`` also loads in locust's own environment, which has no trio.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .client import Client, Headers, TestResponse

if TYPE_CHECKING:
    from .server import LOOPS, ServerThread, default_loop, reachable, serve, use_loop

__all__ = ["serve", "Client", "TestResponse", "Headers", "ServerThread", "reachable",
           "LOOPS", "default_loop", "use_loop", "outbox"]  # fmt: skip


def outbox(*, clear: bool = False) -> list[Any]:
    """The mail a test's site sent (``email.message.EmailMessage`` objects, oldest first).
    The first call switches :mod:`pyweb.mail` to its ``outbox`` backend (nothing leaves the
    process) and empties it; later calls return the same list as it fills (``clear=True``
    empties it first: call it so at the start of each test)."""
    from pyweb import mail

    if mail.backend_kind() != "outbox":
        mail.configure("outbox")
        clear = True
    if clear:
        mail.OUTBOX.clear()
    return mail.OUTBOX

_FROM_SERVER = {"serve", "ServerThread", "reachable", "LOOPS", "default_loop", "use_loop"}


def __getattr__(name: str) -> Any:
    if name in _FROM_SERVER:
        from . import server

        return getattr(server, name)
    raise AttributeError(f"module 'pyweb.testing' has no attribute {name!r}")
