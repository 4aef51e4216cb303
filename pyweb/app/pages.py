"""Page scripts and the site's library: compiled once, run once per request (SMLserver §2.1).

In SMLserver a *script* is a file whose top-level code runs for every request, and the
*library* is the code scripts share, initialised once; compiling and caching both is what
Table 1's columns five and six measure (no script caching: 37% slower on average; library
initialisation per request: 44% slower). pyweb keeps that split:

* ``NAME.py`` in the site directory is a **script**. It is compiled once, with
  ``ast.PyCF_ALLOW_TOP_LEVEL_AWAIT`` so a page can ``await`` at top level like a notebook
  cell, and its code object is cached. Each request runs it in a fresh globals dict holding
  ``conn``; nothing a script assigns survives the request.
* ``_NAME.py`` files and packages (directories with ``__init__.py``) are the **library**. A
  script imports them (``import _layout``); Python's import system initialises each one once
  per process and keeps it in ``sys.modules``. They are never served.
* A file that defines *services* (``@service``, Hop §2.1) is a **service module**: it is
  imported once when the site loads and its services are bound to their URLs. It is not a
  script (its top level does not run per request); see :mod:`pyweb.app.services`.

Library modules are found by a finder appended to ``sys.meta_path`` that knows only the
site's library names. Appended, not prepended: a page named ``calendar.py`` must never
shadow the standard library's ``calendar``, and scripts are not importable at all.
"""

from __future__ import annotations

import ast
import builtins
import importlib.abc
import importlib.machinery
import importlib.util
import inspect
import os
import sys
import types
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Generator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyweb.protocol.response import Response
from pyweb.regions import GuardedLoader

__all__ = [
    "Script",
    "compile_script",
    "defines_services",
    "is_library_path",
    "LibraryFinder",
    "library_finder",
    "no_response",
    "RETURN_HINT",
]

RETURN_HINT = (
    "; a page is a script, not a function: it answers with conn.return_(...), "
    'so write conn.return_("<h1>...</h1>") instead of return'
)
"""Added to "'return' outside function": a Flask-style page that returns its HTML."""

COMPILE_FLAGS = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
"""How a page file is compiled: a script may ``await`` at its top level."""


@dataclass(slots=True)
class Script:
    """A compiled page script (``code``) and the file version it was compiled from."""

    path: str
    """Absolute path of the ``.py`` file."""
    name: str
    """What messages call it: the path relative to the site's parent (``pages/guess.py``)."""
    code: types.CodeType
    is_async: bool
    """The script awaits at top level: running it gives a coroutine to await."""
    version: tuple[int, int]
    """``(st_mtime_ns, st_size)`` when compiled; a different stat means recompile (dev)."""
    scope: dict[str, Any] = field(init=False, repr=False, compare=False)
    """The globals every run starts from, made once: each run gets a copy of its own."""
    defines: bool = field(init=False, repr=False, compare=False)
    """The script defines a function, class, lambda or generator, which holds the script's
    globals, which hold it: a cycle, broken by emptying them after the request
    (:func:`end_scope`). A script without one frees its globals as it ends."""

    def __post_init__(self) -> None:
        self.scope = {
            "__name__": "__page__",
            "__file__": self.path,
            "__builtins__": builtins,
            "conn": None,
        }
        self.defines = _makes_functions(self.code)

    def run(self, conn: Any) -> Awaitable[None]:
        """Run the script's top-level code once, for one request, in fresh globals (a copy
        of :attr:`scope`: nothing the script assigns survives the request); await what it
        returns.

        A script that awaits at top level gives a coroutine, which runs when awaited. One
        that does not has run by the time this returns, and gives an awaitable that is
        already done: no coroutine is made for it (docs/performance.md)."""
        scope = self.scope.copy()
        if self.defines:  # its functions hold these globals: the site empties them (end_scope)
            conn._scope = scope
        scope["conn"] = conn
        result = eval(self.code, scope)  # noqa: S307 - this *is* the page
        return result if self.is_async else DONE


def no_response(name: str, filename: str | None) -> str:
    """The sentence for a page that ended without an answer; naming ``print()`` when the
    page calls it, the slip of a student who expects printed text to be the page."""
    sentence = (f"{name} finished without giving a response: call conn.return_(...) "
                "(or return a value from a service)")  # fmt: skip
    try:
        prints = filename is not None and "print(" in Path(filename).read_text(encoding="utf-8")
    except OSError:
        prints = False
    if prints:
        sentence += (". print() writes to the server's console, not to the page: give the "
                     "text to conn.return_(...) instead")  # fmt: skip
    return sentence


_CALLED_AT_ONCE = frozenset({"<listcomp>", "<setcomp>", "<dictcomp>"})


def _makes_functions(code: types.CodeType) -> bool:
    """Whether ``code`` makes a function (or class, lambda, generator) that may be kept: a
    list, set or dict comprehension's function is called at once and dropped."""
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            if const.co_name not in _CALLED_AT_ONCE or _makes_functions(const):
                return True
    return False


def end_scope(scope: dict[str, Any], response: Response) -> Response:
    """Empty a script's globals once its reply no longer needs them: now for a reply in
    memory, when the body ends for a streamed one (its generator may read the page's names).

    Why: a function the page defines holds the globals (``__globals__``) that hold it, a
    cycle, so without this everything the page built waited for Python's cyclic collector
    (docs/performance.md). Another kind of response (a WebSocket upgrade, whose session may
    be the page's function) keeps its globals: the collector frees them later."""
    if type(response) is not Response:
        return response
    body = response.body
    if type(body) is bytes or not hasattr(body, "__aiter__"):
        scope.clear()
        return response
    return Response(response.status, response.headers, ScopedStream(body, scope))


class ScopedStream:
    """A script's streamed body that empties the script's globals when it ends: run out,
    or closed by the server (``aclose``: after an error, a client gone, a HEAD request)."""

    __slots__ = ("_body", "_pieces", "_scope")

    def __init__(self, body: AsyncIterable[bytes], scope: dict[str, Any]) -> None:
        self._body = body
        self._pieces: AsyncIterator[bytes] | None = None
        self._scope = scope

    def __aiter__(self) -> ScopedStream:
        self._pieces = self._body.__aiter__()
        return self

    async def __anext__(self) -> bytes:
        try:
            return await self._pieces.__anext__()  # type: ignore[union-attr]
        except StopAsyncIteration:  # run out: the page's generator has ended
            self._scope.clear()
            raise

    async def aclose(self) -> None:
        """Close the body, then empty the globals: the body's own cleanup (a generator's
        ``finally``) may read the page's names."""
        body = self._pieces if self._pieces is not None else self._body
        aclose = getattr(body, "aclose", None)
        try:
            if aclose is not None:
                await aclose()
        finally:
            self._scope.clear()


class _Done:
    """An awaitable that is already done (``await _DONE`` returns None at once)."""

    __slots__ = ()

    def __await__(self) -> Generator[Any, None, None]:
        return iter(())  # type: ignore[return-value]


DONE = _Done()
"""What :meth:`Script.run` returns for a script that has run (the site need not await it)."""


def compile_script(path: str, name: str, source: bytes | None = None) -> Script:
    """Compile ``path`` as a page script; a ``SyntaxError`` carries the file and line."""
    st = os.stat(path)
    if source is None:
        with open(path, "rb") as f:
            source = f.read()
    try:
        code = compile(source, path, "exec", flags=COMPILE_FLAGS, dont_inherit=True, optimize=0)
    except SyntaxError as err:
        if err.msg == "'return' outside function":  # the slip of a Flask user: say the fix
            err.msg += RETURN_HINT
        raise
    is_async = bool(code.co_flags & inspect.CO_COROUTINE)
    return Script(path, name, code, is_async, (st.st_mtime_ns, st.st_size))


def _decorator_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


_SERVICE_DECORATORS = ("service", "trap", "websocket", "every", "daily", "weekly")
"""Decorators that make a file a service module (the last three schedule a job: pyweb.jobs)."""


def defines_services(tree: ast.Module) -> bool:
    """Whether a module's top level defines a function decorated with ``@service``,
    ``@trap``, ``@websocket`` or a schedule (``@every``, ``@daily``, ``@weekly``)."""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            if any(_decorator_name(d) in _SERVICE_DECORATORS for d in node.decorator_list):
                return True
    return False


def is_library_path(root: str, path: str) -> bool:
    """Library code: a ``_name`` file or directory on the way, or inside a package."""
    rel = os.path.relpath(path, root)
    parts = rel.split(os.sep)
    if any(part.startswith("_") for part in parts):
        return True
    directory = root
    for part in parts[:-1]:
        directory = os.path.join(directory, part)
        if os.path.isfile(os.path.join(directory, "__init__.py")):
            return True
    return False


class LibraryFinder(importlib.abc.MetaPathFinder):
    """Finds the library modules of the sites being served, and nothing else.

    Only top-level names are looked up here: ``_name`` modules and packages directly in a
    site's root. Submodules of a package are found by Python's own finder through the
    package's ``__path__``. When two sites are loaded in one process, the one loaded last
    is asked first.
    """

    def __init__(self) -> None:
        self.roots: list[str] = []

    def add_root(self, root: str) -> None:
        if root in self.roots:
            self.roots.remove(root)
        self.roots.insert(0, root)

    def find_spec(
        self, fullname: str, path: Any = None, target: Any = None
    ) -> importlib.machinery.ModuleSpec | None:
        if path is not None or "." in fullname:
            return None
        for root in self.roots:
            package = os.path.join(root, fullname, "__init__.py")
            # GuardedLoader: a plain source loader that snapshots the module's state once
            # its initialisation is done (pyweb.regions, SMLserver §2.1's initial heap).
            if os.path.isfile(package):
                return importlib.util.spec_from_file_location(
                    fullname,
                    package,
                    loader=GuardedLoader(fullname, package),
                    submodule_search_locations=[os.path.dirname(package)],
                )
            if fullname.startswith("_"):
                module = os.path.join(root, fullname + ".py")
                if os.path.isfile(module):
                    return importlib.util.spec_from_file_location(
                        fullname, module, loader=GuardedLoader(fullname, module)
                    )
        return None


library_finder = LibraryFinder()


def install_library_finder(root: str) -> None:
    """Make ``root``'s library importable (once per process for the finder itself)."""
    if library_finder not in sys.meta_path:
        sys.meta_path.append(library_finder)
    library_finder.add_root(root)


def library_modules(root: str) -> list[types.ModuleType]:
    """The modules in ``sys.modules`` loaded from under ``root``."""
    prefix = root.rstrip(os.sep) + os.sep
    found = []
    for module in list(sys.modules.values()):
        file = getattr(module, "__file__", None)
        if file and file.startswith(prefix):
            found.append(module)
    return found


def forget_library(root: str) -> None:
    """Drop the site's modules from ``sys.modules`` so the next import re-runs them (dev)."""
    prefix = root.rstrip(os.sep) + os.sep
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if file and file.startswith(prefix):
            del sys.modules[name]
    importlib.invalidate_caches()
