"""The cyclic garbage collector's young generation, sized for a request (``gc_young``).

SMLserver §5 gives each request a region: everything the request allocates is freed at
once when it ends, and no collector ever looks at it. CPython frees most of a request's
objects the same way, by reference counting, as soon as the request lets go of them. What
it adds is the *cyclic* collector, which wakes whenever 700 more container objects
(tuples, lists, dicts, class instances: an HTML node is one) have been allocated than
freed since its last run, and visits all the young ones. A page that builds a 500-row
table makes a few thousand nodes and keeps them until its answer is rendered, so the
collector visits them several times while the page is still using them, and promotes the
survivors to the older generations, where they are visited again; then the page ends and
they are freed by their reference counts anyway.

So the server lets the young generation grow by :data:`YOUNG` (10,000) objects before a
collection: the objects of most requests are born and freed between two collections, as
in a region, and cycles are still found, a little later. Measured on the ``log`` page
(500 rows of HTML nodes from PostgreSQL, ``benchmarks/bench_db_pages.py``): 19.8M → 18.1M
instructions per request and about 10% less CPU time on both loops (docs/performance.md,
"The collector's young generation").

The thresholds of the two older generations are left as Python sets them. The setting is
process-wide, like the collector: ``pyweb serve`` sets it when a server starts (and on a
reload); a site that wants Python's own threshold back sets ``gc_young = 700``.
"""

from __future__ import annotations

import gc

__all__ = ["YOUNG", "size_young_generation"]

YOUNG = 10_000
"""Container objects allocated, less those freed, between two collections of the young
generation (Python: 700)."""


def size_young_generation(young: int) -> None:
    """Collect the young generation after ``young`` allocations of container objects,
    keeping the older generations' thresholds."""
    if young < 1:
        raise ValueError(f"gc_young must be at least 1, got {young}")
    _, middle, old = gc.get_threshold()
    gc.set_threshold(young, middle, old)
