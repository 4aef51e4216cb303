"""Site: the default handler of ``pyweb serve DIR``: the files of a directory.

For now a site is its static files (Hop §3.3.1, served with sendfile by the server); page
scripts and services come in later issues and will be tried before the 404. The method
rules are RFC 9110's:

* ``GET`` and ``HEAD`` on a file: the file (with validators and ranges, see
  :mod:`pyweb.server.static`); on nothing: ``404 Not Found``;
* any other method on an existing file: ``405 Method Not Allowed`` with ``Allow: GET,
  HEAD`` (RFC 9110 §15.5.6 requires the ``Allow`` field); elsewhere: ``404``.
"""

from __future__ import annotations

import dataclasses
import os

from pyweb.protocol.response import Response
from pyweb.server.context import RequestContext
from pyweb.server.errorpage import error_response
from pyweb.server.static import StaticFiles

__all__ = ["Site"]


class Site:
    """``await Site(root)(ctx) -> Response``: an async handler serving ``root``."""

    def __init__(self, root: str | os.PathLike[str], *, dev: bool = False) -> None:
        if not os.path.isdir(root):
            raise NotADirectoryError(f"site directory {os.fspath(root)!r} does not exist")
        self.root = os.fspath(root)
        self.dev = dev
        self.static = StaticFiles(root)

    async def __call__(self, ctx: RequestContext) -> Response:
        request = ctx.request
        method = request.method
        if method == "GET" or method == "HEAD":
            response = self.static.respond(request)
            if response is not None:
                return response
            return error_response(404, dev=self.dev, detail=f"no file for {request.path}")
        # Would a GET find something here? Then the resource exists and only the method is
        # wrong (405); otherwise there is nothing here at all (404).
        probe = self.static.respond(dataclasses.replace(request, method="GET"))
        if probe is not None and probe.status < 400:
            page = error_response(405, dev=self.dev, detail=f"{method} is not allowed here")
            page.headers.append(("Allow", "GET, HEAD"))
            return page
        if probe is not None:  # the path itself is bad (400) or refused (404)
            return probe
        return error_response(404, dev=self.dev, detail=f"no file for {request.path}")

    def __repr__(self) -> str:
        return f"Site({self.root!r}, dev={self.dev})"
