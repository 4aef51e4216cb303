"""A griffe extension for the docs build: pyweb's docstrings use Sphinx's inline roles
(``:func:`get_nat```, ``:class:`~pyweb.app.conn.Conn```) and reStructuredText's ``::``
literal blocks; mkdocstrings renders Markdown, where both would show as raw text. This
rewrites each docstring before it is rendered:

* a role becomes a cross-reference to the object's entry in the API reference when the
  name resolves (``~`` shows the last part only, as in Sphinx), and plain code otherwise;
  the reference is *optional*, so a name the reference does not document is code, not a
  broken link;
* a paragraph ending in ``::`` followed by an indented block becomes the paragraph (ending
  in ``:``) and a fenced Python code block.

Loaded by mkdocstrings (``extensions:`` in ``mkdocs.yml``). ``scripts/check_docs_site.py``
then checks that no raw role or ``::`` is left in the built site.
"""

from __future__ import annotations

import html
import re
import textwrap
from typing import Any

import griffe

ROLE = re.compile(r":(?:py:)?(func|class|meth|mod|attr|data|exc|obj|const):`(~?)([^`]+)`")


def _resolve(obj: Any, target: str) -> str | None:
    """The full dotted path of ``target`` as seen from ``obj``'s scope, or None."""
    if target.startswith("pyweb.") or target.startswith("pyweb_regions."):
        return target
    head, _, rest = target.partition(".")
    scope = obj
    while scope is not None:
        try:
            found = scope.resolve(head)
        except Exception:  # griffe's NameResolutionError, or a scope that cannot resolve
            found = None
        if found:
            return f"{found}.{rest}" if rest else found
        scope = scope.parent
    return None


def roles_to_markdown(text: str, obj: Any) -> str:
    def replace(match: re.Match[str]) -> str:
        short, target = match.group(2), match.group(3).strip()
        target = target.removesuffix("()")
        shown = target.rsplit(".", 1)[-1] if short else target
        if match.group(1) in ("func", "meth"):
            shown += "()"
        full = _resolve(obj, target)
        code = f"<code>{html.escape(shown)}</code>"
        if full is None:
            return code
        return f'<autoref identifier="{html.escape(full)}" optional>{code}</autoref>'

    return ROLE.sub(replace, text)


def literal_blocks(text: str) -> str:
    """``Use::`` + an indented block → ``Use:`` + a fenced code block."""
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.rstrip().endswith("::"):
            stripped = line.rstrip()[:-2].rstrip()
            if stripped:
                out.append(stripped + ":")
            i += 1
            block: list[str] = []
            while i < len(lines) and not lines[i].strip():
                i += 1
            while i < len(lines) and (not lines[i].strip() or lines[i].startswith((" ", "\t"))):
                block.append(lines[i])
                i += 1
            while block and not block[-1].strip():
                block.pop()
            if block:
                out += ["", "```python", textwrap.dedent("\n".join(block)), "```", ""]
            continue
        out.append(line)
        i += 1
    return "\n".join(out)


def _rewrite(obj: Any, seen: set[int]) -> None:
    if id(obj) in seen or getattr(obj, "is_alias", False):
        return
    seen.add(id(obj))
    docstring = getattr(obj, "docstring", None)
    if docstring is not None and docstring.value:
        docstring.value = roles_to_markdown(literal_blocks(docstring.value), obj)
    for member in getattr(obj, "members", {}).values():
        _rewrite(member, seen)


class SphinxRolesToMarkdown(griffe.Extension):
    """Rewrite every docstring of a package once it is loaded (so names defined anywhere
    in it resolve)."""

    def on_package(self, *, pkg: Any, **kwargs: Any) -> None:
        _rewrite(pkg, set())
