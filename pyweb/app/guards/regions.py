"""Regions: the page runs inside one (:mod:`pyweb.regions`, after SMLserver's region-based
memory: the state a page leaves in library modules is checked and restored after it, and
its allocations counted with ``--profile-alloc``).

Before: enter the site's region (a slot). After: leave it; what the region found (a
library module changed by the page) is answered by :func:`answer`. The steps are the
region's own :meth:`~pyweb.regions.SiteRegions.enter` and
:meth:`~pyweb.regions.SiteRegions.leave`, called with the site's regions; a site served
with ``regions=False`` has none, and the runner then calls neither (its test is the
guard's decision: no call for a guard with nothing to do).
"""

from __future__ import annotations

from typing import Any

from pyweb.protocol.response import Response
from pyweb.regions import SiteRegions

__all__ = ["before", "after", "answer"]

before = SiteRegions.enter
"""``before(site.regions)``: the region's slot for this page (:meth:`SiteRegions.enter`)."""

after = SiteRegions.leave
"""``after(site.regions, ctx, page, slot)``: leave the region; what it found, if anything
(:meth:`SiteRegions.leave`; the runner calls it in ``finally``)."""


def answer(site: Any, response: Response, page: str, found: Any) -> Response:
    """The answer once the region found something (a warning, or in strict mode an error)."""
    return site.regions.answer(response, page, found)
