"""The request parser's fast paths: what it remembers between requests, and its C twin.

:mod:`pyweb.protocol.parser` reads a request head the careful way, as RFC 9112 writes it
(a field line is checked against the grammar's regular expression, and a bad one is
explained). A server reads the same few heads again and again, so the parser asks this
module first:

* :func:`known_lines`: a field line already proven valid is one dictionary lookup
  (:data:`PLAIN_LINES`, :data:`SPECIAL_LINES`; :func:`learn_lines` fills them);
* :func:`known_names`: a block whose names were all proven to be tokens before
  (:data:`FIELD_NAMES`) and which holds no control character is split with ``str``
  methods, without the regex (:func:`learn_names` fills the names);
* :data:`GOOD_HOSTS`: Host values already matched against the grammar;
* :func:`c_head`: ``pyweb_regions._head``, the everyday head parsed in C.

Each answers "I know this one" or declines (None), and a decline sends the parser down its
careful path, so nothing is checked less: a line proven valid is valid again. The caches
are bounded, because their keys come from clients. What each pays is measured in
docs/performance.md ("The parser's fast path", "The C request head"), and
tests/protocol/test_fast_path.py and test_c_head.py hold each to the careful path's
outcome, events and errors alike.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import pyweb_regions

__all__ = [
    "BoundedCache", "LineCache", "FIELD_NAMES", "GOOD_HOSTS", "PLAIN_LINES", "SPECIAL_LINES",
    "known_lines", "learn_lines", "known_names", "learn_names", "c_head",
]  # fmt: skip

Field = tuple[str, str]


class BoundedCache:
    """Strings already checked, so that checking them again is one lookup in
    :attr:`entries` (a plain dict: a dict subclass costs a third more per lookup).
    Bounded, because the strings come from clients: once full it keeps what it has
    (the common ones come first)."""

    __slots__ = ("name", "size", "entries")

    def __init__(self, name: str, size: int) -> None:
        self.name = name
        self.size = size
        self.entries: dict[str, str] = {}

    def add(self, key: str, value: str) -> None:
        if len(self.entries) < self.size:
            self.entries[key] = value

    def __repr__(self) -> str:
        return f"<BoundedCache {self.name}: {len(self.entries)} of {self.size}>"


class LineCache:
    """Field lines already proven valid, to their ``(lower-cased name, value)``. Bounded:
    at most ``size`` lines of at most ``MAX_LINE`` characters; when full it starts again
    empty, so it follows the lines the clients send now (a flood of new lines only costs
    what a miss costs anyway)."""

    __slots__ = ("name", "size", "entries")

    MAX_LINE = 512

    def __init__(self, name: str, size: int) -> None:
        self.name = name
        self.size = size
        self.entries: dict[str, Field] = {}

    def add(self, line: str, field: Field) -> None:
        if len(line) <= self.MAX_LINE:
            if len(self.entries) >= self.size:
                self.entries.clear()
            self.entries[line] = field

    def __repr__(self) -> str:
        return f"<LineCache {self.name}: {len(self.entries)} of {self.size}>"


FIELD_NAMES = BoundedCache("field names proven to be tokens, to their lower case", 1024)
"""Most requests repeat the same dozen field names."""
GOOD_HOSTS = BoundedCache("Host values that match the grammar", 1024)
"""A server sees the same few hosts again and again."""
PLAIN_LINES = LineCache("valid field lines the parser only passes along", 1024)
SPECIAL_LINES = LineCache("valid field lines the parser reads (Host, framing, ...)", 256)


def known_lines(lines: list[str]) -> tuple[list[Field], list[Field]] | None:
    """The fields of ``lines`` and those of them the parser reads itself, in order, when
    every line was proven valid before; None as soon as one was not."""
    plain = PLAIN_LINES.entries
    fields = []
    special = []
    for line in lines:
        field = plain.get(line)
        if field is None:  # a line the parser reads (or one not seen before)
            field = SPECIAL_LINES.entries.get(line)
            if field is None:
                return None
            special.append(field)
        fields.append(field)
    return fields, special


def learn_lines(lines: Iterable[str], fields: Iterable[Field], special: frozenset[str]) -> None:
    """Remember ``lines``, just proven valid, with their ``fields`` (names in ``special``
    are the ones the parser reads)."""
    for line, field in zip(lines, fields, strict=True):
        (SPECIAL_LINES if field[0] in special else PLAIN_LINES).add(line, field)


_CTL_CR_LF = bytes((*range(0x09), *range(0x0A, 0x20), 0x7F))
"""Control characters no field line may hold, with CR and LF."""


def known_names(raw: bytearray, lines: list[str], crlfs: int) -> list[Field] | None:
    """``lines`` (split from ``raw`` on its ``crlfs`` CRLFs) as (lower name, value) when
    the block holds no control character and every name was proven a token before; None
    otherwise. The checks run in C: one pass over the block's bytes (a regex search cost
    three to four times as much), one dict lookup per name."""
    # Deleting every CR, LF and control character removes exactly 2 * crlfs bytes only
    # when there is no other CR, LF or control character.
    if len(raw) - len(raw.translate(None, _CTL_CR_LF)) != 2 * crlfs:
        return None
    names = FIELD_NAMES.entries
    fields = []
    try:  # (a plain loop: a third cheaper than a comprehension over map(methodcaller))
        for line in lines:
            # A line without a colon makes split() return one item: ValueError on unpacking.
            name, value = line.split(":", 1)
            fields.append((names[name], value.strip(" \t")))
    except (KeyError, ValueError):
        return None
    return fields


def learn_names(lines: Iterable[str]) -> None:
    """Remember the names of ``lines``, just proven valid field lines."""
    for line in lines:
        name = line.split(":", 1)[0]
        FIELD_NAMES.add(name, name.lower())


def c_head(*parser_types: Any) -> Callable[[Any], object] | None:
    """``pyweb_regions._head.parse_head`` set up for the parser's classes and states
    (``RequestParser, Limits, Request, NEED_DATA, EOM, CL_BODY``), or None when it was not
    built or ``PYWEB_REGIONS=python`` turns the C code off (see ``parser.C_HEAD``)."""
    module = pyweb_regions.extension("_head")
    if module is None:
        return None
    parse_head: Callable[[Any], object] = module.setup(*parser_types)
    return parse_head
