"""The pure-Python twin of ``pyweb_regions._regions``: same names, same behaviour, slower.

Used when the C extension was not built (no compiler) or when ``PYWEB_REGIONS=python`` asks
for it, so the test suite can check that both implementations agree. What the C version
does with pointers this one does with Python operations (SMLserver §2.1 and §5, Hop §3.1):

* :class:`ModuleGuard` has no dict version tag to read (PEP 509's ``ma_version_tag`` is not
  visible from Python), so "did anything change?" compares the module dict and every saved
  container with ``==`` (identity first, item by item, in C): about 2 µs for 50 globals
  instead of a tenth of one, and a global rebound to an *equal* object goes unnoticed.
  When that quick check fails, bindings are compared by identity, as in C.
* :class:`Arena` keeps its pages as ``bytearray`` objects from a process-wide free list.
  ``reset()`` refuses while a view is alive, like the C version: it asks each page (a
  ``bytearray`` with a live ``memoryview`` cannot change size, so a resize probe tells).
* Allocation accounting needs an allocator hook, which only C can install:
  ``alloc_install()`` answers False and ``alloc_counts()`` raises, so nobody reads a
  made-up number (the stats page says "not available").
"""

from __future__ import annotations

import os
import types
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = [
    "ModuleGuard",
    "any_changed",
    "Arena",
    "PAGE_SIZE",
    "VERSION_TAG",
    "FAST_CHECK",
    "pool_stats",
    "alloc_install",
    "alloc_installed",
    "alloc_enable",
    "alloc_counts",
    "alloc_reset_counts",
]

PAGE_SIZE = 16384
VERSION_TAG = 0
FAST_CHECK = "compare"  # no version tag, no dict watcher from Python: compare with ==
_FREE_MAX = 256


def _is_dunder(name: object) -> bool:
    """Left out of snapshots: dunders (the interpreter's) and names that are not str."""
    if type(name) is not str:
        return True
    return len(name) >= 4 and name[:2] == "__" and name[-2:] == "__"


class _Container:
    __slots__ = ("name", "obj", "saved")

    def __init__(self, name: str, obj: Any) -> None:
        self.name = name
        self.obj = obj
        self.saved: Any = None
        self.save()

    def save(self) -> None:
        obj = self.obj
        if isinstance(obj, list):
            self.saved = list(obj)
        elif isinstance(obj, dict):
            self.saved = dict(obj)
        elif isinstance(obj, set):
            self.saved = frozenset(obj)
        else:
            self.saved = bytes(obj)

    def changed(self) -> bool:
        obj, saved = self.obj, self.saved
        if isinstance(obj, list | dict):
            # == on lists and dicts compares items by identity first, then by value; the
            # C version compares pointers only (an equal but different item counts there).
            if len(obj) != len(saved):
                return True
            if isinstance(obj, list):
                return not all(map(_same, obj, saved))
            return any(k not in obj or obj[k] is not v for k, v in saved.items())
        if isinstance(obj, set):
            return len(obj) != len(saved) or not obj.issuperset(saved)
        return obj != saved

    def restore(self) -> bool:
        """Put the saved contents back in place; False if a bytearray view prevents it."""
        obj, saved = self.obj, self.saved
        if isinstance(obj, list):
            obj[:] = saved
        elif isinstance(obj, dict):
            obj.clear()
            obj.update(saved)
        elif isinstance(obj, set):
            obj.clear()
            obj.update(saved)
        else:
            try:
                obj[:] = saved
            except BufferError:
                if len(obj) != len(saved):
                    return False
                memoryview(obj)[:] = saved
        return True


def _same(a: object, b: object) -> bool:
    return a is b


class ModuleGuard:
    """ModuleGuard(module): snapshot a module now; check and restore it later."""

    __slots__ = ("module", "_dict", "_saved", "_containers", "_full", "_pairs")

    def __init__(self, module: types.ModuleType) -> None:
        if not isinstance(module, types.ModuleType):
            raise TypeError(f"ModuleGuard needs a module, got {module!r}")
        self.module = module
        self._dict: dict[str, Any] = module.__dict__
        self._saved: dict[str, Any] = {}
        self._containers: list[_Container] = []
        self._full: dict[Any, Any] = {}
        self._pairs: list[tuple[str, Any, Any]] = []
        self.retake()

    def retake(self) -> None:
        """Take a new snapshot of the module as it is now."""
        self._saved = {k: v for k, v in self._dict.items() if not _is_dunder(k)}
        self._containers = [
            _Container(k, v)
            for k, v in self._saved.items()
            if isinstance(v, list | dict | set | bytearray)
        ]
        self._remember()

    def _remember(self) -> None:
        """What the fast check compares with: the whole dict, and each container's copy."""
        self._full = dict(self._dict)
        self._pairs = [(c.name, c.obj, c.saved) for c in self._containers]

    def _quiet(self) -> bool:
        """The fast "nothing changed" check, in C-level comparisons: ``==`` on the dict and
        on each container compares items by identity first, so when nothing changed no
        ``__eq__`` runs. It can miss a rebinding to an *equal* object (which the exact
        check below would report); anything else goes to the exact check."""
        d = self._dict
        try:
            if d != self._full:
                return False
            for name, obj, saved in self._pairs:
                if d.get(name) is not obj or obj != saved:
                    return False
        except Exception:  # an __eq__ that raises or returns something odd: be exact
            return False
        return True

    @property
    def names(self) -> int:
        return len(self._saved)

    @property
    def containers(self) -> int:
        return len(self._containers)

    @property
    def fast_check(self) -> str:
        return FAST_CHECK

    def _scan(self, mode: int) -> tuple[tuple[str, str], ...]:
        if self._quiet():
            return ()
        changes: list[tuple[str, str]] = []
        current, saved = self._dict, self._saved
        added, rebound, deleted = [], [], []
        seen = 0
        for name, value in current.items():
            if _is_dunder(name):
                continue
            if name in saved:
                seen += 1
                if saved[name] is not value:
                    rebound.append(name)
            elif not isinstance(value, types.ModuleType):  # "import pkg.sub" binds sub
                added.append(name)
        if seen != len(saved):
            deleted = [name for name in saved if name not in current]
        if mode == 0 and (added or rebound or deleted):
            return (("changed", ""),)
        # The C version reports in dict order: rebound and added interleaved, then deleted.
        for name in current:
            if name in rebound:
                changes.append(("rebound", name))
            elif name in added:
                changes.append(("added", name))
        changes.extend(("deleted", name) for name in deleted)
        if mode == 2:
            for name in added:
                del current[name]
            for name in rebound + deleted:
                current[name] = saved[name]
        for c in self._containers:
            if c.changed():
                if mode == 0:
                    return (("changed", ""),)
                kind = "mutated"
                if mode == 2 and not c.restore():
                    kind = "not restored"
                changes.append((kind, c.name))
        if not changes or mode == 2:  # e.g. only a dunder was added: fast again
            self._remember()
        return tuple(changes)

    def changed(self) -> bool:
        """Has the module's state changed since the snapshot?"""
        return bool(self._scan(0))

    def diff(self) -> tuple[tuple[str, str], ...]:
        """What changed: (kind, name) pairs, kind one of added, deleted, rebound, mutated."""
        return self._scan(1)

    def restore(self) -> tuple[tuple[str, str], ...]:
        """Put the snapshot back and say what was undone."""
        return self._scan(2)

    def __repr__(self) -> str:
        return f"<ModuleGuard {self.module!r}: {self.names} names, {self.containers} containers>"


def any_changed(guards: Mapping[Any, Any]) -> bool:
    """Has the module of any guard among the mapping's values changed? (The site asks
    this after every request: one call for all of its guards, as in C.)"""
    return any(guard.changed() for guard in guards.values())


# ---- Arena ------------------------------------------------------------------------------

_free: list[bytearray] = []
_stats = {"in_use": 0, "high_water": 0, "hits": 0, "misses": 0}


def _page_get() -> bytearray:
    if _free:
        _stats["hits"] += 1
        page = _free.pop()
    else:
        _stats["misses"] += 1
        page = bytearray(PAGE_SIZE)
    _stats["in_use"] += 1
    _stats["high_water"] = max(_stats["high_water"], _stats["in_use"])
    return page


def _pages_put(pages: list[bytearray]) -> None:
    _stats["in_use"] -= len(pages)
    room = _FREE_MAX - len(_free)
    if room > 0:
        _free.extend(pages[:room])


def utf8_length(fragments: Iterable[str]) -> int:
    """The UTF-8 length of a sequence of str (ASCII ones are not encoded)."""
    total = 0
    for s in fragments:
        if type(s) is not str and not isinstance(s, str):
            raise TypeError(f"utf8_length() takes str fragments, not {type(s).__name__}")
        total += len(s) if s.isascii() else len(s.encode("utf-8"))
    return total


def _set_fast_check(name: str) -> str:
    """Only "compare" exists here (the C version's tests switch mechanisms with this)."""
    if name != FAST_CHECK:
        raise ValueError(f"fast check {name!r} is not available on this Python")
    return FAST_CHECK


def pool_stats() -> dict[str, int]:
    """page_size, free, in_use, high_water, hits, misses."""
    return {"page_size": PAGE_SIZE, "free": len(_free), **_stats}


def _exported(page: bytearray) -> bool:
    try:  # a bytearray cannot change size while a memoryview of it is alive
        page.append(0)
    except BufferError:
        return True
    del page[-1]
    return False


class Arena:
    """Arena(max_pages=64): a request heap for bytes, in region pages."""

    def __init__(self, max_pages: int = 64) -> None:
        if max_pages < 1:
            raise ValueError(f"Arena(max_pages={max_pages}): at least 1 page")
        self.max_pages = max_pages
        self._pages: list[bytearray] = []
        self._used: list[int] = []
        self._size = 0
        self._closed = False
        self.generation = 0
        self.high_water = 0
        # No page yet: one is taken from the free list by the first write (an idle
        # keep-alive connection holds an arena but no memory).

    # -- internals
    def _ok(self) -> None:
        if self._closed:
            raise ValueError("the arena is closed")

    def _add_page(self) -> None:
        if len(self._pages) >= self.max_pages:
            raise MemoryError(
                f"arena full: {len(self._pages)} pages of {PAGE_SIZE} bytes in use, "
                f"the limit is {self.max_pages} pages"
            )
        self._pages.append(_page_get())
        self._used.append(0)
        self.high_water = max(self.high_water, len(self._pages))

    def _mark(self) -> tuple[int, int, int]:
        return len(self._pages), self._used[-1] if self._used else 0, self._size

    def _truncate(self, mark: tuple[int, int, int]) -> None:
        npages, used, size = mark
        extra = self._pages[npages:]
        del self._pages[npages:]
        del self._used[npages:]
        _pages_put(extra)
        if npages:
            self._used[-1] = used
        self._size = size

    def _room(self) -> int:
        """Free bytes in the last page (0 when there is no page yet)."""
        return PAGE_SIZE - self._used[-1] if self._used else 0

    def _copy(self, data: bytes | memoryview) -> None:
        view = memoryview(data).cast("B")
        n, start = len(view), 0
        while start < n:
            room = self._room()
            if room == 0:
                self._add_page()
                room = PAGE_SIZE
            k = min(room, n - start)
            at = self._used[-1]
            self._pages[-1][at : at + k] = view[start : start + k]
            self._used[-1] = at + k
            self._size += k
            start += k

    def _write_one(self, data: Any) -> None:
        if isinstance(data, str):
            data = data.encode("utf-8")
        if type(data) is bytes and self._used:
            at, n = self._used[-1], len(data)
            if at + n <= PAGE_SIZE:  # the common case: no memoryview, one slice copy
                self._pages[-1][at : at + n] = data
                self._used[-1] = at + n
                self._size += n
                return
        try:
            self._copy(data)
        except TypeError:
            raise TypeError(
                f"arena.write() takes bytes-like objects or str, not {type(data).__name__}"
            ) from None

    # -- API
    @property
    def pages(self) -> int:
        return len(self._pages)

    @property
    def exports(self) -> int:
        return sum(1 for page in self._pages if _exported(page))

    def write(self, data: Any) -> None:
        """Append bytes-like data or a str (UTF-8); MemoryError when full, nothing written."""
        self._ok()
        mark = self._mark()
        try:
            self._write_one(data)
        except BaseException:
            self._truncate(mark)
            raise

    def writev(self, fragments: Iterable[Any]) -> None:
        """Append every fragment, all or nothing."""
        self._ok()
        mark = self._mark()
        try:
            for data in fragments:
                self._write_one(data)
        except BaseException:
            self._truncate(mark)
            raise

    def tail(self, min: int = 1) -> memoryview:  # noqa: A002 - the C signature
        """Writable memoryview of the free space of the last page: recv_into, then commit."""
        self._ok()
        if not 1 <= min <= PAGE_SIZE:
            raise ValueError(f"tail({min}): between 1 and the page size ({PAGE_SIZE}) bytes")
        if self._room() < min:
            self._add_page()
        return memoryview(self._pages[-1])[self._used[-1] :]

    def commit(self, n: int) -> None:
        """``n`` bytes were written into :meth:`tail`."""
        self._ok()
        free = self._room()
        if not 0 <= n <= free:
            raise ValueError(f"commit({n}): the tail has {free} free bytes")
        if n:
            self._used[-1] += n
            self._size += n

    def recv(self, fd: Any) -> int:
        """One read from ``fd`` (an int or an object with ``fileno()``) into the free space of
        the last page (a new page if it is full), committed; 0 at end of file;
        BlockingIOError when nothing is there (nothing committed, a page taken for the read
        goes back)."""
        self._ok()
        if not isinstance(fd, int):
            fd = fd.fileno()
        if fd < 0:  # what the C version's PyObject_AsFileDescriptor says
            raise ValueError(f"file descriptor cannot be a negative integer ({fd})")
        mark = self._mark()
        view = self.tail()
        try:
            n = os.readv(fd, [view])
        except BaseException:
            view.release()
            self._truncate(mark)  # a page taken for the read goes back
            raise
        view.release()
        if n:
            self.commit(n)
        else:  # end of file
            self._truncate(mark)
        return n

    def views(self) -> list[memoryview]:
        """Read-only memoryviews of the contents, one per page (for sendmsg)."""
        self._ok()
        return [
            memoryview(page)[:used].toreadonly()
            for page, used in zip(self._pages, self._used, strict=True)
            if used
        ]

    def send(self, fd: int, start: int = 0) -> int:
        """Write the contents from byte ``start`` on to ``fd`` with one ``os.writev``;
        bytes written (BlockingIOError when it would block)."""
        self._ok()
        if not 0 <= start <= self._size:
            raise ValueError(f"send(fd, {start}): start must be between 0 and {self._size}")
        views = []
        try:
            for page, used in zip(self._pages, self._used, strict=True):
                if start >= used:
                    start -= used
                    continue
                views.append(memoryview(page)[start:used])
                start = 0
            return os.writev(fd, views) if views else 0
        finally:
            for view in views:
                view.release()

    def getvalue(self) -> bytes:
        self._ok()
        return b"".join(
            bytes(memoryview(page)[:used])
            for page, used in zip(self._pages, self._used, strict=True)
        )

    def _refuse_if_exported(self, what: str) -> None:
        n = self.exports
        if n:
            raise BufferError(f"cannot {what} arena: {n} exported view(s) still alive")

    def reset(self) -> None:
        """Empty the arena, every page back to the free list; BufferError while a view is
        alive."""
        self._ok()
        self._refuse_if_exported("reset")
        _pages_put(self._pages)
        self._pages = []
        self._used = []
        self._size = 0
        self.generation += 1

    def close(self) -> None:
        if self._closed:
            return
        self._refuse_if_exported("close")
        _pages_put(self._pages)
        self._pages = []
        self._used = []
        self._size = 0
        self._closed = True

    def __len__(self) -> int:
        return self._size

    def __del__(self) -> None:
        if not getattr(self, "_closed", True) and self._pages:
            _pages_put(self._pages)
            self._pages = []


# ---- allocation accounting: not available without C ---------------------------------------

_NOT_AVAILABLE = "allocation accounting is not available in the Python fallback of pyweb_regions"


def alloc_install() -> bool:
    """Without C there is no allocator hook: False."""
    return False


def alloc_installed() -> bool:
    return False


def alloc_enable(flag: bool) -> None:
    if flag:
        raise RuntimeError(_NOT_AVAILABLE)


def alloc_counts() -> tuple[int, int]:
    raise RuntimeError(_NOT_AVAILABLE)


def alloc_reset_counts() -> None:
    raise RuntimeError(_NOT_AVAILABLE)
