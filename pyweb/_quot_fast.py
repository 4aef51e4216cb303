"""The fast path of :mod:`pyweb.quot`: ``qq``'s loop and ``+``'s merge, objects made in line.

``Quote`` and ``Antiquote`` (SMLserver §2.2's ``QUOTE`` and ``ANTIQUOTE``) are frozen
dataclasses with slots. Their ``__init__`` sets the one field through
``object.__setattr__``, the price of being frozen, and ``qq`` and ``+`` make fragments on
every request. Here they are made with ``object.__new__`` and the slot's descriptor
instead: the same objects, equal and hashed alike, still immutable to everyone else.

* :func:`maker` gives such a constructor as a function (for ``Quot.join`` and ``concat``);
* :func:`fast_qq` and :func:`fast_concat2` decorate ``qq`` and ``+``'s merge in
  ``pyweb/quot.py``, which read like the paper, with versions that write the same bypass
  out in line, so that a page's row pays no Python call per fragment. The plain functions
  stay reachable as their ``__wrapped__``.

What they save is measured in docs/performance.md ("Fragments made without the dataclass's
``__init__``"); tests/test_quot.py checks that both give equal Quots and equal errors.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any, TypeVar, cast

__all__ = ["fast_concat2", "fast_qq", "maker"]

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])


def maker(cls: type[T], field: str) -> Callable[[Any], T]:
    """A one-argument constructor of ``cls`` (a slotted dataclass of one ``field``) that
    skips its ``__init__``: ``maker(Quote, "text")("a") == Quote("a")``."""
    new = object.__new__
    set_field = cls.__dict__[field].__set__

    def make(value: Any) -> T:
        made = new(cls)
        set_field(made, value)
        return made

    make.__name__ = make.__qualname__ = f"make_{cls.__name__}"
    make.__doc__ = f"``{cls.__name__}(value)`` without its ``__init__`` (pyweb._quot_fast)."
    return make


def fast_concat2(quote: type[Any], quot: type[Any]) -> Callable[[F], F]:
    """A decorator: ``pyweb.quot._concat2`` (``a + b`` of two fragment tuples) with the merged
    quote and the Quot made in line. The plain function stays as ``__wrapped__``."""
    new = object.__new__
    set_text = quote.__dict__["text"].__set__

    def decorate(plain: F) -> F:
        def concat2(a: tuple[Any, ...], b: tuple[Any, ...]) -> Any:
            if a and b and type(a[-1]) is quote and type(b[0]) is quote:
                merged: Any = new(quote)
                set_text(merged, a[-1].text + b[0].text)
                fragments = (*a[:-1], merged, *b[1:])
            else:
                fragments = a + b
            made: Any = new(quot)
            made._fragments = fragments
            return made

        return cast(F, functools.update_wrapper(concat2, plain))

    return decorate


def fast_qq(
    quote: type[Any],
    antiquote: type[Any],
    quot: type[Any],
    parse: Callable[[str], Any],
    hole_error: Callable[..., Exception],
) -> Callable[[F], F]:
    """A decorator: ``pyweb.quot.qq`` with its loop's antiquotes and Quot made in line.

    The fast version takes every ``str`` template itself, the plain one (``__wrapped__``)
    anything else (a t-string, or a wrong type to refuse). ``parse`` is qq's cached template
    parser and ``hole_error`` makes the exception for a hole that cannot be filled, so both
    versions raise the same one.
    """
    new = object.__new__
    set_value = antiquote.__dict__["value"].__set__
    getframe = sys._getframe
    missing = object()

    def decorate(plain: F) -> F:
        def qq(template: str, /, **names: object) -> Any:
            if not isinstance(template, str):
                return plain(template, **names)
            out: list[Any] = []
            append = out.append
            scopes: tuple[dict[str, Any], ...] | None = None  # the caller's, when needed
            for item in parse(template):
                if type(item) is quote:
                    append(item)
                    continue
                name, attrs = item
                value = names.get(name, missing)
                if value is missing:
                    if scopes is None:
                        frame = getframe(1)
                        scopes = (frame.f_locals, frame.f_globals, frame.f_builtins)
                        del frame  # no reference cycle through this frame
                    for scope in scopes:
                        value = scope.get(name, missing)
                        if value is not missing:
                            break
                    else:
                        raise hole_error(template, name)
                if attrs:
                    for attr in attrs:
                        try:
                            value = getattr(value, attr)
                        except AttributeError as exc:
                            raise hole_error(template, name, attrs, exc) from exc
                fragment: Any = new(antiquote)
                set_value(fragment, value)
                append(fragment)
            made: Any = new(quot)
            made._fragments = tuple(out)
            return made

        return cast(F, functools.update_wrapper(qq, plain))

    return decorate
