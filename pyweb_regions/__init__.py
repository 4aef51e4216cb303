"""pyweb_regions: per-request arenas, module snapshots and allocation counters.

SMLserver runs every request from an identical initial heap and recycles its region pages
through a free list (SMLserver §2.1, §5); Hop measured every byte a request allocates and
cut it to 457 B by reusing one I/O buffer per thread (Hop §3.1). This package is the part of
that which is safe in CPython (docs/regions.md says why the object heap itself is never
reset):

* :class:`ModuleGuard` snapshots a module's state after its initialisation, and after each
  request says what changed (``diff``) and puts it back (``restore``);
* :class:`Arena` is a request heap for *bytes*: region pages from a process-wide free list,
  views into it, an O(1) ``reset`` that refuses while a view is alive;
* ``alloc_*`` count the bytes and calls a thread allocates (Hop's BglMem), C only.

The C extension ``pyweb_regions._regions`` is used when it was built; otherwise, or when
the environment variable ``PYWEB_REGIONS=python`` asks for it, the pure-Python
``pyweb_regions._fallback`` with the same API. :data:`IMPLEMENTATION` says which:
``"c"`` or ``"python"``. The rest of pyweb uses this through :mod:`pyweb.regions`.
"""

from __future__ import annotations

import os

if os.environ.get("PYWEB_REGIONS", "").lower() == "python":
    from . import _fallback as _impl

    IMPLEMENTATION = "python"
elif os.environ.get("PYWEB_REGIONS_EXT"):
    # `make asan-test`: the extension built with AddressSanitizer, from its own file.
    import importlib.machinery
    import importlib.util
    import sys

    _loader = importlib.machinery.ExtensionFileLoader(
        "pyweb_regions._regions", os.environ["PYWEB_REGIONS_EXT"]
    )
    _spec = importlib.util.spec_from_loader("pyweb_regions._regions", _loader)
    assert _spec is not None
    _impl = importlib.util.module_from_spec(_spec)
    sys.modules["pyweb_regions._regions"] = _impl
    _loader.exec_module(_impl)
    IMPLEMENTATION = "c"
else:
    try:
        from . import _regions as _impl  # type: ignore[no-redef]

        IMPLEMENTATION = "c"
    except ImportError:  # not built (no compiler when installed): same API, slower
        from . import _fallback as _impl  # type: ignore[no-redef]

        IMPLEMENTATION = "python"

ModuleGuard = _impl.ModuleGuard
Arena = _impl.Arena
PAGE_SIZE: int = _impl.PAGE_SIZE
VERSION_TAG: bool = bool(_impl.VERSION_TAG)
"""True when the "nothing changed" check reads the dict version tag (C on 3.11)."""
FAST_CHECK: str = _impl.FAST_CHECK
"""How a snapshot sees "nothing changed": ``"dict_watcher"`` (C on 3.12+: a callback marks
the guard when the module dict is written), ``"version_tag"`` (C on 3.11) or ``"compare"``
(the fallback, or no watcher id left)."""
pool_stats = _impl.pool_stats
utf8_length = _impl.utf8_length
alloc_install = _impl.alloc_install
alloc_installed = _impl.alloc_installed
alloc_enable = _impl.alloc_enable
alloc_counts = _impl.alloc_counts
alloc_reset_counts = _impl.alloc_reset_counts
ALLOC_AVAILABLE: bool = IMPLEMENTATION == "c"
"""Allocation accounting needs the C allocator hook; the fallback says "not available"."""


def implementation(name: str):  # type: ignore[no-untyped-def]
    """The implementation module ``"c"`` or ``"python"`` (for tests that run both);
    ImportError if the C extension was not built."""
    if name == "c":
        from . import _regions

        return _regions
    if name == "python":
        from . import _fallback

        return _fallback
    raise ValueError(f"implementation must be 'c' or 'python', not {name!r}")


__all__ = [
    "IMPLEMENTATION",
    "ModuleGuard",
    "Arena",
    "PAGE_SIZE",
    "VERSION_TAG",
    "FAST_CHECK",
    "ALLOC_AVAILABLE",
    "pool_stats",
    "utf8_length",
    "alloc_install",
    "alloc_installed",
    "alloc_enable",
    "alloc_counts",
    "alloc_reset_counts",
    "implementation",
]
