"""The site's services described as an OpenAPI 3.1 document (``/_pyweb/openapi.json``).

A service's signature already says what it takes (Hop's ``define-service``, with pyweb's
types): each annotated parameter is a form variable of a known type, ``{name}`` in its path
a path parameter, a dataclass or TypedDict parameter a JSON body. This module reads those
annotations, the ones :mod:`pyweb.forms` and :mod:`pyweb.app.jsonbody` parse requests
with, so the document says what the site really accepts: one operation per service
(path and method), its query or form parameters, its JSON body as a JSON Schema, its
answer (from the return annotation) and its errors (the JSON errors of
:mod:`pyweb.app.apierrors`). :mod:`pyweb.app.openapi_page` shows it as a page.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import functools
import inspect
import os
import types
import typing
from collections.abc import Callable, Iterator
from typing import Annotated, Any, Literal

from pyweb import forms

from .csrf import SAFE_METHODS
from .jsonbody import is_json_type
from .services import Service
from .sessions import COOKIE_NAME

__all__ = ["document", "OPENAPI_VERSION"]

OPENAPI_VERSION = "3.1.0"

_ERROR = {"$ref": "#/components/schemas/Error"}
_ERROR_SCHEMA = {
    "type": "object",
    "description": "An error, as an API client gets it (Accept: application/json, or a "
    "JSON body); a browser gets a short HTML page instead.",
    "properties": {
        "error": {"type": "string", "description": "what went wrong"},
        "status": {"type": "integer", "description": "the HTTP status"},
        "errors": {
            "type": "array",
            "description": "one entry per bad form variable or JSON field",
            "items": {"type": "object"},
        },
    },
    "required": ["error", "status"],
}
_FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")

_TEXT = "[^\\x00-\\x08\\x0b\\x0c\\x0e-\\x1f]"
"""A character a form's text may hold: no C0 control but tab, LF and CR (formdata.py)."""
_LABEL = "[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_EMAIL = (  # forms.parse_email's rules (the last label not all digits)
    "^(?=[^@]{1,64}@)[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*"
    f"@(?:{_LABEL}\\.)+(?![0-9]+$){_LABEL}$"
)
_URL = "^[Hh][Tt][Tt][Pp][Ss]?://[^\\s\\x00-\\x1f\\x7f]+$"  # (parse_url checks the host too)

_GETTER_SCHEMAS: dict[Any, dict[str, Any]] = {
    forms.get_nat: {"type": "integer", "minimum": 0, "maximum": forms.NAT_MAX},
    forms.get_int: {"type": "integer", "minimum": forms.INT_MIN, "maximum": forms.INT_MAX},
    forms.get_real: {"type": "number"},
    # not blank: one character that is neither space nor control, no control elsewhere
    forms.get_string: {"type": "string", "pattern": f"^{_TEXT}*[^\\s\\x00-\\x1f\\x85]{_TEXT}*$"},
    forms.get_bool: {"type": "boolean"},
    forms.get_email: {"type": "string", "format": "email", "maxLength": 254, "pattern": _EMAIL},
    forms.get_url: {"type": "string", "format": "uri", "pattern": _URL},
    forms.get_date: {"type": "string", "format": "date"},
}
"""What each of pyweb's getters accepts, as a JSON Schema (forms.py's parse_* functions)."""


def document(site: Any) -> dict[str, Any]:
    """The OpenAPI 3.1 document of ``site``'s services (a dict, ready for ``json.dumps``)."""
    schemas = _Schemas()
    paths: dict[str, dict[str, Any]] = {}
    names: set[str] = set()
    for path, svc, method in _operations(site):
        operation = _operation(svc, method, path, schemas)
        operation["operationId"] = _unique(f"{method.lower()}_{svc.__name__}", names)
        paths.setdefault(path, {})[method.lower()] = operation
    return {
        "openapi": OPENAPI_VERSION,
        "info": {
            "title": os.path.basename(site.root) or "pyweb site",
            "version": "unversioned",
            "description": "The services of this pyweb site, read from their signatures.",
        },
        "paths": dict(sorted(paths.items())),
        "components": {
            "schemas": {"Error": _ERROR_SCHEMA, **schemas.found},
            "securitySchemes": {
                "csrf": {
                    "type": "apiKey",
                    "in": "header",
                    "name": "X-CSRF-Token",
                    "description": "the session's CSRF token (pyweb.csrf_token()), needed "
                    "by a method that may change something",
                },
                "session": {"type": "apiKey", "in": "cookie", "name": COOKIE_NAME},
            },
        },
    }


def _operations(site: Any) -> Iterator[tuple[str, Service, str]]:
    """``(path, service, method)`` for every service of the site, HEAD left out (a GET's
    answer without its body)."""
    seen: set[int] = set()
    heads = [*site.services.values(), *(svc for _, svc in site.service_routes.routes())]
    for first in heads:
        if id(first.by_method) in seen:  # (one table per path, whichever service holds it)
            continue
        seen.add(id(first.by_method))
        for method, svc in first.by_method.items():
            if method != "HEAD":
                yield svc.path, svc, method


def _unique(name: str, taken: set[str]) -> str:
    candidate, n = name, 1
    while candidate in taken:
        n += 1
        candidate = f"{name}_{n}"
    taken.add(candidate)
    return candidate


def _operation(svc: Service, method: str, path: str, schemas: _Schemas) -> dict[str, Any]:
    doc = inspect.cleandoc(svc.__doc__ or "")
    summary, _, description = doc.partition("\n")
    operation: dict[str, Any] = {"summary": summary.strip() or f"service {path}"}
    if description.strip():
        operation["description"] = description.strip()
    form_in_body = method not in SAFE_METHODS
    names = svc.pattern.names if svc.pattern is not None else ()
    parameters, fields, required = [], {}, []
    for name, annotation, needed in _form_parameters(svc):
        schema = form_schema(annotation)
        if name in names:
            parameters.append({"name": name, "in": "path", "required": True, "schema": schema})
        elif form_in_body:
            fields[name] = schema
            if needed:
                required.append(name)
        else:
            parameters.append({"name": name, "in": "query", "required": needed, "schema": schema})
    if parameters:
        operation["parameters"] = parameters
    body = _request_body(svc, fields, required, schemas)
    if body is not None:
        operation["requestBody"] = body
    operation["responses"] = _responses(svc, method, bool(parameters or body), bool(names), schemas)
    security: list[dict[str, list[str]]] = []
    if svc.csrf and form_in_body:
        security.append({"csrf": []})
    if svc.login_required:
        security.append({"session": []})
    if security:  # (all of them at once: one object)
        operation["security"] = [{k: v for entry in security for k, v in entry.items()}]
    return operation


def _form_parameters(svc: Service) -> Iterator[tuple[str, Any, bool]]:
    """``(name, annotation, required)`` of each form variable the service reads."""
    hints = typing.get_type_hints(svc.func, include_extras=True)
    for param in inspect.signature(svc.func).parameters.values():
        if param.name in svc.skip or param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        annotation = hints.get(param.name, str)
        _inner, optional = forms.split_optional(annotation)
        yield param.name, annotation, not optional and param.default is param.empty


def _request_body(
    svc: Service, fields: dict[str, Any], required: list[str], schemas: _Schemas
) -> dict[str, Any] | None:
    if svc.json_param is not None:
        _name, annotation = svc.json_param
        inner, optional = forms.split_optional(annotation)
        return {
            "required": not optional,
            "content": {"application/json": {"schema": schemas.of(inner)}},
        }
    if not fields:
        return None
    # (fields it does not read are dropped, but their text is checked as the others')
    schema: dict[str, Any] = {"type": "object", "properties": fields, "additionalProperties": False}
    if required:
        schema["required"] = required
    return {"required": bool(required), "content": {t: {"schema": schema} for t in _FORM_TYPES}}


def _responses(
    svc: Service, method: str, reads_input: bool, has_path: bool, schemas: _Schemas
) -> dict[str, Any]:
    answer: dict[str, Any] = {"description": "the service's answer"}
    content = _answer_content(svc, schemas)
    if content:
        answer["content"] = content
    errors = {"application/json": {"schema": _ERROR}, "text/html": {"schema": {"type": "string"}}}
    responses: dict[str, Any] = {"200": answer}
    if reads_input:
        responses["400"] = {
            "description": "a bad parameter or field: each is listed",
            "content": errors,
        }
    if svc.login_required:
        responses["401"] = {"description": "not logged in", "content": errors}
    if svc.csrf and method not in SAFE_METHODS:
        responses["403"] = {
            "description": "no valid CSRF token (X-CSRF-Token)",
            "content": errors,
        }
    if has_path:
        responses["404"] = {
            "description": "no such resource (a path parameter that does not parse)",
            "content": errors,
        }
    responses["default"] = {
        "description": "an error the service answers on purpose (pyweb.HTTPError), or the "
        "server's (413, 500, 503)",
        "content": errors,
    }
    return responses


def _answer_content(svc: Service, schemas: _Schemas) -> dict[str, Any] | None:
    """What the return annotation says the answer is (None: it does not say)."""
    try:
        annotation = typing.get_type_hints(svc.func).get("return")
    except Exception:
        return None
    if annotation is None or annotation is type(None) or annotation is Any:
        return None
    if annotation in (str, bytes) or hasattr(annotation, "__html__"):
        return {"text/html": {"schema": {"type": "string"}}}
    origin = typing.get_origin(annotation) or annotation
    if origin in (dict, list) or (isinstance(annotation, type) and typing.is_typeddict(annotation)):
        return {"application/json": {"schema": schemas.of(annotation)}}
    return None


def form_schema(annotation: Any) -> dict[str, Any]:
    """The JSON Schema of a form variable of type ``annotation`` (as :func:`forms.getter_for`
    reads it)."""
    inner, optional = forms.split_optional(annotation)
    if optional:
        return form_schema(inner)  # (missing or invalid is None: not required)
    if typing.get_origin(inner) is Annotated:
        base, *metadata = typing.get_args(inner)
        for item in reversed(metadata):
            if callable(item):
                return _getter_schema(item)
        return form_schema(base)
    if typing.get_origin(inner) is Literal:
        return _enum_schema(typing.get_args(inner))
    if isinstance(inner, type) and issubclass(inner, enum.Enum):
        return _enum_schema([m.value for m in inner])
    return _getter_schema(forms.getter_for(inner))


def _getter_schema(getter: Callable[..., Any]) -> dict[str, Any]:
    bounds: dict[str, Any] = {}
    while isinstance(getter, functools.partial):  # get_nat with its own min and max
        bounds = {**getter.keywords, **bounds}
        getter = getter.func
    schema = dict(_GETTER_SCHEMAS.get(getter, {"type": "string"}))
    if getter not in _GETTER_SCHEMAS:
        schema["description"] = f"read by {getattr(getter, '__name__', repr(getter))}"
    if "choices" in bounds:
        choices: Any = bounds["choices"]
        if isinstance(choices, type):  # an Enum class
            choices = [m.value for m in choices]  # type: ignore[attr-defined]
        return _enum_schema(choices)
    for key, word in (("min", "minimum"), ("max", "maximum"), ("max_length", "maxLength")):
        if bounds.get(key) is not None:
            schema[word] = bounds[key]
    return schema


def _enum_schema(values: Any) -> dict[str, Any]:
    values = list(values)
    if all(isinstance(v, str) for v in values):
        return {"type": "string", "enum": values}
    return {"enum": values}


class _Schemas:
    """JSON Schemas of JSON types, each dataclass or TypedDict once, under
    ``components/schemas`` (what :func:`pyweb.app.jsonbody.read_json` accepts)."""

    def __init__(self) -> None:
        self.found: dict[str, Any] = {}
        self._names: dict[Any, str] = {}

    def of(self, annotation: Any) -> dict[str, Any]:
        if annotation is Any:
            return {}
        if annotation is None or annotation is type(None):
            return {"type": "null"}
        simple = {str: "string", int: "integer", float: "number", bool: "boolean"}
        if annotation in simple:
            return {"type": simple[annotation]}
        if annotation is datetime.date:
            return {"type": "string", "format": "date"}
        if is_json_type(annotation):
            return {"$ref": f"#/components/schemas/{self._named(annotation)}"}
        origin, args = typing.get_origin(annotation), typing.get_args(annotation)
        if origin is Annotated:
            return self.of(args[0])
        if origin is typing.Union or origin is types.UnionType:
            return {"anyOf": [self.of(a) for a in args]}
        if origin is Literal:
            return _enum_schema(args)
        if origin is list:
            return {"type": "array", "items": self.of(args[0]) if args else {}}
        if origin is dict:
            return {"type": "object", "additionalProperties": self.of(args[1]) if args else {}}
        if annotation in (list, dict):
            return {"type": "array" if annotation is list else "object"}
        return {}

    def _named(self, annotation: type) -> str:
        name = self._names.get(annotation)
        if name is not None:
            return name
        name = annotation.__name__
        if name in self.found or name == "Error":  # two types of one name: the longer one
            qualified = f"{annotation.__module__}.{annotation.__qualname__}"
            name = qualified.replace("<", "").replace(">", "")  # (<locals>: not allowed)
        self._names[annotation] = name
        self.found[name] = {}  # (taken before its fields: a type may refer to itself)
        self.found[name] = self._object(annotation)
        return name

    def _object(self, annotation: type) -> dict[str, Any]:
        hints = typing.get_type_hints(annotation)
        properties: dict[str, Any] = {}
        required: list[str] = []
        if dataclasses.is_dataclass(annotation):
            for f in dataclasses.fields(annotation):
                properties[f.name] = self.of(hints.get(f.name, Any))
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                    required.append(f.name)
        else:
            needed = getattr(annotation, "__required_keys__", frozenset(hints))
            for key, hint in hints.items():
                properties[key] = self.of(hint)
                if key in needed:
                    required.append(key)
        schema: dict[str, Any] = {
            "type": "object",
            "properties": properties,
            "additionalProperties": False,  # (read_json refuses a field the type lacks)
        }
        if required:
            schema["required"] = required
        doc = annotation.__doc__
        if doc and not doc.startswith(annotation.__name__ + "("):  # (not the dataclass's own)
            schema["description"] = inspect.cleandoc(doc)
        return schema
