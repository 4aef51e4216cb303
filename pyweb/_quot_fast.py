"""The fast path of :mod:`pyweb.quot`: ``qq``'s loop and ``+``'s merge, objects made in line.

``Quote`` and ``Antiquote`` (SMLserver §2.2's ``QUOTE`` and ``ANTIQUOTE``) are frozen
dataclasses with slots. Their ``__init__`` sets the one field through
``object.__setattr__``, the price of being frozen, and ``qq`` and ``+`` make fragments on
every request. Here they are made with ``object.__new__`` and the slot's descriptor
instead: the same objects, equal and hashed alike, still immutable to everyone else.

* :func:`maker` gives such a constructor as a function (for ``Quot.join`` and ``concat``);
* :func:`quotation_paths` gives ``qq``'s loop and ``+``'s merge with the same bypass
  written out in line, so that a page's row pays no Python call per fragment.

``pyweb/quot.py`` holds the plain versions, which read like the paper, and calls these.
What they save is measured in docs/performance.md ("Fragments made without the dataclass's
``__init__``"); tests/test_quot.py checks that both give equal Quots and equal errors.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["maker", "quotation_paths"]

T = TypeVar("T")


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


Fill = Callable[[str, dict[str, Any]], Any]
"""``fill(template, names)``: the Quot ``qq(template, **names)`` gives."""
Concat2 = Callable[[tuple[Any, ...], tuple[Any, ...]], Any]
"""``concat2(a, b)``: the Quot of the fragments ``a`` then ``b``, the quotes that meet merged."""


def quotation_paths(
    quote: type[Any],
    antiquote: type[Any],
    quot: type[Any],
    parse: Callable[[str], Any],
    hole_error: Callable[..., Exception],
) -> tuple[Fill, Concat2]:
    """``(fill, concat2)``: ``pyweb.quot``'s ``_qq_plain`` and ``_concat2_plain``, made in line.

    ``fill(template, names)`` must be called by ``qq`` itself: a hole not in ``names`` is
    looked up in the scope of ``qq``'s caller, two frames up. ``hole_error`` makes the
    exception for a hole that cannot be filled, so both versions raise the same one.
    """
    new = object.__new__
    set_text = quote.__dict__["text"].__set__
    set_value = antiquote.__dict__["value"].__set__
    getframe = sys._getframe
    missing = object()

    def fill(template: str, names: dict[str, Any]) -> Any:
        out: list[Any] = []
        append = out.append
        scopes: tuple[dict[str, Any], ...] | None = None  # the caller's, looked up when needed
        for item in parse(template):
            if type(item) is quote:
                append(item)
                continue
            name, attrs = item
            value = names.get(name, missing)
            if value is missing:
                if scopes is None:
                    frame = getframe(2)  # fill <- qq <- qq's caller
                    scopes = (frame.f_locals, frame.f_globals, frame.f_builtins)
                    del frame  # no reference cycle through this frame
                for scope in scopes:
                    value = scope.get(name, missing)
                    if value is not missing:
                        break
                else:
                    raise hole_error(template, name)
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

    return fill, concat2
