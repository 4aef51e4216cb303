"""The cyclic garbage collector's setting for a server process, made once when it starts.

CPython frees most objects as soon as their last reference goes (reference counting); the
cyclic collector is for the rest, objects that refer to each other. It runs when the number
of container objects (lists, dicts, nodes, rows...) made and not yet freed passes a
threshold, and now and then it looks at *every* object of the process: the interpreter's,
pyweb's, the site's library and compiled pages, thousands of objects that live as long as
the process and can never be garbage. A page that builds a 500-row table per request
triggers many of these full collections.

:func:`settle` is called once by ``pyweb serve`` (both loops, each worker), after the site is
loaded and before the first request: it collects what starting left behind, then
``gc.freeze()`` moves everything that exists then out of the collector's sight. The full
collections that still happen look only at what came later. Nothing is kept that would
have been freed (what is frozen was alive and reachable), so memory does not grow.

The collector's thresholds stay Python's: a first-generation threshold of 10,000 instead
of 700 saved no more instructions on the database pages and kept about 18 MB more memory
in a server answering the 500-row page (docs/performance.md). Nothing else in pyweb
touches the collector's settings.
"""

from __future__ import annotations

import gc

__all__ = ["settle"]


def settle() -> None:
    """Collect what starting made garbage, then freeze what is left (see above)."""
    gc.collect()
    gc.freeze()
