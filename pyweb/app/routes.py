"""Path parameters: ``/todo/3`` served by ``pages/todo/[id].py`` or ``@service("/todo/{id}")``.

SMLserver maps a URL to one script file; Hop binds a service to one URL. A site with a page
per to-do item needs one page for many URLs, so a path may have *parameters*: a file or
folder named ``[name]`` matches any one path segment, as does ``{name}`` in a service's path.
The matched text is ``conn.path_params["name"]``, and the form getters read it too
(``get_nat("id")``; a path parameter wins over a form variable of the same name).

Which route wins, so that the answer never depends on the order files were found:

* an exact name (a script, a service, a template, a static file) beats any parameter;
* between two patterns, the one with a literal segment where the other has a parameter,
  comparing from the left, wins (``/todo/new`` beats ``/todo/{id}``;
  ``/a/b/{x}`` beats ``/a/{y}/c``);
* two patterns of the same shape (``/todo/{id}`` and ``pages/todo/[item].py``) are
  ambiguous: ``pyweb check`` reports them, and a production server refuses to start.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Pattern", "Router", "service_pattern", "script_pattern"]

_SERVICE_PARAM = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_SCRIPT_PARAM = re.compile(r"\[([A-Za-z_][A-Za-z0-9_]*)\]")


@dataclass(frozen=True, slots=True)
class Pattern:
    """A path with parameters: each segment a literal (str) or a parameter name (None)."""

    text: str
    """As written (``/todo/{id}``, ``todo/[id]``), for messages."""
    literals: tuple[str | None, ...]
    """Per segment: the literal text, or ``None`` where a parameter goes."""
    names: tuple[str, ...]
    """The parameters' names, left to right."""
    rank: tuple[int, ...] = field(init=False)
    """0 for a literal, 1 for a parameter: the smaller rank wins (exact names first)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "rank", tuple(0 if s is not None else 1 for s in self.literals))

    def match(self, segments: list[str]) -> dict[str, str] | None:
        """The parameters, if ``segments`` (the path split at ``/``) fit this pattern."""
        if len(segments) != len(self.literals):
            return None
        params: dict[str, str] = {}
        names = iter(self.names)
        for literal, segment in zip(self.literals, segments, strict=True):
            if literal is None:
                if not segment:
                    return None
                params[next(names)] = segment
            elif literal != segment:
                return None
        return params


def _pattern(text: str, segments: list[str], param: re.Pattern[str]) -> Pattern | None:
    literals: list[str | None] = []
    names: list[str] = []
    for segment in segments:
        found = param.fullmatch(segment)
        if found:
            if found.group(1) in names:
                raise ValueError(f"{text}: the parameter {found.group(1)!r} appears twice")
            names.append(found.group(1))
            literals.append(None)
        else:
            if "{" in segment or "[" in segment:
                raise ValueError(
                    f"{text}: a parameter is a whole path segment, such as /todo/{{id}} "
                    f"or [id].py; {segment!r} mixes text and a parameter"
                )
            literals.append(segment)
    return Pattern(text, tuple(literals), tuple(names)) if names else None


def service_pattern(path: str) -> Pattern | None:
    """``"/todo/{id}"`` → its pattern (matched against the decoded path); ``None`` when the
    path has no parameter."""
    if "{" not in path:
        return None
    return _pattern(path, path.split("/"), _SERVICE_PARAM)


def script_pattern(name: str) -> Pattern | None:
    """``"todo/[id]"`` (a script's URL name) → its pattern, matched against ``"/" + name``
    (``index`` added for a path ending in ``/``); ``None`` without a ``[name]`` part."""
    if "[" not in name:
        return None
    return _pattern(name, ("/" + name).split("/"), _SCRIPT_PARAM)


class Router:
    """The site's routes with parameters, and which one serves a path."""

    def __init__(self) -> None:
        self._routes: list[tuple[Pattern, Any]] = []

    def add(self, pattern: Pattern, target: Any) -> None:
        self._routes.append((pattern, target))
        self._routes.sort(key=lambda route: route[0].rank)

    def __bool__(self) -> bool:
        return bool(self._routes)

    def routes(self) -> list[tuple[Pattern, Any]]:
        """Every ``(pattern, target)``, the most specific first."""
        return list(self._routes)

    def match(self, path: str) -> tuple[Pattern, Any, dict[str, str]] | None:
        """``(pattern, target, params)`` of the most specific route for ``path``, or ``None``."""
        segments = path.split("/")
        for pattern, target in self._routes:  # sorted: the first match is the most specific
            params = pattern.match(segments)
            if params is not None:
                return pattern, target, params
        return None

    def ambiguous(self, *others: Router) -> list[tuple[Pattern, Pattern]]:
        """Pairs of routes (here and in ``others``) of the same shape: some path would
        match both equally."""
        shapes: dict[tuple[str | None, ...], Pattern] = {}
        pairs = []
        routes = [route for router in (self, *others) for route in router._routes]
        for pattern, _target in routes:
            other = shapes.setdefault(pattern.literals, pattern)
            if other is not pattern:
                pairs.append((other, pattern))
        return pairs
