"""The fast path of :mod:`pyweb.quot`: fragments made without their dataclass's ``__init__``.

``Quote`` and ``Antiquote`` (SMLserver §2.2's ``QUOTE`` and ``ANTIQUOTE``) are frozen
dataclasses with slots. Their ``__init__`` sets the one field through
``object.__setattr__``, the price of being frozen, and ``qq`` and ``+`` make fragments on
every request. :func:`maker` gives a constructor that fills the slot through its descriptor
instead: the same object, equal and hashed alike, still immutable to everyone else.

What it saves is measured in docs/performance.md ("Fragments made without the dataclass's
``__init__``"); tests/test_quot.py checks that what it makes equals what the class makes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["maker"]

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
