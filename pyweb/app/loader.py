"""Loading a site: SMLserver's compile step, and development mode's reload (SMLserver §2.1).

In production the site is loaded once: every script compiled, every service module
imported, every template parsed; any error stops the server from starting
(:class:`SiteError`, listing them all, like ``pyweb check``). In development mode
(``dev=True``) errors are kept and shown on the pages they break, and every request first
looks for changed files: a changed script is recompiled, a changed library or service
module is re-imported, a new file is found.

:class:`Loader` is the first layer of :class:`pyweb.app.site.Site`: what the site *has*
(scripts, services, WebSocket URLs, traps, templates). :mod:`pyweb.app.routing` decides
which of them answers a request, :mod:`pyweb.app.runner` runs it.
"""

from __future__ import annotations

import ast
import importlib.util
import logging
import os
import sys
import traceback
from dataclasses import dataclass
from typing import Any

from pyweb.regions import SiteRegions

from . import pages, uploads
from .routes import Router, script_pattern
from .services import Service, bind
from .templates import Templates
from .traps import Trap
from .websockets import WebSocketRoute

_site_log = logging.getLogger("pyweb.site")

__all__ = ["Loader", "Problem", "SiteError"]


@dataclass(frozen=True, slots=True)
class Problem:
    """One error found while loading a site: where, and what."""

    path: str
    """The file, relative to the site directory's parent (``pages/guess.py``)."""
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


class SiteError(Exception):
    """A site that cannot be served: its :attr:`problems`, every one of them."""

    def __init__(self, root: str, problems: list[Problem]) -> None:
        self.root = root
        self.problems = problems
        listing = "\n".join(f"  {p}" for p in problems)
        super().__init__(f"{len(problems)} error(s) in site {root}:\n{listing}")


class Loader:
    """The site's files, compiled and imported (see the module doc)."""

    root: str
    dev: bool
    templates: Templates | None
    regions: SiteRegions | None
    scripts: dict[str, pages.Script]
    services: dict[str, Service]
    _patterned: dict[str, Service]
    """A path with parameters -> the first service bound there (:func:`~.services.bind`)."""
    _clashes: dict[str, Problem]
    """A path two services claim for one method -> the load error (a 500 in development)."""
    websockets: dict[str, WebSocketRoute]
    service_routes: Router
    script_routes: Router
    traps: list[Trap]
    _known: dict[str, Any]
    problems: list[Problem]
    _broken: dict[str, Problem]
    _syntax_errors: dict[str, SyntaxError]
    _stamps: dict[str, int]
    _display_base: str

    def display(self, path: str) -> str:
        return os.path.relpath(path, self._display_base)

    def _problem(self, path: str, line: int, message: str) -> Problem:
        problem = Problem(self.display(path), line, message)
        self.problems.append(problem)
        if self.dev and _site_log.hasHandlers():
            # A running server's error log (the terminal) says it when a changed file is
            # loaded again; at start-up `pyweb serve` lists the problems itself.
            _site_log.error("site error: %s", problem)
        return problem

    def _walk(self) -> list[str]:
        found: list[str] = []
        for directory, dirs, files in os.walk(self.root):
            dirs[:] = sorted(
                d
                for d in dirs
                if not d.startswith(".")
                and d != "__pycache__"
                and not (directory == self.root and d == "templates")
            )
            # Editor lock and autosave files (.#guest.py, #guest.py#) and hidden files are not
            # pages: loading them would run an editor's half-saved copy under a URL.
            found.extend(
                os.path.join(directory, f)
                for f in sorted(files)
                if f.endswith(".py") and not f.startswith((".", "#"))
            )
        return found

    def _load(self) -> None:
        """Scan the site: compile scripts and library, import service modules, parse templates."""
        self.problems = []
        self._broken = {}
        self._syntax_errors = {}
        self.scripts = {}
        self.services = {}
        self._patterned = {}  # path with parameters -> its first service
        self._clashes = {}  # a path two services claim for one method -> why (dev)
        self.websockets = {}
        self.service_routes = Router()
        self.script_routes = Router()
        self.traps = []
        self._known = {}
        template_dir = os.path.join(self.root, "templates")
        if not os.path.isdir(template_dir):
            self.templates = None
        elif self.templates is None:
            self.templates = Templates(template_dir, dev=self.dev)
        self._forget_foreign_library()
        for path in self._walk():
            self._load_file(path)
        if self.templates is not None:
            for path, line, message in self.templates.check():
                self._problem(path, line, message)
        for name, script in self.scripts.items():
            svc = self.services.get("/" + name)
            if svc is not None:
                self._problem(script.path, 1, f"{svc!r} has the same URL as this script")
            try:
                pattern = script_pattern(name)
            except ValueError as exc:
                self._problem(script.path, 1, str(exc))
                continue
            if pattern is not None:
                self.script_routes.add(pattern, name)  # the URL name: dev mode recompiles
        for first, second in self.script_routes.ambiguous(self.service_routes):
            self._problem(
                self.root,
                1,
                f"ambiguous routes: {first.text} and {second.text} match the same paths; "
                f"rename one",
            )
        if self.dev:
            self._stamps = self._take_stamps()

    def _load_file(self, path: str) -> None:
        if not uploads.may_load(self.root, path):
            return  # data/ holds uploads: nothing there is ever code (uploads.py)
        try:
            with open(path, "rb") as f:
                source = f.read()
        except OSError as err:
            self._problem(path, 1, f"cannot read: {err}")
            return
        if pages.is_library_path(self.root, path):
            try:  # compiled only: importing is the first script's job (it runs init code)
                compile(source, path, "exec", dont_inherit=True)
            except SyntaxError as err:
                self._problem(path, err.lineno or 1, f"SyntaxError: {err.msg}")
            name = os.path.relpath(path, self.root).split(os.sep)[0].removesuffix(".py")
            if name in sys.stdlib_module_names:
                self._problem(
                    path,
                    1,
                    f"library module {name!r} has the name of a standard module, "
                    f"which wins; rename it",
                )
            return
        try:
            tree = compile(source, path, "exec", flags=ast.PyCF_ONLY_AST | pages.COMPILE_FLAGS)
        except SyntaxError as err:
            problem = self._problem(path, err.lineno or 1, f"SyntaxError: {err.msg}")
            self._broken[path] = problem
            self._syntax_errors[path] = err.with_traceback(None)  # the compile step is not theirs
            return
        if pages.defines_services(tree):
            self._import_services(path)
            return
        try:
            script = pages.compile_script(path, self.display(path), source)
        except SyntaxError as err:  # e.g. 'return' outside function: found by compile
            self._broken[path] = self._problem(path, err.lineno or 1, f"SyntaxError: {err.msg}")
            self._syntax_errors[path] = err.with_traceback(None)  # the compile step is not theirs
            return
        self.scripts[self._url_name(path)] = script

    def _url_name(self, path: str) -> str:
        return os.path.relpath(path, self.root).removesuffix(".py").replace(os.sep, "/")

    def _import_services(self, path: str) -> None:
        module_name = "pyweb_site_services." + self._url_name(path).replace("/", ".")
        spec = importlib.util.spec_from_file_location(module_name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        try:
            spec.loader.exec_module(module)
        except Exception as exc:
            del sys.modules[module_name]
            line = 1
            for frame in traceback.extract_tb(exc.__traceback__):
                if frame.filename.startswith(self.root + os.sep):
                    line = frame.lineno or 1
            if isinstance(exc, SyntaxError) and exc.filename == path:
                line = exc.lineno or 1
            self._problem(path, line, f"{type(exc).__name__}: {exc}")
            return
        for value in vars(module).values():
            if isinstance(value, WebSocketRoute):
                other = self.websockets.get(value.path) or self.services.get(value.path)
                if other is not None and other is not value:
                    self._problem(path, 1, f"{value!r} and {other!r} have the same URL")
                    continue
                self.websockets[value.path] = value
            if isinstance(value, Trap):
                self.traps.append(value)
            if isinstance(value, Service):  # one service per (path, method)
                table = self.services if value.pattern is None else self._patterned
                fresh = value.path not in table
                clash = bind(table, value)
                if clash is not None:
                    self._clashes[value.path] = self._problem(path, 1, clash)
                elif fresh and value.pattern is not None:
                    self.service_routes.add(value.pattern, value)

    def _forget_foreign_library(self) -> None:
        """Another site loaded earlier in this process may have library modules with the
        same names; drop them so this site's are imported (tests serve many sites)."""
        names = set()
        try:
            entries = os.listdir(self.root)
        except OSError:
            return
        for entry in entries:
            if entry.startswith("_") and entry.endswith(".py"):
                names.add(entry[:-3])
            elif os.path.isfile(os.path.join(self.root, entry, "__init__.py")):
                names.add(entry)
        for name in list(sys.modules):
            top = name.split(".", 1)[0]
            if top in names:
                file = getattr(sys.modules[name], "__file__", None) or ""
                if not file.startswith(self.root + os.sep):
                    del sys.modules[name]

    def _take_stamps(self) -> dict[str, int]:
        """mtime of every directory, service module and imported library module."""
        watched: list[str] = []
        for directory, dirs, _files in os.walk(self.root):
            dirs[:] = [d for d in dirs if not d.startswith(".") and d != "__pycache__"]
            watched.append(directory)
        watched.extend(
            s.func.__code__.co_filename
            for s in self.services.values()
            if hasattr(s.func, "__code__")
        )
        watched.extend(m.__file__ for m in pages.library_modules(self.root) if m.__file__)
        stamps = {}
        for path in watched:
            try:
                stamps[path] = os.stat(path).st_mtime_ns
            except OSError:
                stamps[path] = -1
        return stamps

    def refresh(self) -> bool:
        """Reload the site if any watched file changed (dev); True if it reloaded."""
        for path, stamp in self._stamps.items():
            try:
                now = os.stat(path).st_mtime_ns
            except OSError:
                now = -1
            if now != stamp:
                break
        else:
            # Library modules imported since (by a script) are watched from now on.
            for module in pages.library_modules(self.root):
                file = module.__file__
                if file and file not in self._stamps:
                    try:
                        self._stamps[file] = os.stat(file).st_mtime_ns
                    except OSError:
                        self._stamps[file] = -1
            return False
        pages.forget_library(self.root)
        self._load()
        return True

    def _dev_script(self, name: str) -> pages.Script | Problem | None:
        """Find ``NAME.py`` now, recompiling it if it changed since it was compiled."""
        if not name or any(
            not seg or seg.startswith((".", "_")) or seg == "__pycache__" for seg in name.split("/")
        ):
            return None
        path = os.path.join(self.root, *name.split("/")) + ".py"
        try:
            st = os.stat(path)
        except (OSError, ValueError):
            return None
        script = self.scripts.get(name)
        if script is not None and script.version == (st.st_mtime_ns, st.st_size):
            return script
        if pages.is_library_path(self.root, path):
            return None
        self.problems = [p for p in self.problems if p.path != self.display(path)]
        self._broken.pop(path, None)
        self._syntax_errors.pop(path, None)
        self.scripts.pop(name, None)
        self._load_file(path)
        return self.scripts.get(name) or self._broken.get(path)
