"""The types of a typed cache (SMLserver §3, Fig. 3): ``Int``, ``Real``, ``String``, ``Bool``,
``Bytes`` and the constructors ``Pair``, ``Triple``, ``Option``, ``List``.

In SMLserver a cache of type ``(α, β) cache`` is built from *values* describing α and β
(``get (Pair Int Int, List Real, "mycache", Size (9*1024))``), so the compiler checks every
use. Python checks at run time instead: each type here

* **validates** a value (``Int`` accepts an ``int`` but not a ``bool``; ``Real`` a ``float``),
* **encodes** it to bytes and **decodes** it back.

The encoding is the entry as it is stored: it is what the Redis backend keeps, what the
in-process backend keeps (so both backends count bytes the same way), and what a ``Size``
cache counts. It is canonical (one value, one encoding), which is what lets any key, even a
list, be looked up by its bytes. Composite values are framed as netstrings-like
``<length>:<bytes>`` pieces so they stay readable in ``redis-cli``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

__all__ = [
    "Type",
    "Int",
    "Real",
    "String",
    "Bool",
    "Bytes",
    "Pair",
    "Triple",
    "Option",
    "List",
    "DecodeError",
]


class DecodeError(ValueError):
    """Bytes that are not the encoding of a value of the expected type."""


class Type(ABC):
    """A cache type: what values it admits and how they are stored."""

    name: str
    """How error messages and the Redis signature spell the type (``Option(Real)``)."""

    @abstractmethod
    def check(self, value: Any) -> bool:
        """Whether ``value`` is a value of this type (deeply, for constructed types)."""

    @abstractmethod
    def encode(self, value: Any) -> bytes:
        """The stored form of a value that passed :meth:`check`."""

    @abstractmethod
    def _read(self, data: bytes, pos: int, end: int) -> Any:
        """Decode ``data[pos:end]`` (exactly that slice) as one value."""

    def decode(self, data: bytes) -> Any:
        """The value that :meth:`encode` turned into ``data``; :class:`DecodeError` if none."""
        return self._read(data, 0, len(data))

    def __repr__(self) -> str:
        return self.name

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Type) and other.name == self.name

    def __hash__(self) -> int:
        return hash(self.name)


class _Int(Type):
    name = "Int"

    def check(self, value: Any) -> bool:
        # bool is a subclass of int; a cache of Int holding True would come back as 1
        return isinstance(value, int) and not isinstance(value, bool)

    def encode(self, value: Any) -> bytes:
        return str(int(value)).encode()

    def _read(self, data: bytes, pos: int, end: int) -> Any:
        try:
            return int(data[pos:end])
        except ValueError:
            raise DecodeError(f"not an Int: {bytes(data[pos:end])!r}") from None


class _Real(Type):
    name = "Real"

    def check(self, value: Any) -> bool:
        # strict: an int would come back as a float from the cache but as an int from f
        return isinstance(value, float)

    def encode(self, value: Any) -> bytes:
        return repr(float(value)).encode()  # repr round-trips every float exactly

    def _read(self, data: bytes, pos: int, end: int) -> Any:
        try:
            return float(data[pos:end])
        except ValueError:
            raise DecodeError(f"not a Real: {bytes(data[pos:end])!r}") from None


class _String(Type):
    name = "String"

    def check(self, value: Any) -> bool:
        if not isinstance(value, str):
            return False
        try:
            value.encode()
        except UnicodeEncodeError:  # lone surrogates cannot be stored
            return False
        return True

    def encode(self, value: Any) -> bytes:
        return value.encode()

    def _read(self, data: bytes, pos: int, end: int) -> Any:
        try:
            return data[pos:end].decode()
        except UnicodeDecodeError:
            raise DecodeError(f"not a String (UTF-8): {bytes(data[pos:end])!r}") from None


class _Bool(Type):
    name = "Bool"

    def check(self, value: Any) -> bool:
        return isinstance(value, bool)

    def encode(self, value: Any) -> bytes:
        return b"1" if value else b"0"

    def _read(self, data: bytes, pos: int, end: int) -> Any:
        piece = data[pos:end]
        if piece == b"1":
            return True
        if piece == b"0":
            return False
        raise DecodeError(f"not a Bool: {bytes(piece)!r}")


class _Bytes(Type):
    name = "Bytes"

    def check(self, value: Any) -> bool:
        return isinstance(value, bytes)

    def encode(self, value: Any) -> bytes:
        return bytes(value)

    def _read(self, data: bytes, pos: int, end: int) -> Any:
        return bytes(data[pos:end])


Int: Type = _Int()
"""Python ``int`` (not ``bool``)."""
Real: Type = _Real()
"""Python ``float`` (an ``int`` is refused: use ``float(n)``)."""
String: Type = _String()
"""Python ``str``, stored as UTF-8."""
Bool: Type = _Bool()
"""Python ``bool``."""
Bytes: Type = _Bytes()
"""Python ``bytes``, stored as they are."""


def _frame(piece: bytes) -> bytes:
    return b"%d:%s" % (len(piece), piece)


def _unframe(data: bytes, pos: int, end: int) -> tuple[int, int]:
    """The slice ``(start, stop)`` of the framed piece at ``pos``."""
    colon = data.find(b":", pos, end)
    if colon <= pos or colon - pos > 20 or not data[pos:colon].isdigit():
        raise DecodeError(f"bad length prefix at byte {pos} of {bytes(data)!r}")
    start = colon + 1
    stop = start + int(data[pos:colon])
    if stop > end:
        raise DecodeError(f"piece at byte {pos} runs past the end of {bytes(data)!r}")
    return start, stop


class _Tuple(Type):
    """Pair and Triple: a fixed number of framed components."""

    def __init__(self, label: str, parts: tuple[Type, ...]) -> None:
        for part in parts:
            if not isinstance(part, Type):
                raise TypeError(f"{label} takes cache types (Int, String, ...), got {part!r}")
        self.parts = parts
        self.name = f"{label}({', '.join(p.name for p in parts)})"

    def check(self, value: Any) -> bool:
        return (
            isinstance(value, tuple)
            and len(value) == len(self.parts)
            and all(t.check(v) for t, v in zip(self.parts, value, strict=True))
        )

    def encode(self, value: Any) -> bytes:
        return b"".join(_frame(t.encode(v)) for t, v in zip(self.parts, value, strict=True))

    def _read(self, data: bytes, pos: int, end: int) -> Any:
        out = []
        for part in self.parts:
            start, stop = _unframe(data, pos, end)
            out.append(part._read(data, start, stop))
            pos = stop
        if pos != end:
            raise DecodeError(f"trailing bytes after a {self.name} in {bytes(data)!r}")
        return tuple(out)


def Pair(a: Type, b: Type) -> Type:  # noqa: N802 - the paper's name
    """Pairs ``(x, y)``: a Python tuple of two values of types ``a`` and ``b``."""
    return _Tuple("Pair", (a, b))


def Triple(a: Type, b: Type, c: Type) -> Type:  # noqa: N802 - the paper's name
    """Triples ``(x, y, z)``: a Python tuple of three values."""
    return _Tuple("Triple", (a, b, c))


class _Option(Type):
    def __init__(self, inner: Type) -> None:
        if not isinstance(inner, Type):
            raise TypeError(f"Option takes a cache type (Int, String, ...), got {inner!r}")
        self.inner = inner
        self.name = f"Option({inner.name})"

    def check(self, value: Any) -> bool:
        return value is None or self.inner.check(value)

    def encode(self, value: Any) -> bytes:
        # a tag byte: None and Some("") must not share an encoding
        return b"N" if value is None else b"S" + self.inner.encode(value)

    def _read(self, data: bytes, pos: int, end: int) -> Any:
        tag = data[pos : pos + 1]
        if tag == b"N" and end == pos + 1:
            return None
        if tag == b"S":
            return self.inner._read(data, pos + 1, end)
        raise DecodeError(f"not an {self.name}: {bytes(data[pos:end])!r}")


def Option(inner: Type) -> Type:  # noqa: N802 - the paper's name
    """``None`` or a value of ``inner`` (the paper's ``'a option``)."""
    return _Option(inner)


class _List(Type):
    def __init__(self, inner: Type) -> None:
        if not isinstance(inner, Type):
            raise TypeError(f"List takes a cache type (Int, String, ...), got {inner!r}")
        self.inner = inner
        self.name = f"List({inner.name})"

    def check(self, value: Any) -> bool:
        return isinstance(value, list) and all(self.inner.check(v) for v in value)

    def encode(self, value: Any) -> bytes:
        return b"".join(_frame(self.inner.encode(v)) for v in value)

    def _read(self, data: bytes, pos: int, end: int) -> Any:
        out = []
        while pos < end:
            start, stop = _unframe(data, pos, end)
            out.append(self.inner._read(data, start, stop))
            pos = stop
        return out


def List(inner: Type) -> Type:  # noqa: N802 - the paper's name
    """Python lists whose elements are all of type ``inner``."""
    return _List(inner)


def describe(value: Any) -> str:
    """A short description of a value for error messages: ``7 (int)``."""
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{text} ({type(value).__name__})"
