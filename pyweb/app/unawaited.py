"""A forgotten ``await`` in a page, named: the call, its line, and how to write it.

``n = db.one_field("select count(*) from todo")`` without ``await`` does not run the query:
it makes a *coroutine*, a note of work to do, and ``f"{n} items"`` then prints that note
(``<coroutine object one_field at 0x7f...>``), which a browser takes for a tag and hides.
The page looks fine and says nothing. Python notices only when the forgotten coroutine is
thrown away: it warns "coroutine 'one_field' was never awaited" on the console.

pyweb listens for exactly that moment (:func:`install` wraps the function Python calls to
warn) while a page is running, and the page is then answered with a 500 whose message names
the call and the fix: ``write 'await db.one_field(...)'`` (:func:`explain`). The call is found
in the page's source (a call of that name not under ``await``), so the message can quote it
as the student wrote it.
"""

from __future__ import annotations

import ast
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["Unawaited", "install", "explain"]


@dataclass(frozen=True)
class Unawaited:
    """A coroutine a page made and dropped: its function's name, where it was dropped."""

    name: str
    qualname: str
    filename: str | None
    line: int | None


def _page_conn() -> Any:
    """The conn of the page running in this context, or None outside a page. A coroutine
    dropped while it runs is noted on it (``conn.unawaited``), so a page pays nothing for
    this guard until it drops one (docs/performance.md)."""
    from .conn import _current  # (here: conn imports this module, through results)

    return _current.get(None)


def _console_warning(coro: Any) -> None:
    """Python's own warning, as ``warnings._warn_unawaited_coroutine`` words it, pointing at
    the code that dropped the coroutine (one frame further up than Python's, past us)."""
    lines = [f"coroutine '{coro.__qualname__}' was never awaited"]
    origin = getattr(coro, "cr_origin", None)
    if origin is not None:
        lines.append("Coroutine created at (most recent call last)")
        for filename, lineno, funcname in reversed(origin):
            lines.append(f'  File "{filename}", line {lineno}, in {funcname}')
    warnings.warn("\n".join(lines), RuntimeWarning, stacklevel=3, source=coro)


def _warn_unawaited_coroutine(coro: Any) -> None:
    conn = _page_conn()
    if conn is None:  # not in a page: Python's warning, unchanged
        _console_warning(coro)
        return
    # Called by the interpreter as the coroutine is freed: the frame above is the code that
    # dropped it (often the page's own line). The page's 500 and the error log say it, so
    # no console warning.
    frame = sys._getframe(1)
    if conn.unawaited is None:
        conn.unawaited = []
    conn.unawaited.append(
        Unawaited(
            getattr(coro, "__name__", "?"),
            getattr(coro, "__qualname__", "?"),
            frame.f_code.co_filename,
            frame.f_lineno,
        )
    )


def install() -> None:
    """Wrap ``warnings._warn_unawaited_coroutine`` (what CPython calls when a coroutine that
    never ran is freed) once per process. The console warning stays as it was."""
    if hasattr(warnings, "_warn_unawaited_coroutine"):  # CPython 3.8 and later
        warnings._warn_unawaited_coroutine = _warn_unawaited_coroutine


def _calls_not_awaited(source: str, name: str) -> list[ast.Call]:
    """Calls of a function called ``name`` that are not the operand of an ``await``."""
    try:
        flags = ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
        tree = compile(source, "<page>", "exec", flags=flags, dont_inherit=True)
    except SyntaxError:
        return []
    awaited = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Await)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and id(node) not in awaited:
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if called == name:
                found.append(node)
    return sorted(found, key=lambda n: n.lineno)


def explain(
    item: Unawaited, filename: str | None, display: Callable[[str], str] = str
) -> tuple[str, int | None]:
    """``(message, line)``: what was not awaited, where, and how to write it."""
    call = f"{item.qualname}(...)"
    line = item.line if item.filename == filename else None
    if filename is not None:
        try:
            with open(filename, encoding="utf-8") as f:
                source = f.read()
        except (OSError, UnicodeDecodeError):
            source = ""
        calls = _calls_not_awaited(source, item.name)
        if calls:
            best = next((c for c in calls if c.lineno == line), calls[0])
            call = f"{ast.unparse(best.func)}(...)"
            line = best.lineno
    where = f"{display(filename)}, line {line}: " if filename and line else ""
    return (
        f"{where}{call} was not awaited, so it never ran: what the page got is a coroutine "
        f"(a note of work to do), not its result. Write 'await {call}'.",
        line,
    )


def coroutine_message(value: object) -> str:
    """What a coroutine object handed to an answer (``conn.return_(coro)``) is told."""
    name = getattr(value, "__qualname__", type(value).__name__)
    return (
        f"a coroutine ({name}(...)) was given as the answer: the call was not awaited, so "
        f"it never ran. Write 'await {name}(...)' and answer with its result"
    )
