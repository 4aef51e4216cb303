"""The three kinds of cache (SMLserver §3): when an entry stops being there.

* ``Size(n)``: the entries' encodings (key + value) fit in ``n`` bytes; a new entry that does
  not fit pushes out the **oldest inserted** entries first (insertion order, not use).
* ``TimeOut(t)``: an entry lives ``t`` seconds after it was inserted, however often it is
  read: fresh data at least every ``t`` seconds (the currency rate).
* ``WhileUsed(t)``: an entry lives until it has not been read for ``t`` seconds: each hit
  starts the ``t`` seconds again (the paper's example: a password check).

Exactly when: an entry inserted (``TimeOut``) or last read (``WhileUsed``) at time ``s`` is
there at every time ``now < s + t`` and gone from ``now >= s + t`` on. Both backends follow
this rule to the millisecond (the Redis backend counts whole milliseconds).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["Kind", "Size", "TimeOut", "WhileUsed"]


def _positive(kind: str, what: str, value: object) -> None:
    if (
        not isinstance(value, int | float)
        or isinstance(value, bool)
        or not math.isfinite(value)
        or value <= 0
    ):
        raise ValueError(f"{kind} takes a positive number of {what}, got {value!r}")


@dataclass(frozen=True, slots=True)
class Size:
    """At most ``bytes`` bytes of encoded keys and values; oldest entries go first."""

    bytes: int

    def __post_init__(self) -> None:
        if not isinstance(self.bytes, int) or isinstance(self.bytes, bool) or self.bytes <= 0:
            raise ValueError(f"Size takes a positive whole number of bytes, got {self.bytes!r}")

    def __str__(self) -> str:
        return f"Size({self.bytes})"


@dataclass(frozen=True, slots=True)
class TimeOut:
    """Entries expire ``seconds`` after they were inserted."""

    seconds: float

    def __post_init__(self) -> None:
        _positive("TimeOut", "seconds", self.seconds)

    def __str__(self) -> str:
        return f"TimeOut({self.seconds:g})"

    @property
    def milliseconds(self) -> int:
        """The duration as both backends count it: whole milliseconds, at least one."""
        return max(1, int(round(self.seconds * 1000)))


@dataclass(frozen=True, slots=True)
class WhileUsed:
    """Entries expire when they have not been read for ``seconds``."""

    seconds: float

    def __post_init__(self) -> None:
        _positive("WhileUsed", "seconds", self.seconds)

    def __str__(self) -> str:
        return f"WhileUsed({self.seconds:g})"

    @property
    def milliseconds(self) -> int:
        """The duration as both backends count it: whole milliseconds, at least one."""
        return max(1, int(round(self.seconds * 1000)))


Kind = Size | TimeOut | WhileUsed
