"""Regions for a site: every request starts from the state the library had after its
initialisation, and what a request costs in allocations is measured (SMLserver §2.1, §5;
Hop §3.1). The mechanisms are in :mod:`pyweb_regions` (C, or its pure-Python fallback);
this module applies them to a :class:`~pyweb.app.site.Site`.

What "module state" means for a site. A page *script* already runs in fresh globals for
every request, so nothing it assigns can survive. What can survive is the state of the
site's **library** (``_name.py`` modules and packages, imported once per process) and of
its **service modules**: a page that does ``_counter.count += 1`` or
``_store.items.append(x)`` changes the process for every later request. SMLserver makes
that impossible by restoring the initial heap after each request; pyweb approximates it:

1. When a library module finishes its initialisation (the import of the outermost library
   module returns), a :class:`pyweb_regions.ModuleGuard` snapshots it: its bindings and the
   contents of its top-level lists, dicts, sets and bytearrays. Service modules are
   snapshotted when the site loads; package submodules when a request first sees them.
2. After every request the guards are checked (in C: one integer compare per module when
   nothing changed). A change is **reported** at once: a warning in the error log, in
   development mode a banner on the page, and with ``strict=True`` the request fails with
   500 and the same message.
3. The state is **restored** (rebinding names, refilling containers in place) as soon as no
   other request is in flight in this process: restoring while another request runs would
   pull state from under it. With overlapping requests the report names the request that
   finished first, which may not be the one that made the change; docs/regions.md says more.

What it cannot see (one level only): attributes of objects and classes, nested containers,
closures, caches of other modules. It is a teaching aid and a hygiene check, not isolation.

Table 1's columns: ``exec_library=True`` re-runs every library module's initialisation
before each request instead of restoring snapshots (column six); the script-cache switch
(column five) lives in the site.

Allocation accounting (``profile_alloc=True``, C only): the allocator hook is installed
once, and the page's own awaitable is counted step by step (:meth:`SiteRegions.counted`:
the bytes allocated during each ``send`` into it go to its request), so interleaved
requests on one thread are each charged their own bytes, on trio and asyncio alike.
:meth:`SiteRegions.stats` is what ``/_pyweb/stats`` shows (``pyweb/app/stats.py``); each
request's own count goes to ``ctx.alloc``, which ``--access-log-format alloc`` writes as
``alloc=BYTES/CALLS`` (docs/logging.md).
"""

from __future__ import annotations

import html
import importlib.machinery
import logging
import os
import sys
import threading
import types
import weakref
from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass
from typing import Any

import pyweb_regions
from pyweb.protocol.errorpage import error_response
from pyweb.protocol.response import Fragments, Response

__all__ = ["SiteRegions", "Mutation", "IMPLEMENTATION", "GuardedLoader"]

IMPLEMENTATION = pyweb_regions.IMPLEMENTATION
"""``"c"`` or ``"python"``: which implementation of :mod:`pyweb_regions` is in use."""
_any_changed = pyweb_regions.any_changed  # every guard of a site, in one call

_log = logging.getLogger("pyweb.regions")


@dataclass(frozen=True, slots=True)
class Mutation:
    """One change a request made to a library module's state."""

    module: str
    """The module's name (``_counter``)."""
    kind: str
    """``rebound``, ``added``, ``deleted``, ``mutated`` (a container's contents), or
    ``not restored`` (a bytearray with a live view could not be resized back)."""
    name: str
    """The global's name (``counter``)."""

    def __str__(self) -> str:
        return f"`{self.name}` ({self.kind}, in {self.module})"


def describe(mutations: list[Mutation], restored: bool) -> str:
    """The sentence a student reads: what changed, what happened to it, what to do."""
    names = ", ".join(str(m) for m in mutations)
    plural = len(mutations) > 1
    what = f"module global{'s' if plural else ''} {names}"
    if restored:
        done = "they were reset" if plural else "it was reset"
    else:
        done = (
            "they will be reset" if plural else "it will be reset"
        ) + " when no other request is in flight"
    return f"this page changed {what}; {done}: keep state in the cache or the database"


# ---- snapshot right after initialisation ------------------------------------------------

_sites: dict[str, weakref.WeakSet[SiteRegions]] = {}
"""Site root → every live SiteRegions on it. Usually one; a test or a notebook may build a
second Site on the same pages while the first serves, and the library modules they share
(one ``sys.modules``) must be snapshotted by both when they initialise: a site that saw the
module only later, in its ``scan`` after a request, would snapshot what that request left."""


class _ImportState(threading.local):
    """Per thread: how deep in library imports we are, and what they initialised."""

    def __init__(self) -> None:
        self.depth = 0
        self.imported: list[types.ModuleType] = []


_imports = _ImportState()


def _module_sites(module: types.ModuleType) -> list[SiteRegions]:
    file = getattr(module, "__file__", None)
    if not file:
        return []
    return [
        regions
        for root, sites in list(_sites.items())
        if file.startswith(root + os.sep)
        for regions in list(sites)
    ]


class GuardedLoader(importlib.machinery.SourceFileLoader):
    """The library's loader: after the outermost library import has run, snapshot every
    library module it initialised (a module's init may set up another's state, so the
    snapshots wait until all of them are done)."""

    def exec_module(self, module: types.ModuleType) -> None:
        state = _imports
        state.depth += 1
        try:
            super().exec_module(module)
            state.imported.append(module)
        finally:
            state.depth -= 1
            if state.depth == 0:
                done = state.imported[:]
                state.imported.clear()
                for m in done:
                    for regions in _module_sites(m):
                        regions.guard(m)


# ---- allocation accounting, on any loop -----------------------------------------------


class _Stepping(threading.local):
    """Set while a counted page takes a step on this thread: a page that a page runs
    (``enter`` inside that step) gets no slot of its own, since the outer one pays."""

    slot: list[int] | None = None


_stepping = _Stepping()


class _Counted:
    """A page's awaitable whose allocations are charged to ``slot``: each step of it (each
    ``send`` or ``throw`` into it, up to its next suspension) is counted on its own, so
    the requests that run while it waits are not charged to it, on trio and asyncio alike
    (no loop hook: the page's own coroutine is the unit)."""

    __slots__ = ("awaitable", "slot")

    def __init__(self, awaitable: Awaitable[Any], slot: list[int]) -> None:
        self.awaitable = awaitable
        self.slot = slot

    def __await__(self) -> Generator[Any, Any, Any]:
        steps = self.awaitable.__await__()
        slot = self.slot
        counts = pyweb_regions.alloc_counts
        value: Any = None
        error: BaseException | None = None
        while True:
            _stepping.slot = slot
            start = counts()
            try:
                if error is None:
                    suspended = steps.send(value)
                else:
                    suspended = steps.throw(error)
            except StopIteration as done:
                return done.value
            finally:
                b, c = counts()
                slot[0] += b - start[0]
                slot[1] += c - start[1]
                _stepping.slot = None
            try:
                value, error = (yield suspended), None
            except GeneratorExit:  # abandoned unfinished: close the page the same way
                steps.close()
                raise
            except BaseException as thrown:  # a cancellation, delivered into the page
                value, error = None, thrown


def _charge_request(ctx: Any, slot: list[int]) -> None:
    """Hand the page's count to the access log (``ctx.alloc``, the ``alloc`` format): the
    same slot the stats page adds up, so the log and ``/_pyweb/stats`` agree. Summed, in
    case one request runs two pages one after the other (a page calling a page has no slot
    of its own: the outer one pays, once)."""
    before = getattr(ctx, "alloc", None)
    counts = (slot[0], slot[1]) if before is None else (before[0] + slot[0], before[1] + slot[1])
    try:
        ctx.alloc = counts
    except AttributeError:  # a context without the field (a handler's own stand-in)
        pass


# ---- the site's regions -------------------------------------------------------------------

_NOTHING_CHANGED: tuple[tuple[()], bool] = ((), False)
"""What the after-request check returns when no guard saw a change."""


class SiteRegions:
    """The regions of one site directory: guards, the per-request check, allocation stats."""

    def __init__(
        self,
        root: str,
        *,
        dev: bool = False,
        strict: bool = False,
        exec_library: bool = False,
        profile_alloc: bool = False,
    ) -> None:
        self.root = os.path.realpath(root)
        self.dev = dev
        self.strict = strict
        self.exec_library = exec_library
        self.guards: dict[str, Any] = {}
        """Module name → its :class:`pyweb_regions.ModuleGuard`, in initialisation order."""
        self.in_flight = 0
        self.pending: dict[str, Any] = {}  # module name -> guard waiting for a quiet moment
        self.reported: set[Mutation] = set()  # already reported, not restored yet
        self.mutations = 0
        """Mutations reported since start (each counted once)."""
        self.restores = 0
        self._modules_seen = -1
        self._codes: dict[str, types.CodeType] = {}
        self.profile_alloc = False
        self.alloc_message = ""
        self.page_allocs: dict[str, list[int]] = {}  # page -> [requests, bytes, calls]
        self._thread: int | None = None  # the thread whose counters server_thread shows
        self._thread_base: tuple[int, int] | None = None
        self.requests = 0
        self._requests_base = 0
        if profile_alloc:
            self._start_profiling()
        _sites.setdefault(self.root, weakref.WeakSet()).add(self)

    # -- guards

    def guard(self, module: types.ModuleType) -> None:
        """Snapshot ``module`` now (its initialisation has just finished)."""
        name = module.__name__
        guard = self.guards.get(name)
        if guard is not None and guard.module is module:
            return
        self.guards[name] = pyweb_regions.ModuleGuard(module)
        self.pending.pop(name, None)

    def _library(self) -> list[types.ModuleType]:
        prefix = self.root + os.sep
        return [
            m
            for m in list(sys.modules.values())
            if (getattr(m, "__file__", None) or "").startswith(prefix)
        ]

    def scan(self) -> None:
        """Guard library and service modules not guarded yet; forget replaced ones (dev
        reload). Runs when ``sys.modules`` changed size, so it costs nothing per request."""
        self._modules_seen = len(sys.modules)
        live = {m.__name__: m for m in self._library()}
        for name in list(self.guards):
            if live.get(name) is not self.guards[name].module:
                del self.guards[name]
                self.pending.pop(name, None)
        for name, module in live.items():
            if name not in self.guards:
                self.guard(module)

    def reload(self) -> None:
        """The site was reloaded (dev): every guard is rebuilt from the new modules."""
        self.guards.clear()
        self.pending.clear()
        self.reported.clear()
        self._codes.clear()
        self.scan()

    # -- around one request

    async def run(
        self, ctx: Any, page: str, call: Callable[..., Awaitable[Response]], *args: Any
    ) -> Response:
        """Run one page (``await call(*args)``) inside the region: re-run the library first
        with ``exec_library``, count its allocations, then check, report and restore.
        (``call`` and its arguments rather than a closure: one object less per request.)
        The site itself calls the three steps (:meth:`enter`, :meth:`leave`,
        :meth:`answer`) around its page, which spares a coroutine per request."""
        slot = self.enter()
        try:
            page_awaitable = call(*args)
            response = await (page_awaitable if slot is None else self.counted(page_awaitable, slot))
        finally:
            found = self.leave(ctx, page, slot)
        return response if found is None else self.answer(response, page, found)

    def enter(self) -> list[int] | None:
        """A page starts: re-run the library (``exec_library``), start counting its
        allocations (``profile_alloc``: the slot to give :meth:`counted` and then
        :meth:`leave`; None without profiling, and for a page that a page runs)."""
        if self.exec_library:
            self._exec_library()
        slot = self._alloc_begin() if self.profile_alloc else None
        self.in_flight += 1
        return slot

    def leave(
        self, ctx: Any, page: str, slot: list[int] | None
    ) -> tuple[list[Mutation] | tuple[()], bool] | None:
        """The page has ended (however it ended): charge its allocations, check the
        library's state, log and restore what changed. ``(mutations, restored)``, or None
        when nothing changed and nothing waits to be restored (every request but a
        mutating one: no tuple, and no :meth:`answer` to call)."""
        self.in_flight -= 1
        if slot is not None:
            self._alloc_end(page, slot)
            _charge_request(ctx, slot)
        if len(sys.modules) != self._modules_seen:
            self.scan()
        if self.exec_library:
            return None
        if not self.pending and not _any_changed(self.guards):
            return None  # (one C call for every guard: one compare per module)
        mutations, restored = self._after_request()
        if mutations:
            self._log(ctx, page, list(mutations), restored)
        return mutations, restored

    def answer(
        self,
        response: Response,
        page: str,
        found: tuple[list[Mutation] | tuple[()], bool] | None,
    ) -> Response:
        """The page's response, or what a change to the library makes of it: a banner in
        development mode, a 500 with ``strict``."""
        if found is None:
            return response
        mutations, restored = found
        if not mutations:
            return response
        message = describe(list(mutations), restored)
        if self.strict:
            return error_response(500, dev=True, detail=f"{page}: {message}")
        if self.dev:
            return _with_banner(response, message)
        return response

    def _after_request(self) -> tuple[list[Mutation] | tuple[()], bool]:
        try:
            return self._check_and_restore()
        except Exception:  # a bug here must not take the request (or the server) down
            _log.exception("pyweb.regions: checking the library's state failed; snapshots dropped")
            self.guards.clear()
            self.pending.clear()
            self.reported.clear()
            return [], False

    def _check_and_restore(self) -> tuple[list[Mutation] | tuple[()], bool]:
        if not self.pending and not _any_changed(self.guards):
            return _NOTHING_CHANGED  # every request but a mutating one: no list, no tuple
        new: list[Mutation] = []
        for name, guard in self.guards.items():
            if guard.changed():
                self.pending[name] = guard
                for kind, global_name in guard.diff():
                    m = Mutation(name, kind, global_name)
                    if m not in self.reported:
                        self.reported.add(m)
                        new.append(m)
        self.mutations += len(new)
        if not self.pending or self.in_flight:
            return new, False
        for guard in self.pending.values():
            for kind, global_name in guard.restore():
                if kind == "not restored":
                    new.append(Mutation(guard.module.__name__, kind, global_name))
                    self.mutations += 1
        self.pending.clear()
        self.reported.clear()
        self.restores += 1
        return new, True

    def _log(self, ctx: Any, page: str, mutations: list[Mutation], restored: bool) -> None:
        message = f"{page}: {describe(mutations, restored)}"
        log_error = getattr(ctx, "log_error", None)
        if log_error is not None:
            log_error(message)
        else:
            _log.warning(message)

    def _exec_library(self) -> None:
        """Table 1, column six: run every library module's initialisation again."""
        if len(sys.modules) != self._modules_seen:
            self.scan()
        for name, guard in self.guards.items():
            if name.startswith("pyweb_site_services."):
                continue  # a service module binds URLs: it is not library initialisation
            module = guard.module
            code = self._codes.get(name)
            if code is None:
                loader = getattr(module.__spec__, "loader", None)
                get_code = getattr(loader, "get_code", None)
                if get_code is None:
                    continue
                code = self._codes[name] = get_code(name)
            exec(code, module.__dict__)  # noqa: S102 - the module's own code
            guard.retake()

    # -- allocation accounting

    def _start_profiling(self) -> None:
        if not pyweb_regions.ALLOC_AVAILABLE:
            self.alloc_message = (
                "allocation accounting is not available: pyweb_regions uses its Python "
                "fallback (the C extension was not built, or PYWEB_REGIONS=python)"
            )
            return
        if not pyweb_regions.alloc_install():
            self.alloc_message = "allocation accounting is not available: the hook is gone"
            return
        pyweb_regions.alloc_enable(True)
        self.profile_alloc = True

    def counted(self, awaitable: Awaitable[Response], slot: list[int]) -> Awaitable[Response]:
        """``awaitable`` (the page that :meth:`enter` gave ``slot`` to), charging the
        allocations of its own steps to ``slot``; :meth:`leave` then hands them on."""
        return _Counted(awaitable, slot)

    def _alloc_begin(self) -> list[int] | None:
        if _stepping.slot is not None:  # a page calling a page: the outer one pays
            return None
        thread = threading.get_ident()
        if self._thread != thread:  # counters are per thread: start this one's sums
            self._thread = thread
            self._thread_base = pyweb_regions.alloc_counts()
            self._requests_base = self.requests
        self.requests += 1
        return [0, 0]

    def _alloc_end(self, page: str, slot: list[int]) -> None:
        totals = self.page_allocs.setdefault(page, [0, 0, 0])
        totals[0] += 1
        totals[1] += slot[0]
        totals[2] += slot[1]

    def stats(self) -> dict[str, Any]:
        """Everything ``/_pyweb/stats`` shows, as plain data. The ``server_thread`` numbers
        are the calling thread's counters: meaningful when called by the server (the page).
        """
        data: dict[str, Any] = {
            "implementation": pyweb_regions.IMPLEMENTATION,
            "version_tag": pyweb_regions.VERSION_TAG,
            "fast_check": pyweb_regions.FAST_CHECK,
            "modules": {
                name: {"names": g.names, "containers": g.containers}
                for name, g in self.guards.items()
            },
            "mutations_reported": self.mutations,
            "restores": self.restores,
            "arena_pool": pyweb_regions.pool_stats(),
            "alloc_available": self.profile_alloc,
            "alloc_message": self.alloc_message
            or ("" if self.profile_alloc else "allocation accounting is off (--profile-alloc)"),
        }
        if self.profile_alloc:
            data["pages"] = {
                page: {
                    "requests": n,
                    "bytes_per_request": round(b / n, 1),
                    "calls_per_request": round(c / n, 2),
                }
                for page, (n, b, c) in sorted(self.page_allocs.items())
            }
            if self._thread_base is not None:
                b, c = pyweb_regions.alloc_counts()
                n = max(1, self.requests - self._requests_base)
                data["server_thread"] = {
                    "requests": self.requests - self._requests_base,
                    "bytes": b - self._thread_base[0],
                    "calls": c - self._thread_base[1],
                    "bytes_per_request": round((b - self._thread_base[0]) / n, 1),
                }
        return data


def _with_banner(
    response: Response, message: str, header: str = "X-Pyweb-Regions"
) -> Response:
    """Development mode: the page itself says what it did (HTML pages get a banner, every
    response a header: ``X-Pyweb-Regions``, or the one given)."""
    # A new Response: the page's may be a constant shared by every request (a service
    # returning a tree built at import), which must not collect banners.
    value = message.encode("ascii", "backslashreplace").decode("ascii")
    response = Response(response.status, [*response.headers, (header, value)], response.body)
    body = response.body
    if isinstance(body, Fragments):  # a Quot or a node: the banner needs the joined bytes
        body = bytes(body)
    ctype = next((v for k, v in response.headers if k.lower() == "content-type"), "")
    if not isinstance(body, bytes) or "html" not in ctype.lower():
        return response
    banner = (
        '<div class="pyweb-regions" style="background:#fff3cd;border:1px solid #c90;'
        'padding:.5em;margin:.5em;font-family:sans-serif">'
        f"pyweb (development mode): {html.escape(message)}</div>"
    ).encode()
    lower = body[:4096].lower()
    at = lower.find(b"<body")
    if at >= 0:
        end = body.find(b">", at)
        if end >= 0:
            response.body = body[: end + 1] + banner + body[end + 1 :]
            return response
    response.body = banner + body
    return response
