"""The cell magics: ``%%page``, ``%%template`` and ``%%file_in_site`` write a cell into the site.

This is the editor half of the SMLserver book's set-up (§2): the cell is the script, the
site directory is where the server finds it, and a dev-mode server compiles a rewritten
page again on its next request. ``%load_ext pyweb.notebook`` registers the magics
(:func:`load_ipython_extension`); they write to the last server :func:`pyweb.notebook.serve`
started, or to the one named with ``--server VAR``.

A page with a syntax error is refused before it is written: the cell fails with one red
line, like a failed check, and the server keeps the page's previous version.
"""

from __future__ import annotations

import ast
import os
import shlex
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pyweb.notebook.server import NotebookServer, current

__all__ = [
    "MagicUsageError",
    "PageSyntaxError",
    "page_magic",
    "template_magic",
    "file_in_site_magic",
    "load_ipython_extension",
]


class MagicUsageError(ValueError):
    """A ``%%page``/``%%template`` line that cannot be understood."""


def _parse_line(line: str, magic: str) -> tuple[str, bool, str | None]:
    """``NAME [--show] [--server VAR]`` -> (NAME, show, VAR)."""
    try:
        words = shlex.split(line)
    except ValueError as exc:
        raise MagicUsageError(f"%%{magic} {line}: {exc}") from None
    name: str | None = None
    show = False
    server_var: str | None = None
    i = 0
    while i < len(words):
        word = words[i]
        if word == "--show":
            show = True
        elif word == "--server":
            if i + 1 == len(words):
                raise MagicUsageError(f"%%{magic}: --server needs a variable name")
            i += 1
            server_var = words[i]
        elif word.startswith("-"):
            raise MagicUsageError(
                f"%%{magic}: unknown option {word!r} (known: --show, --server VAR)"
            )
        elif name is None:
            name = word
        else:
            raise MagicUsageError(f"%%{magic}: one name only, got {name!r} and {word!r}")
        i += 1
    if name is None:
        raise MagicUsageError(f"%%{magic} needs a name, e.g. %%{magic} hello")
    return name, show, server_var


def _server_for(server_var: str | None, shell: Any) -> NotebookServer:
    if server_var is None:
        server = current()
    else:
        namespace: Mapping[str, Any] = getattr(shell, "user_ns", None) or {}
        if server_var not in namespace:
            raise RuntimeError(f"--server {server_var}: there is no variable {server_var!r}")
        server = namespace[server_var]
        if not isinstance(server, NotebookServer):
            raise RuntimeError(
                f"--server {server_var}: {server_var} is a {type(server).__name__}, "
                "not a server from pyweb.notebook.serve()"
            )
    if server.stopped:
        raise RuntimeError(
            "that pyweb server was stopped; start a new one: srv = pyweb.notebook.serve()"
        )
    if server.site_dir is None:
        raise RuntimeError(
            "that pyweb server serves a handler, not a directory, so there is nowhere to "
            "write pages; start one on a directory: srv = pyweb.notebook.serve()"
        )
    return server


def _safe_relative(path: str) -> Path:
    relative = Path(path)
    if relative.is_absolute() or ".." in relative.parts or not relative.parts:
        raise MagicUsageError(
            f"{path!r} must be a path inside the site directory (relative, without '..')"
        )
    return relative


def _write(target: Path, text: str) -> None:
    """Write atomically (a request never sees half a page) and make sure the
    modification time changes, so a dev-mode server notices the new version."""
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        old = target.stat().st_mtime_ns
    except FileNotFoundError:
        old = None
    # The temporary name ends in .tmp: a dev-mode site scanning for new pages never takes
    # it for a script or a template.
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".~", suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, target)
    if old is not None and target.stat().st_mtime_ns <= old:
        os.utime(target, ns=(old + 1_000_000, old + 1_000_000))


class PageSyntaxError(Exception):
    """A ``%%page`` cell that is not valid Python: the page was not written.

    Shown in a notebook as one red line, like a failed check (no traceback into the magic),
    naming the page's line and what Python expected there. Not a :class:`SyntaxError`
    subclass on purpose: IPython prints those with its own multi-line syntax-error display.
    Attributes as :class:`SyntaxError`'s: ``msg``, ``filename``, ``lineno``, ``text``."""

    def __init__(self, error: SyntaxError, filename: str) -> None:
        self.msg = error.msg
        self.filename = filename
        self.lineno = error.lineno
        self.text = error.text
        where = f"line {self.lineno} of {os.path.basename(filename)}"
        code = f": {self.text.strip()}" if self.text and self.text.strip() else ""
        super().__init__(f"{self.msg} ({where}{code}); the page was not written")

    def _render_traceback_(self) -> list[str]:
        # IPython shows an exception with this hook by the lines it returns.
        return [f"\x1b[1;31mSyntax error:\x1b[0m {self}"]


def _check_syntax(cell: str, target: Path) -> None:
    """Raise :class:`PageSyntaxError` if ``cell`` does not compile as a page's script."""
    try:
        # The flags a page is compiled with (pyweb.app.pages): top-level await is allowed.
        compile(cell, str(target), "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)
    except SyntaxError as exc:
        if exc.msg == "'return' outside function":  # the same sentence as pyweb serve's
            from pyweb.app.pages import RETURN_HINT

            exc.msg += RETURN_HINT
        raise PageSyntaxError(exc, str(target)) from None


def page_magic(line: str, cell: str, *, shell: Any = None) -> Path:
    """``%%page NAME [--show] [--server VAR]``: the cell becomes ``<site>/NAME.py``,
    served at ``/NAME``. A cell with a syntax error raises :class:`PageSyntaxError` and
    is not written (the server keeps serving the page's previous version, if any)."""
    name, show, server_var = _parse_line(line, "page")
    if name.endswith(".py"):
        name = name[:-3]
    relative = _safe_relative(name + ".py")
    server = _server_for(server_var, shell)
    target = server.site_dir / relative  # type: ignore[operator]
    _check_syntax(cell, target)
    _write(target, cell)
    url_path = "/" + relative.with_suffix("").as_posix()
    print(f"wrote {relative.as_posix()}: {server.url.rstrip('/')}{url_path}")
    if show:
        server.show(url_path)
    return target


def template_magic(line: str, cell: str, *, shell: Any = None) -> Path:
    """``%%template NAME [--show] [--server VAR]``: the cell becomes
    ``<site>/templates/NAME.html`` (a jinja2 page served at ``/NAME``)."""
    name, show, server_var = _parse_line(line, "template")
    if name.endswith(".html"):
        name = name[:-5]
    relative = Path("templates") / _safe_relative(name + ".html")
    server = _server_for(server_var, shell)
    _write(server.site_dir / relative, cell)  # type: ignore[operator]
    url_path = "/" + Path(name).as_posix()
    print(f"wrote {relative.as_posix()}: {server.url.rstrip('/')}{url_path}")
    if show:
        server.show(url_path)
    return server.site_dir / relative  # type: ignore[operator]


def file_in_site_magic(line: str, cell: str, *, shell: Any = None) -> Path:
    """``%%file_in_site PATH [--show] [--server VAR]``: the cell becomes ``<site>/PATH``
    as it is (a static file, a library module ``_name.py``, a service module ...)."""
    name, show, server_var = _parse_line(line, "file_in_site")
    relative = _safe_relative(name)
    server = _server_for(server_var, shell)
    _write(server.site_dir / relative, cell)  # type: ignore[operator]
    print(f"wrote {relative.as_posix()}")
    if show:
        server.show("/" + relative.as_posix())
    return server.site_dir / relative  # type: ignore[operator]


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext pyweb.notebook``: registers ``%%page``, ``%%template``, ``%%file_in_site``."""
    for name, function in (
        ("page", page_magic),
        ("template", template_magic),
        ("file_in_site", file_in_site_magic),
    ):

        def magic(line: str, cell: str, _function: Callable[..., Path] = function) -> None:
            _function(line, cell, shell=ipython)  # returns None: nothing echoed under the cell

        magic.__doc__ = function.__doc__
        ipython.register_magic_function(magic, magic_kind="cell", magic_name=name)
