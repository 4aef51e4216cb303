"""Regions: the page runs inside one (:mod:`pyweb.regions`, after SMLserver's region-based
memory: the state a page leaves in library modules is checked and restored after it, and
its allocations counted with ``--profile-alloc``).

Before: enter the region (a slot). After: leave it; what the region found (a library
module changed by the page) is answered by :func:`answer`. A site served with
``regions=False`` has no region: both steps are skipped.
"""

from __future__ import annotations

from typing import Any

from pyweb.handler import Context
from pyweb.protocol.response import Response

__all__ = ["before", "after", "answer"]


def before(site: Any) -> Any:
    """The region's slot for this page (None: the site has no regions)."""
    regions = site.regions
    return regions.enter() if regions is not None else None


def after(site: Any, ctx: Context, page: str, slot: Any) -> Any:
    """Leave the region; what it found, if anything (the runner calls this in ``finally``)."""
    regions = site.regions
    return regions.leave(ctx, page, slot) if regions is not None else None


def answer(site: Any, response: Response, page: str, found: Any) -> Response:
    """The answer once the region found something (a warning, or in strict mode an error)."""
    return site.regions.answer(response, page, found)  # type: ignore[no-any-return]
