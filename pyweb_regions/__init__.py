"""pyweb_regions: per-request arenas, module snapshots and allocation counters.

SMLserver runs every request from an identical initial heap and recycles its region pages
through a free list (SMLserver §2.1, §5); Hop measured every byte a request allocates and
cut it to 457 B by reusing one I/O buffer per thread (Hop §3.1). This package is the part of
that which is safe in CPython (docs/regions.md says why the object heap itself is never
reset):

* :class:`ModuleGuard` snapshots a module's state after its initialisation, and after each
  request says what changed (``diff``) and puts it back (``restore``); ``any_changed``
  checks all of a site's guards in one call;
* :class:`Arena` is a request heap for *bytes*: region pages from a process-wide free list,
  views into it, an O(1) ``reset`` that refuses while a view is alive;
* ``alloc_*`` count the bytes and calls a thread allocates (Hop's BglMem), C only.

The C extension ``pyweb_regions._regions`` is used when it was built; otherwise, or when
the environment variable ``PYWEB_REGIONS=python`` asks for it, the pure-Python
``pyweb_regions._fallback`` with the same API. :data:`IMPLEMENTATION` says which: ``"c"``
or ``"python"``. The rest of pyweb uses this through :mod:`pyweb.regions`.

:func:`extension` finds this package's C modules by name: the protocol's C fast paths
(the request head, the reply framer) live here too, the one place pyweb holds C.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import os
import sys
import sysconfig
from types import ModuleType

PURE_PYTHON = os.environ.get("PYWEB_REGIONS", "").lower() == "python"
"""``PYWEB_REGIONS=python``: no C at all, neither this package's extension nor the C fast
paths of the protocol (the Python code alone, as students read it)."""


def extension(name: str) -> ModuleType | None:
    """The C extension module ``pyweb_regions.<name>`` (``"_regions"``, or a fast path
    such as ``"_head"``), or None when it was not built or ``PYWEB_REGIONS=python``.

    With ``PYWEB_REGIONS_EXT=<dir>`` (``make asan-test``, ``make fuzz-atheris``) the module
    is loaded from ``<dir>/<name><EXT_SUFFIX>``, built there with the sanitizers, instead
    of the one built in place; the directory must hold it."""
    if PURE_PYTHON:
        return None
    qualified = f"{__name__}.{name}"
    loaded = sys.modules.get(qualified)
    if loaded is not None:
        return loaded
    directory = os.environ.get("PYWEB_REGIONS_EXT")
    if directory:
        path = os.path.join(directory, name + sysconfig.get_config_var("EXT_SUFFIX"))
        loader = importlib.machinery.ExtensionFileLoader(qualified, path)
        spec = importlib.util.spec_from_loader(qualified, loader)
        assert spec is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[qualified] = module
        loader.exec_module(module)
        return module
    try:
        return importlib.import_module(qualified)
    except ImportError:  # not built (no compiler when installed): the Python code runs
        return None


_c = extension("_regions")
if _c is not None:
    _impl = _c
    IMPLEMENTATION = "c"
else:
    from . import _fallback as _impl

    IMPLEMENTATION = "python"

ModuleGuard = _impl.ModuleGuard
if hasattr(_impl, "any_changed"):
    any_changed = _impl.any_changed
else:  # an extension built before it had any_changed: the same check, asking each guard
    from ._fallback import any_changed
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


def implementation(name: str):
    """The implementation module ``"c"`` or ``"python"`` (for tests that run both);
    ImportError if the C extension was not built or ``PYWEB_REGIONS=python`` asks for no C."""
    if name == "c":
        if PURE_PYTHON:
            raise ImportError("PYWEB_REGIONS=python: the C extension is not used")
        from . import _regions

        return _regions
    if name == "python":
        from . import _fallback

        return _fallback
    raise ValueError(f"implementation must be 'c' or 'python', not {name!r}")


__all__ = [
    "IMPLEMENTATION",
    "PURE_PYTHON",
    "extension",
    "ModuleGuard",
    "any_changed",
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
