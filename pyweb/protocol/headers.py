"""Header fields as a mapping: one type for every place that reads them.

A message keeps its fields as a list of ``(name, value)`` pairs, in arrival order, repeats
kept (RFC 9110 §5.2); the parser lower-cases the names. :class:`Headers` is the reading view
of such a list: looked up without regard to case, a repeated field's values joined with
``", "`` (RFC 9110 §5.3: a recipient may combine them so), and :meth:`Headers.get_all` for
the one field that cannot be combined that way, ``Set-Cookie`` (RFC 6265 §3).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

__all__ = ["Headers"]


class Headers(Mapping[str, str]):
    """``headers["user-agent"]``, ``headers.get("x-custom")``, ``headers.get_all(name)``."""

    __slots__ = ("raw",)

    def __init__(self, raw: Iterable[tuple[str, str]] = ()) -> None:
        self.raw: list[tuple[str, str]] = raw if isinstance(raw, list) else list(raw)
        """The pairs as received."""

    def get_all(self, name: str) -> list[str]:
        """Every value of the field called ``name``, in order (``[]`` when absent)."""
        name = name.lower()
        return [value for key, value in self.raw if key.lower() == name]

    def __getitem__(self, name: str) -> str:
        values = self.get_all(name)
        if not values:
            raise KeyError(name)
        return ", ".join(values)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and bool(self.get_all(name))

    def __iter__(self) -> Iterator[str]:
        return iter(dict.fromkeys(key.lower() for key, _ in self.raw))

    def __len__(self) -> int:
        return len(dict.fromkeys(key.lower() for key, _ in self.raw))

    def __repr__(self) -> str:
        return f"Headers({self.raw!r})"
