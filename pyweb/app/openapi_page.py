"""``/_pyweb/openapi``: the site's OpenAPI document as a page a person reads.

The document itself is :func:`pyweb.app.openapi.document`; this module only shows it: one
section per operation (method, path, summary), a table of its parameters, its body's
schema and its answers, each schema written out as an indented list. Plain HTML and a
little CSS, made here: the page loads nothing from elsewhere and runs no script.
"""

from __future__ import annotations

import html
import json
from typing import Any

from pyweb.protocol.response import Response

__all__ = ["openapi_page", "openapi_json"]

_STYLE = """
body{font:15px/1.45 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#222}
h2{border-top:1px solid #ddd;padding-top:1rem;font-size:1.1rem}
.method{display:inline-block;min-width:4.5rem;text-align:center;border-radius:4px;
 color:#fff;background:#555;padding:0 .4rem;margin-right:.5rem;font-weight:bold}
.get{background:#2b6cb0}.post{background:#2f855a}.put,.patch{background:#b7791f}
.delete{background:#c53030}
table{border-collapse:collapse}td,th{border:1px solid #ddd;padding:.2rem .5rem;text-align:left}
code{background:#f4f4f4;padding:0 .2rem}ul.schema{margin:.2rem 0}
"""


_NEEDS = {
    "csrf": "the session's CSRF token (X-CSRF-Token)",
    "session": "a logged-in session (its cookie)",
}


def openapi_json(doc: dict[str, Any]) -> Response:
    """``/_pyweb/openapi.json``: the document as JSON."""
    return Response(
        200,
        [("Content-Type", "application/json"), ("Cache-Control", "no-store")],
        json.dumps(doc, indent=1).encode(),
    )


def openapi_page(doc: dict[str, Any]) -> Response:
    """``/_pyweb/openapi``: the document as HTML."""
    title = _e(doc["info"]["title"])
    parts = [
        f"<!doctype html><html lang=en><head><meta charset=utf-8><title>{title}: API</title>"
        f"<style>{_STYLE}</style></head><body><h1>{title}: API</h1>"
        f"<p>{_e(doc['info'].get('description', ''))} OpenAPI {_e(doc['openapi'])}: "
        '<a href="/_pyweb/openapi.json">openapi.json</a>.</p>'
    ]
    schemas = doc.get("components", {}).get("schemas", {})
    if not doc["paths"]:
        parts.append("<p>This site has no services.</p>")
    for path, operations in doc["paths"].items():
        for method, op in operations.items():
            parts.append(_operation(path, method, op, schemas))
    parts.append("</body></html>")
    return Response(
        200,
        [("Content-Type", "text/html; charset=utf-8"), ("Cache-Control", "no-store")],
        "".join(parts).encode(),
    )


def _e(text: Any) -> str:
    return html.escape(str(text))


def _operation(path: str, method: str, op: dict[str, Any], schemas: dict[str, Any]) -> str:
    out = [
        f'<h2 id="{_e(op.get("operationId", ""))}"><span class="method {_e(method)}">'
        f"{_e(method.upper())}</span><code>{_e(path)}</code></h2><p>{_e(op.get('summary', ''))}</p>"
    ]
    if op.get("description"):
        out.append(f"<p>{_e(op['description'])}</p>")
    if op.get("security"):
        needs = " and ".join(_NEEDS.get(name, name) for name in sorted(op["security"][0]))
        out.append(f"<p>Needs {_e(needs)}.</p>")
    if op.get("parameters"):
        out.append("<table><tr><th>parameter</th><th>in</th><th>required</th><th>type</th></tr>")
        for p in op["parameters"]:
            out.append(
                f"<tr><td><code>{_e(p['name'])}</code></td><td>{_e(p['in'])}</td>"
                f"<td>{'yes' if p.get('required') else 'no'}</td>"
                f"<td>{_schema(p.get('schema', {}), schemas)}</td></tr>"
            )
        out.append("</table>")
    body = op.get("requestBody")
    if body:
        for media, content in body.get("content", {}).items():
            required = "required" if body.get("required") else "optional"
            out.append(
                f"<p>Body ({_e(required)}), <code>{_e(media)}</code>: "
                f"{_schema(content.get('schema', {}), schemas)}</p>"
            )
    out.append("<p>Answers:</p><ul>")
    for status, answer in op.get("responses", {}).items():
        media = ", ".join(f"<code>{_e(m)}</code>" for m in answer.get("content", {}))
        out.append(f"<li><b>{_e(status)}</b>: {_e(answer.get('description', ''))}")
        if media:
            out.append(f" ({media})")
        ok = answer.get("content", {}).get("application/json", {}).get("schema")
        if ok and status.startswith("2"):
            out.append(": " + _schema(ok, schemas))
        out.append("</li>")
    out.append("</ul>")
    return "".join(out)


def _schema(schema: dict[str, Any], schemas: dict[str, Any], depth: int = 0) -> str:
    """A JSON Schema as words and nested lists (a type named once is shown by its name
    below the first level, so a type that refers to itself ends)."""
    ref = schema.get("$ref")
    if ref is not None:
        name = ref.rsplit("/", 1)[-1]
        if depth > 2 or name not in schemas:
            return f"<code>{_e(name)}</code>"
        return f"<code>{_e(name)}</code> {_schema(schemas[name], schemas, depth + 1)}"
    if "anyOf" in schema:
        return " or ".join(_schema(s, schemas, depth) for s in schema["anyOf"])
    if "enum" in schema:
        return "one of " + ", ".join(f"<code>{_e(json.dumps(v))}</code>" for v in schema["enum"])
    kind = schema.get("type", "any value")
    words = [_e(kind)]
    for key in ("format", "minimum", "maximum", "minLength", "maxLength"):
        if key in schema:
            words.append(f"{_e(key)} {_e(schema[key])}")
    text = " ".join(words)
    if kind == "array":
        return f"array of {_schema(schema.get('items', {}), schemas, depth)}"
    if kind == "object" and schema.get("properties"):
        required = set(schema.get("required", ()))
        items = "".join(
            f"<li><code>{_e(name)}</code>{'' if name in required else ' (optional)'}: "
            f"{_schema(sub, schemas, depth + 1)}</li>"
            for name, sub in schema["properties"].items()
        )
        return f'object<ul class="schema">{items}</ul>'
    return text
