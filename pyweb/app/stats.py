"""``/_pyweb/stats``: what the regions of a site have seen, as a page and as JSON.

The numbers come from :meth:`pyweb.regions.SiteRegions.stats` (SMLserver §5: the guarded
modules, the arena page pool, the bytes each page allocated); this module only shows them.
The site answers these two paths in development mode or when allocation accounting is on
(``docs/regions.md``).
"""

from __future__ import annotations

import html
import json

from pyweb.protocol.response import Response
from pyweb.regions import SiteRegions

__all__ = ["stats_page", "stats_json"]


def stats_page(regions: SiteRegions) -> Response:
    """``/_pyweb/stats``: the guarded modules, the arena pool, allocations per page."""
    data = regions.stats()
    rows = []
    if data.get("pages"):
        rows.append(
            "<table><tr><th>page</th><th>requests</th><th>bytes/request</th>"
            "<th>allocations/request</th></tr>"
        )
        for page, p in data["pages"].items():
            rows.append(
                f"<tr><td>{html.escape(page)}</td><td>{p['requests']}</td>"
                f"<td>{p['bytes_per_request']}</td><td>{p['calls_per_request']}</td></tr>"
            )
        rows.append("</table>")
        st = data.get("server_thread")
        if st:
            rows.append(
                f"<p>Server thread since the first request: {st['bytes']} bytes in "
                f"{st['calls']} allocations for {st['requests']} requests "
                f"({st['bytes_per_request']} bytes per request, everything included).</p>"
            )
    else:
        rows.append(f"<p>Allocations: {html.escape(data['alloc_message'])}.</p>")
    modules = "".join(
        f"<li>{html.escape(name)}: {m['names']} names, {m['containers']} containers</li>"
        for name, m in data["modules"].items()
    )
    pool = ", ".join(f"{k} {v}" for k, v in data["arena_pool"].items())
    body = (
        "<!doctype html><html><head><meta charset=utf-8><title>pyweb stats</title></head>"
        f"<body><h1>pyweb stats</h1><p>pyweb_regions implementation: "
        f"{data['implementation']}, snapshot check: {data['fast_check']}</p>"
        "<h2>Allocations per page</h2>" + "".join(rows) + "<h2>Module snapshots</h2>"
        f"<ul>{modules or '<li>none yet</li>'}</ul>"
        f"<p>Mutations reported: {data['mutations_reported']}, restores: {data['restores']}</p>"
        f"<h2>Arena page pool</h2><p>{pool}</p></body></html>"
    )
    return Response(
        200,
        [("Content-Type", "text/html; charset=utf-8"), ("Cache-Control", "no-store")],
        body.encode(),
    )


def stats_json(regions: SiteRegions) -> Response:
    """``/_pyweb/stats.json``: the same numbers for a program."""
    return Response(
        200,
        [("Content-Type", "application/json"), ("Cache-Control", "no-store")],
        json.dumps(regions.stats()).encode(),
    )
