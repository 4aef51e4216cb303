"""The fast path of :mod:`pyweb.html`: the constructors make their nodes without ``__init__``.

A page built per request makes a node for every element (a 500-row table is 2,500 of
them), and most of them are the cells and rows of a table: no attributes, text, numbers
or nodes already rendered inside. ``Node(tag, children, attrs)`` (Hop §2.1's node
constructor, as ``pyweb/html.py`` writes it) checks what it was given and takes the
general set-up; the versions here make the node with ``object.__new__`` and fill in only
the fields such a node needs, its HTML made at once. The nodes are the same: equal,
hashed alike, rendered alike, still immutable to everyone else.

* :func:`fast_constructor` decorates the capitalised constructors (``TD``, ``TR``...) that
  ``pyweb/html.py`` writes plainly as ``Node(tag, children, attrs)``;
* :func:`fast_element` decorates :func:`pyweb.html.element` likewise;
* :func:`use` hands this module pyweb.html's own pieces (the node class, the set-up, the
  escape), once, before either decorates anything.

The plain functions stay reachable as their ``__wrapped__``. What the bypass saves is
measured in docs/performance.md ("Nodes made without ``Node.__init__``");
tests/test_html.py checks that both give equal nodes, equal HTML and equal errors.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar, cast

__all__ = ["fast_constructor", "fast_element", "use"]

F = TypeVar("F", bound=Callable[..., Any])
# (tag, "<tag>", "<tag", "</tag>", is void, is raw text, is plain): pyweb.html's _TagInfo.
TagInfo = tuple[str, str, str, str, bool, bool, bool]
Setup = Callable[[Any, TagInfo, Any, Any], None]


# pyweb.html's own pieces, handed over once by :func:`use` (this module imports nothing of
# pyweb). They are module globals, not closure cells, on purpose: a function reads a global
# through a cache, while every closure cell is copied into the frame at each call, and a
# constructor is called for every element of a page.
_node_class: Any = None
_setup: Setup
_tag_info: Callable[[str], TagInfo]
_attr_name: Callable[[str], str]
_attr_names: dict[str, str]
_needs_escape: Callable[[str], object]
_escape_text: Callable[[str], str]
_render_now_limit: int
_new = object.__new__


def use(
    node_class: type[Any],
    setup: Setup,
    tag_info: Callable[[str], TagInfo],
    attr_name: Callable[[str], str],
    attr_names: dict[str, str],
    needs_escape: Callable[[str], object],
    escape_text: Callable[[str], str],
    render_now_limit: int,
) -> None:
    """Take pyweb.html's pieces: the node class, ``_setup`` (the general set-up), the tag
    information, the attribute-name translation and its table of names already translated,
    the escape test and the escape, and the length up to which a node renders when built."""
    global _node_class, _setup, _tag_info, _attr_name, _attr_names
    global _needs_escape, _escape_text, _render_now_limit
    _node_class, _setup, _tag_info, _attr_name = node_class, setup, tag_info, attr_name
    _attr_names, _needs_escape, _escape_text = attr_names, needs_escape, escape_text
    _render_now_limit = render_now_limit


def fast_element(plain: F) -> F:
    """A decorator: ``element(tag, *children, **attrs)`` with its node made by
    ``object.__new__`` and set up directly, without ``Node.__init__``'s checks."""

    def element(tag: str, *children: Any, **attrs: Any) -> Any:
        node = _new(_node_class)
        _setup(node, _tag_info(tag), children, [(_attr_name(k), v) for k, v in attrs.items()])
        return node

    return cast(F, functools.update_wrapper(element, plain))


def _rendered_now(open_tag: str, close: str, children: tuple[Any, ...]) -> str | None:
    """The HTML of an element whose children are all text, ints or nodes already rendered
    (and not too long); None when one is anything else. The length is checked once, on the
    result: a running count cost more than the join it saves."""
    parts = [open_tag]
    append = parts.append
    for kid in children:
        t = type(kid)
        if t is _node_class:
            html = kid._cache
            if html is None:
                return None
            append(html)
        elif t is str:
            append(kid if _needs_escape(kid) is None else _escape_text(kid))
        elif t is int:
            append(str(kid))
        else:
            return None
    append(close)
    html = "".join(parts)
    return html if len(html) <= _render_now_limit else None


def fast_constructor(info: TagInfo) -> Callable[[F], F]:
    """A decorator for the constructor of the tag ``info`` describes (pyweb.html's
    ``_TagInfo``): the node made in line, its HTML made now when it can be."""
    tag, open_plain, _, close, void, _, plain = info
    short = plain and not void  # see below

    def decorate(plain_construct: F) -> F:
        def construct(*children: Any, **attrs: Any) -> Any:
            if attrs:
                node = _new(_node_class)
                pairs = [(_attr_names.get(k) or _attr_name(k), v) for k, v in attrs.items()]
                _setup(node, info, children, pairs)
                return node
            if not short:
                node = _new(_node_class)
                _setup(node, info, children, None)
                return node
            # The commonest nodes of a page built from rows (TD(value), TR(TD(...), ...)):
            # the node's HTML made now. One text (escaped) or int child is the commonest of
            # all and needs no list. Each test below is asked once (a call to len or type is
            # a good part of a small node).
            html: str | None
            if len(children) == 1:
                kid = children[0]
                t = type(kid)
                if t is str or t is int:
                    # The one text child is kept alone, not in the call's tuple: the tuple is
                    # freed now instead of living as long as the page, one object fewer per
                    # cell for the cyclic collector to count and visit.
                    node = _new(_node_class)
                    node._tag = tag
                    node._open = open_plain
                    node._close = close
                    node._children = kid
                    node._cache = (
                        f"{open_plain}{kid}{close}"
                        if t is int or _needs_escape(kid) is None
                        else f"{open_plain}{_escape_text(kid)}{close}"
                    )
                    return node
                html = _rendered_now(open_plain, close, children)
            else:
                html = _rendered_now(open_plain, close, children)
            node = _new(_node_class)
            if html is None:
                _setup(node, info, children, None)
                return node
            # Only what a rendered node without attributes needs is stored: _attrs, _items,
            # _cacheable and _seen stay unset, read only through Node.attrs or once _cache
            # is None (see the class). Four stores fewer, and four fields fewer for the
            # collector to visit.
            node._tag = tag
            node._open = open_plain
            node._close = close
            node._children = children
            node._cache = html
            return node

        return cast(F, functools.update_wrapper(construct, plain_construct))

    return decorate
