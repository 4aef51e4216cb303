"""Typed JSON bodies: a service parameter annotated with a dataclass or a TypedDict is read
from the request's JSON body, every field checked against its annotation.

A form's variables are read one by one with the ``FormVar`` getters (SMLserver §2.2); a
JSON body is one document, so it is checked as a whole, and every bad field is listed in
one 400, the way ``wrap_fail`` lists every bad form variable::

    @dataclass
    class NewTodo:
        title: str
        due: str | None = None
        priority: int = 0

    @service("/todos", methods=["POST"])
    def add(todo: NewTodo): ...     # todo is a NewTodo, or the client got a 400

Field types understood: ``str``, ``int`` (not ``bool``), ``float`` (an ``int`` is
accepted), ``bool``, ``None``, ``T | None``, ``list[T]``, ``dict[str, T]``,
``Literal[...]``, ``Any``, and nested dataclasses and TypedDicts. A field the type does not
have is an error too (a typo in a field name must not be dropped silently).
"""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any, Literal

__all__ = ["is_json_type", "read_json", "FieldError"]


@dataclasses.dataclass(frozen=True, slots=True)
class FieldError:
    """One bad field: where (``"items[2].name"``) and what is wrong."""

    field: str
    message: str

    def as_dict(self) -> dict[str, str]:
        return {"field": self.field, "error": self.message}


def is_json_type(annotation: Any) -> bool:
    """A dataclass or a TypedDict: read from a JSON body, not from form variables."""
    return isinstance(annotation, type) and (
        dataclasses.is_dataclass(annotation) or typing.is_typeddict(annotation)
    )


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _name(annotation: Any) -> str:
    return getattr(annotation, "__name__", None) or repr(annotation)


def _at(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


def _fields(annotation: type) -> dict[str, tuple[Any, bool]]:
    """Field name → (type, required)."""
    hints = typing.get_type_hints(annotation)
    if dataclasses.is_dataclass(annotation):
        found = {}
        for f in dataclasses.fields(annotation):
            required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
            found[f.name] = (hints.get(f.name, Any), required)
        return found
    required_keys = getattr(annotation, "__required_keys__", frozenset(hints))
    return {name: (hint, name in required_keys) for name, hint in hints.items()}


def _read_object(value: Any, annotation: type, where: str, errors: list[FieldError]) -> Any:
    if not isinstance(value, dict):
        errors.append(FieldError(where or "(body)", f"expected an object, got {_show(value)}"))
        return None
    fields = _fields(annotation)
    before = len(errors)
    out: dict[str, Any] = {}
    for key in value:
        if key not in fields:
            errors.append(FieldError(_at(where, key), f"{_name(annotation)} has no such field"))
    for key, (hint, required) in fields.items():
        if key in value:
            out[key] = _read(value[key], hint, _at(where, key), errors)
        elif required:
            errors.append(FieldError(_at(where, key), "missing"))
    if len(errors) > before:
        return None
    if dataclasses.is_dataclass(annotation):
        try:
            return annotation(**out)
        except (TypeError, ValueError) as exc:  # a __post_init__ that refuses the values
            errors.append(FieldError(where or "(body)", str(exc)))
            return None
    return out


_SCALARS: dict[Any, tuple[tuple[type, ...], str]] = {
    str: ((str,), "a string"),
    int: ((int,), "an integer"),
    float: ((int, float), "a number"),
    bool: ((bool,), "true or false"),
}


def _read(value: Any, hint: Any, where: str, errors: list[FieldError]) -> Any:
    if hint is Any:
        return value
    if hint is None or hint is type(None):
        if value is not None:
            errors.append(FieldError(where, f"expected null, got {_show(value)}"))
        return value
    if is_json_type(hint):
        return _read_object(value, hint, where, errors)
    if hint in _SCALARS:
        accepted, described = _SCALARS[hint]
        if not isinstance(value, accepted) or (hint is not bool and isinstance(value, bool)):
            errors.append(FieldError(where, f"expected {described}, got {_show(value)}"))
        return float(value) if hint is float and isinstance(value, int) else value
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Union or origin is types.UnionType:
        for option in args:  # the first option that takes the value without errors
            trial: list[FieldError] = []
            result = _read(value, option, where, trial)
            if not trial:
                return result
        shown = " or ".join(_name(a) if a is not type(None) else "null" for a in args)
        errors.append(FieldError(where, f"expected {shown}, got {_show(value)}"))
        return None
    if origin is Literal:
        if value not in args or isinstance(value, bool) != any(isinstance(a, bool) for a in args):
            errors.append(FieldError(where, f"expected one of {list(args)}, got {_show(value)}"))
        return value
    if origin is list:
        if not isinstance(value, list):
            errors.append(FieldError(where, f"expected a list, got {_show(value)}"))
            return None
        inner = args[0] if args else Any
        return [_read(v, inner, f"{where}[{i}]", errors) for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            errors.append(FieldError(where, f"expected an object, got {_show(value)}"))
            return None
        inner = args[1] if len(args) == 2 else Any
        return {k: _read(v, inner, _at(where, k), errors) for k, v in value.items()}
    raise TypeError(f"{where}: a JSON field cannot be annotated {hint!r}")


def read_json(value: Any, annotation: type) -> tuple[Any, list[FieldError]]:
    """``(object, [])`` for a body that fits ``annotation``; ``(None, errors)`` otherwise."""
    errors: list[FieldError] = []
    result = _read_object(value, annotation, "", errors)
    return (None, errors) if errors else (result, [])


def check_json_type(annotation: type, where: str = "") -> None:
    """Raise ``TypeError`` for a field type :func:`read_json` cannot check (at import)."""
    for key, (hint, _required) in _fields(annotation).items():
        _check_hint(hint, _at(where, key))


def _check_hint(hint: Any, where: str) -> None:
    if hint is Any or hint is None or hint is type(None) or hint in _SCALARS:
        return
    if is_json_type(hint):
        check_json_type(hint, where)
        return
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType, list, dict):
        for arg in typing.get_args(hint):
            _check_hint(arg, where)
        return
    if origin is Literal:
        return
    raise TypeError(f"field {where}: a JSON field cannot be annotated {hint!r}")
