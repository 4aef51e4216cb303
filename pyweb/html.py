"""HTML as node constructors, after Hop §2.1.

In Hop (Serrano, *Hop, a Fast Server for the Diffuse Web*, COORDINATION 2009, §2.1) the
markups ``<HTML>``, ``<DIV>``... are not text but *node constructors*: a service builds an
abstract syntax tree (AST) of the page, and the server compiles the tree into HTML while it
sends the reply. The paper's example and its Python equivalent::

    (define-service (hello)                       @service("/hello")
       (<HTML> (<DIV> "Hello")))                  async def hello():
                                                      return HTML(DIV("Hello"))

Because the page is a value and not a string, it can be built once and reused. Hop's
``hello-ast`` is elaborated at load time, stored in a global and returned by every request::

    (define hello-ast (<HTML> (<DIV> "Hello")))   hello_ast = HTML(DIV("Hello"))
    (define-service (hello) hello-ast)            @service("/hello")
                                                  async def hello():
                                                      return hello_ast

Here nodes are immutable, and a node whose whole subtree is made of nodes, strings and
numbers remembers its HTML the first time it is rendered; returning ``hello_ast`` again
costs a lookup. (A constant subtree inside a page built per request is cached the second
time it is met, so a navigation bar built once at import is rendered once too.)

Building a node: children are positional, attributes keyword arguments::

    A("Play again?", href="guess")           ->  <a href="guess">Play again?</a>
    INPUT(type="hidden", name="n", value=42) ->  <input type="hidden" name="n" value="42">
    LABEL("Name", for_="name", class_="big") ->  <label for="name" class="big">Name</label>
    DIV(data_id=7, hidden=True)              ->  <div data-id="7" hidden></div>

* Children: ``str``, ``int`` and ``float`` are text and are escaped; a :class:`Node`, or any
  object with an ``__html__`` method (a ``pyweb.quot.Quot``, a :func:`safe` string,
  ``markupsafe.Markup``) is inserted as HTML; ``None``, ``True`` and ``False`` are skipped (so
  ``user and B(user)`` works); lists, tuples and iterators (generators) are spliced in.
* Attributes: a trailing underscore is dropped (``class_``, ``for_``), other underscores
  become hyphens (``data_id``, ``http_equiv``); ``True`` gives a bare attribute, ``False`` and
  ``None`` leave it out; values are escaped for a double-quoted attribute value.
* Void elements (``BR``, ``IMG``, ``INPUT``...) take no children; ``SCRIPT`` and ``STYLE``
  are raw text: their text is not escaped, and must not contain their end tag.

Every capitalised name of the common HTML5 elements is exported (``HTML``, ``HEAD``, ``BODY``,
``H1``...``H6``, ``P``, ``DIV``, ``A``, ``TABLE``, ``TR``, ``TD``, ``FORM``, ``INPUT``...
and the paper's ``CENTER``); :func:`element` builds any other tag and :func:`document` adds
the ``<!DOCTYPE html>``. This module stands alone; from pyweb it only uses the
:class:`~pyweb.quot.Safe` strings of ``pyweb.quot``.
"""

from __future__ import annotations

import html as _html
import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import pyweb._html_fast as _html_fast
from pyweb.quot import Safe, safe

__all__ = [
    "CONSTRUCTORS",
    "Node",
    "RAW_TEXT_ELEMENTS",
    "Safe",
    "VOID_ELEMENTS",
    "document",
    "element",
    "safe",
    "HTML",
    "HEAD",
    "TITLE",
    "META",
    "LINK",
    "STYLE",
    "SCRIPT",
    "BODY",
    "H1",
    "H2",
    "H3",
    "H4",
    "H5",
    "H6",
    "P",
    "DIV",
    "SPAN",
    "A",
    "IMG",
    "BR",
    "HR",
    "UL",
    "OL",
    "LI",
    "DL",
    "DT",
    "DD",
    "TABLE",
    "CAPTION",
    "THEAD",
    "TBODY",
    "TFOOT",
    "TR",
    "TH",
    "TD",
    "FORM",
    "INPUT",
    "BUTTON",
    "LABEL",
    "SELECT",
    "OPTION",
    "TEXTAREA",
    "FIELDSET",
    "LEGEND",
    "PRE",
    "CODE",
    "EM",
    "STRONG",
    "I",
    "B",
    "SMALL",
    "SUB",
    "SUP",
    "BLOCKQUOTE",
    "NAV",
    "HEADER",
    "FOOTER",
    "MAIN",
    "SECTION",
    "ARTICLE",
    "ASIDE",
    "FIGURE",
    "FIGCAPTION",
    "IFRAME",
    "CENTER",
]

_escape = _html.escape

# Elements that never have content or an end tag (HTML Living Standard, "void elements").
VOID_ELEMENTS = frozenset(
    "area base br col embed hr img input link meta param source track wbr".split()
)
# Raw text elements: the parser reads their content as text up to their end tag, without
# decoding character references, so their text must be written unescaped.
RAW_TEXT_ELEMENTS = frozenset({"script", "style"})
# The parser drops one newline right after these start tags.
_NEWLINE_ELEMENTS = frozenset({"pre", "textarea", "listing"})

_TAG_NAME = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:-[A-Za-z0-9._-]*)?\Z")
# HTML attribute names: anything but controls, spaces, quotes, '>', '/', '=' (and not empty).
_ATTR_NAME = re.compile(r"[^\s\x00-\x1f\x7f\"'>/=]+\Z")

_MAX_CHUNK = 8192  # write_to() hands the writer pieces of about this many characters
# A node made of text and rendered nodes renders itself when it is built, copying its
# children's HTML, while that HTML is at most this long: a table row is rendered once, as
# it is made, and a tree nested deeply does not copy its text once per level.
_RENDER_NOW_LIMIT = 2048

# What is known about a tag, computed once per tag name (pages build thousands of nodes per
# request, and most of what a tag needs does not depend on the node):
# (tag, "<tag>", "<tag", "</tag>" or "" for void elements, is void, is raw text, is plain:
# neither raw text nor one whose leading newline needs care).
_TagInfo = tuple[str, str, str, str, bool, bool, bool]
_TAG_INFO: dict[str, _TagInfo] = {}
# Python keyword names already translated ("class_" -> "class"), and attribute lists checked.
_PY_ATTR_NAMES: dict[str, str] = {}
_CHECKED_ATTR_NAMES: set[tuple[str, ...]] = set()  # lists of names, all valid, no repeat
_CACHE_LIMIT = 4096  # user-made names are remembered only up to this many


def _tag_info(tag: str) -> _TagInfo:
    info = _TAG_INFO.get(tag)
    if info is not None:
        return info
    if not isinstance(tag, str) or not _TAG_NAME.match(tag):
        raise ValueError(f"invalid HTML tag name: {tag!r}")
    name = tag.lower()
    void = name in VOID_ELEMENTS
    info = (
        name,
        f"<{name}>",
        f"<{name}",
        "" if void else f"</{name}>",
        void,
        name in RAW_TEXT_ELEMENTS,
        name not in RAW_TEXT_ELEMENTS and name not in _NEWLINE_ELEMENTS,
    )
    if len(_TAG_INFO) < _CACHE_LIMIT:
        _TAG_INFO[tag] = info
    return info


def _attr_name(python_name: str) -> str:
    """``class_`` -> ``class``, ``data_id`` -> ``data-id``, ``http_equiv`` -> ``http-equiv``."""
    name = _PY_ATTR_NAMES.get(python_name)
    if name is None:
        name = python_name[:-1] if python_name.endswith("_") else python_name
        name = name.replace("_", "-")
        if len(_PY_ATTR_NAMES) < _CACHE_LIMIT:
            _PY_ATTR_NAMES[python_name] = name
    return name


def _attr_value(tag: str, name: str, value: object) -> str | None:
    """The text of ``name="..."`` (already escaped), ``""`` for a bare attribute, None to omit."""
    if type(value) is str:
        return f'="{_escape(value, True)}"'
    if value is True:
        return ""
    if value is False or value is None:
        return None
    if isinstance(value, str):
        html_method = getattr(value, "__html__", None)
        if html_method is None:
            return f'="{_escape(value, True)}"'
    elif isinstance(value, (int, float)):
        return f'="{value}"'
    else:
        html_method = getattr(value, "__html__", None)
        if html_method is None:
            raise TypeError(
                f"<{tag}>: attribute {name!r} must be a str, a number, True/False/None or "
                f"HTML (__html__), not {type(value).__name__}: {value!r}"
            )
    # Already HTML (entities are kept); only a raw '"' could end the quoted value early.
    return '="' + html_method().replace('"', "&quot;") + '"'


def _open_tag(info: _TagInfo, pairs: list[tuple[str, Any]]) -> str:
    """The start tag with its attributes, escaped for double-quoted values."""
    tag = info[0]
    names = tuple([name for name, _ in pairs])
    try:
        known = names in _CHECKED_ATTR_NAMES  # a page uses the same few lists of names
    except TypeError:  # an unhashable name: _check_attr_names says which
        known = False
    if not known:
        _check_attr_names(tag, names)
    parts = [info[2]]
    append = parts.append
    for name, value in pairs:
        if type(value) is str:
            if _needs_escape(value) is not None:
                value = _escape(value, True)
            append(f' {name}="{value}"')
        elif type(value) is int:
            append(f' {name}="{value}"')
        else:
            text = _attr_value(tag, name, value)
            if text is not None:
                append(f" {name}{text}")
    append(">")
    return "".join(parts)


def _check_attr_names(tag: str, names: tuple[str, ...]) -> None:
    """Valid attribute names, none given twice (in any letter case); remembered."""
    for name in names:
        if not isinstance(name, str) or not _ATTR_NAME.match(name):
            raise ValueError(f"<{tag}>: invalid attribute name {name!r}")
    seen: set[str] = set()
    for name in names:
        if name.lower() in seen:
            raise ValueError(f"<{tag}>: attribute {name!r} given twice")
        seen.add(name.lower())
    if len(_CHECKED_ATTR_NAMES) < _CACHE_LIMIT:
        _CHECKED_ATTR_NAMES.add(names)


def _setup(node: Node, info: _TagInfo, children: tuple[Any, ...] | list[Any], pairs: Any) -> None:
    """Fill in a new node: check and flatten the children, escape text, build the tags.

    A page built per request calls this for every element (a 500-row table is 2,500 of
    them), so the common case takes a short path: when every child is text, an int or a
    node whose HTML is already known, the node's own HTML is known too, and it is made now
    (``render`` is then a lookup, and the parent can do the same). Anything else takes the
    general path, which keeps the children as render items.
    """
    tag, open_plain, _, close, void, raw, plain = info
    node._tag = tag
    if pairs:
        if type(pairs) is not list:
            pairs = list(pairs)
        node._open = open_tag = _open_tag(info, pairs)
        node._attrs = tuple(pairs)
    else:
        node._open = open_tag = open_plain
        node._attrs = ()
    node._close = close
    node._seen = False
    if plain:
        parts = [open_tag]
        append = parts.append
        copied = 0  # characters of the children's HTML copied into this node's
        for kid in children:
            t = type(kid)
            if t is str:
                append(kid if _needs_escape(kid) is None else _escape_text(kid))
            elif t is Node:
                html = kid._cache
                if html is None:
                    break
                copied += len(html)
                if copied > _RENDER_NOW_LIMIT:
                    break
                append(html)
            elif t is int:
                append(str(kid))
            else:
                break
        else:
            if children and void:
                raise ValueError(
                    f"<{tag}> is a void element and cannot have children, got {children[0]!r}"
                )
            append(close)
            node._children = tuple(children)
            node._cacheable = True
            node._items = ()
            node._cache = "".join(parts)
            return
    _setup_items(node, tag, open_tag, close, void, raw, plain, children)


def _setup_items(
    node: Node,
    tag: str,
    open_tag: str,
    close: str,
    void: bool,
    raw: bool,
    plain: bool,
    children: tuple[Any, ...] | list[Any],
) -> None:
    """The rest of :func:`_setup`: the render items (text escaped once, here; a rendered
    node's HTML; other nodes and HTML objects kept), and the HTML now if only text is inside."""
    items: list[Any] = []
    append = items.append
    leaf = True  # only text inside
    cacheable = True  # only text and constant nodes inside
    done = False
    if plain:  # nodes not rendered yet (or large ones), text and ints: no flattening needed
        for kid in children:
            t = type(kid)
            if t is str:
                append(_escape(kid, True))
            elif t is Node:
                leaf = False
                html = kid._cache
                if html is not None:  # rendered already (and immutable): its HTML is the item
                    append(html)
                else:
                    append(kid)
                    if not kid._cacheable:
                        cacheable = False
            elif t is int:
                append(str(kid))
            else:
                break
        else:
            done = True
            children = tuple(children)
            if children and void:
                raise ValueError(
                    f"<{tag}> is a void element and cannot have children, got {children[0]!r}"
                )
    if not done:
        kids: list[Any] = []
        _flatten_children(tag, children, kids)
        children = tuple(kids)
        if children and void:
            raise ValueError(
                f"<{tag}> is a void element and cannot have children, got {children[0]!r}"
            )
        items, leaf, cacheable = _general_items(tag, children, raw)
    node._children = children  # type: ignore[assignment]  # a tuple by now (both branches)
    node._cacheable = cacheable
    if leaf:
        # Only text inside: the rendering is known now, so keep it (render is a lookup).
        node._items = ()
        node._cache = open_tag + (items[0] if len(items) == 1 else "".join(items)) + close
    else:
        node._items = tuple(items)
        node._cache = None


def _general_items(tag: str, children: tuple[Any, ...], raw: bool) -> tuple[list[Any], bool, bool]:
    """The render items of any (flattened) children; see :func:`_setup`."""
    items: list[Any] = []
    append = items.append
    leaf = True
    cacheable = True
    if raw:
        for kid in children:
            if not isinstance(kid, (str, int, float)):
                raise TypeError(f"<{tag}> holds raw text (str), not {type(kid).__name__}: {kid!r}")
            append(_raw_text(tag, str(kid)))
        return items, leaf, cacheable
    for kid in children:
        if isinstance(kid, Node):
            leaf = False
            html = kid._cache
            if html is not None:  # rendered already (and immutable): its HTML is the item
                append(html)
                continue
            append(kid)
            if not kid._cacheable:
                cacheable = False
        elif isinstance(kid, str):  # Safe and markupsafe.Markup are HTML; immutable
            html_method = getattr(kid, "__html__", None)
            append(str(html_method()) if html_method is not None else _escape(kid, True))
        elif isinstance(kid, (int, float)):
            append(str(kid))
        else:  # another __html__ object (a Quot...): asked at each render, never cached
            append(kid)
            leaf = False
            cacheable = False
    if tag in _NEWLINE_ELEMENTS and items and type(items[0]) is str and items[0][:1] == "\n":
        # The parser drops one newline right after <pre> and <textarea>: add one so that a
        # text starting with a newline keeps it.
        items.insert(0, "\n")
    return items, leaf, cacheable


# Most text has nothing to escape: one search finds out, cheaper than five replaces.
_needs_escape = re.compile("[&<>\"']").search


def _escape_text(text: str) -> str:
    """``html.escape(text, quote=True)`` for element content (the same five characters)."""
    return (
        text.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&quot;")
        .replace("'", "&#x27;")
    )


class Node:
    """One HTML element: a tag, its children and its attributes (Hop's AST node).

    ``Node(tag, children, attrs)`` takes the HTML names as they are (``attrs`` is a mapping
    or pairs, ``{"class": "x"}``); the capitalised constructors and :func:`element` also
    translate Python keyword names (``class_`` -> ``class``). Nodes are immutable: ``tag``,
    ``children`` (a tuple, with lists and generators spliced in and None/True/False dropped)
    and ``attrs`` (a tuple of ``(name, value)`` pairs) cannot be reassigned.

    Render with :meth:`render` (a str), :meth:`encode` (UTF-8 bytes), :meth:`write_to` (into
    a writer, piece by piece), ``str(node)``, or let jinja2/markupsafe or a Quot take it
    through ``__html__``. Text is escaped and attribute values are turned into text when the
    node is built; children with an ``__html__`` method (other than strings) are asked for
    their HTML at each render.
    """

    # A node made by the constructors' short path (text, ints and rendered nodes inside,
    # no attributes: most nodes of a page) has its HTML in _cache and leaves _attrs,
    # _items, _cacheable and _seen unset: they are read only when _cache is None, or
    # through the attrs property, which gives () for them.
    __slots__ = (
        "_tag",
        "_children",
        "_attrs",
        "_open",
        "_close",
        "_items",
        "_cacheable",
        "_cache",
        "_seen",
    )

    _tag: str
    _children: tuple[Any, ...] | str | int  # a lone str or int child alone (see children)
    _attrs: tuple[tuple[str, Any], ...]
    _open: str
    _close: str
    _items: tuple[Any, ...]
    _cacheable: bool
    _cache: str | None
    _seen: bool

    def __init__(
        self,
        tag: str,
        children: Iterable[Any] = (),
        attrs: Iterable[tuple[str, Any]] | dict[str, Any] | None = None,
    ) -> None:
        if isinstance(children, (str, Node)) or hasattr(children, "__html__"):
            children = (children,)  # Node("p", "text"): one child, not its characters
        elif not isinstance(children, (tuple, list)):
            children = tuple(children)
        pairs = attrs.items() if isinstance(attrs, dict) else attrs
        _setup(self, _tag_info(tag), children, pairs)

    # -- read-only views ----------------------------------------------------------------

    @property
    def tag(self) -> str:
        """The tag name, lower case."""
        return self._tag

    @property
    def children(self) -> tuple[Any, ...]:
        """The children, flattened, with None/True/False dropped."""
        children = self._children
        # A lone str or int child is stored by itself (the constructors' short path).
        return children if type(children) is tuple else (children,)

    @property
    def attrs(self) -> tuple[tuple[str, Any], ...]:
        """The attributes as ``(html_name, value)`` pairs, in the order given."""
        try:
            return self._attrs
        except AttributeError:  # a node of the constructors' short path: none (see above)
            return ()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Node):
            return NotImplemented
        return (
            self._open == other._open
            and self._close == other._close
            and self.children == other.children
        )

    def __hash__(self) -> int:
        return hash((self._open, self.children))

    def __repr__(self) -> str:
        return f"Node({', '.join([repr(self._tag), *self._repr_args()])})"

    def _repr_args(self) -> list[str]:
        args = [repr(list(self.children))]
        if self.attrs:
            args.append(repr(dict(self.attrs)))
        return args

    # -- rendering ----------------------------------------------------------------------

    def render(self) -> str:
        """The HTML of this node and its subtree, as one str (cached when constant)."""
        cache = self._cache
        if cache is not None:
            return cache
        parts: list[str] = []
        _render_into(self, parts.append)
        text = "".join(parts)
        if self._cacheable:
            self._cache = text
        return text

    def html_parts(self) -> list[str]:
        """The pieces :meth:`render` joins, in order (one piece when the node is constant
        and cached). A server can write them out one by one instead of joining them."""
        cache = self._cache
        if cache is not None:
            return [cache]
        if self._cacheable:
            return [self.render()]
        parts: list[str] = []
        _render_into(self, parts.append)
        return parts

    def encode(self, encoding: str = "utf-8") -> bytes:
        """The HTML as bytes, for a response body."""
        return self.render().encode(encoding)

    def write_to(self, write: Callable[[str], object]) -> None:
        """Render straight into a writer: ``write(piece)`` for consecutive pieces of the HTML.

        The pieces concatenate to :meth:`render`; they are up to about 8 KiB each, so a large
        page goes out without ever being one big string. A constant node writes its cached
        HTML in one call.
        """
        if self._cache is not None or self._cacheable:
            write(self.render())
            return
        buffer: list[str] = []
        size = 0

        def collect(part: str) -> None:
            nonlocal size
            buffer.append(part)
            size += len(part)
            if size >= _MAX_CHUNK:
                write("".join(buffer))
                buffer.clear()
                size = 0

        _render_into(self, collect)
        if buffer:
            write("".join(buffer))

    def __html__(self) -> str:
        """The markupsafe/jinja2 protocol: a node is HTML."""
        return self.render()

    def _repr_html_(self) -> str:
        """How Jupyter displays a node: as the HTML it renders to."""
        return self.render()

    def __str__(self) -> str:
        # Unlike a Quot, a node can only mean HTML, so str() is its HTML.
        return self.render()


class _Document(Node):
    """An ``<html>`` node rendered after ``<!DOCTYPE html>`` (see :func:`document`)."""

    __slots__ = ()

    def __init__(self, children: tuple[Any, ...], attrs: list[tuple[str, Any]]) -> None:
        _setup(self, _DOCUMENT_INFO, children, attrs)

    def __repr__(self) -> str:
        return f"document({', '.join(self._repr_args())})"


def _raw_text(tag: str, text: str) -> str:
    # The HTML parser ends a raw text element at the first "</script" (or "</style"), in any
    # letter case, whatever follows: such a string would close the element early and let the
    # rest be parsed as markup (the classic "</script><script>attack()" injection). Escaping
    # does not help, because entities are not decoded inside these elements, so refuse it.
    if f"</{tag}" in text.lower():
        raise ValueError(
            f"<{tag}> text cannot contain '</{tag}' (it would end the element early): {text!r}"
        )
    return text


_DOCUMENT_INFO: _TagInfo = (
    "html",
    "<!DOCTYPE html>\n<html>",
    "<!DOCTYPE html>\n<html",
    "</html>",
    False,
    False,
    True,
)


def _flatten_children(tag: str, children: Iterable[Any], out: list[Any]) -> None:
    for child in children:
        if type(child) is Node:  # the commonest child (rows of a table): asked first
            out.append(child)
        elif child is None or child is True or child is False:
            continue
        elif isinstance(child, (str, Node, int, float)) or hasattr(child, "__html__"):
            out.append(child)
        elif isinstance(child, (list, tuple, Iterator)):
            _flatten_children(tag, child, out)
        else:
            raise TypeError(
                f"<{tag}>: a child must be text, a number, a Node, HTML (__html__), None, a "
                f"bool, or a list/tuple/generator of these; got {type(child).__name__}: "
                f"{child!r}"
            )


def _render_into(root: Node, append: Callable[[str], object]) -> None:
    """Emit the HTML of ``root`` part by part, with an explicit stack (no recursion).

    Each stack level is an element being written: the iterator over its items, its end tag,
    and whether it is dynamic (not cacheable). Under a dynamic element a constant child is
    the top of a constant subtree; if it was met before (it is shared between pages, like a
    navigation bar built at import) it is rendered on its own once and cached. Inside a
    constant subtree nothing is marked, so ``render()`` nests at most one level deep.
    """
    if root._cache is not None:
        append(root._cache)
        return
    append(root._open)
    iterators = [iter(root._items)]
    closes = [root._close]
    dynamic = [not root._cacheable]
    while iterators:
        for item in iterators[-1]:
            if type(item) is str:
                append(item)
            elif isinstance(item, Node):
                cache = item._cache
                if cache is not None:
                    append(cache)
                    continue
                cacheable = item._cacheable
                if cacheable and dynamic[-1]:
                    if item._seen:
                        append(item.render())
                        continue
                    item._seen = True
                append(item._open)
                iterators.append(iter(item._items))
                closes.append(item._close)
                dynamic.append(not cacheable)
                break  # descend: the while loop continues with the child's items
            else:
                append(str(item.__html__()))
        else:  # this element's items are done
            iterators.pop()
            dynamic.pop()
            append(closes.pop())


# -- constructors -------------------------------------------------------------------------

# The constructors' fast path, given this module's pieces; each plain constructor stays as
# its __wrapped__ (pyweb/_html_fast.py).
_html_fast.use(
    Node,
    _setup,
    _tag_info,
    _attr_name,
    _PY_ATTR_NAMES,
    _needs_escape,
    _escape_text,
    _RENDER_NOW_LIMIT,
)


# element runs with its node made in line, without Node.__init__ (pyweb/_html_fast.py).
@_html_fast.fast_element
def element(tag: str, *children: Any, **attrs: Any) -> Node:
    """Build any element: ``element("my-widget", "text", data_x=1)``.

    Keyword names are translated like the capitalised constructors' (``class_`` -> ``class``,
    ``data_x`` -> ``data-x``).
    """
    return Node(tag, children, [(_attr_name(k), v) for k, v in attrs.items()])


def document(*children: Any, **attrs: Any) -> Node:
    """A whole page: ``<!DOCTYPE html>`` followed by an ``<html>`` node with these children.

    ``document(HEAD(TITLE("Hi")), BODY(P("Hello")), lang="en")``
    """
    return _Document(children, [(_attr_name(k), v) for k, v in attrs.items()])


def _constructor(tag: str) -> Callable[..., Node]:
    info = _tag_info(tag)
    name = info[0]

    def construct(*children: Any, **attrs: Any) -> Node:
        return Node(name, children, [(_attr_name(k), v) for k, v in attrs.items()])

    construct.__name__ = construct.__qualname__ = tag.upper()
    construct.__doc__ = f"The ``<{tag}>`` element: children positional, attributes as keywords."
    # Run with the node made in line, its HTML made now when it can be (pyweb/_html_fast.py).
    return _html_fast.fast_constructor(info)(construct)


HTML = _constructor("html")
HEAD = _constructor("head")
TITLE = _constructor("title")
META = _constructor("meta")
LINK = _constructor("link")
STYLE = _constructor("style")
SCRIPT = _constructor("script")
BODY = _constructor("body")
H1 = _constructor("h1")
H2 = _constructor("h2")
H3 = _constructor("h3")
H4 = _constructor("h4")
H5 = _constructor("h5")
H6 = _constructor("h6")
P = _constructor("p")
DIV = _constructor("div")
SPAN = _constructor("span")
A = _constructor("a")
IMG = _constructor("img")
BR = _constructor("br")
HR = _constructor("hr")
UL = _constructor("ul")
OL = _constructor("ol")
LI = _constructor("li")
DL = _constructor("dl")
DT = _constructor("dt")
DD = _constructor("dd")
TABLE = _constructor("table")
CAPTION = _constructor("caption")
THEAD = _constructor("thead")
TBODY = _constructor("tbody")
TFOOT = _constructor("tfoot")
TR = _constructor("tr")
TH = _constructor("th")
TD = _constructor("td")
_plain_form = _constructor("form")

post_form_field: Callable[[], Any] | None = None
"""Set by :mod:`pyweb.app.csrf` (this module stands alone and imports nothing of the
server): the hidden field a POST form carries, or ``None`` outside a request."""


def FORM(*children: Any, **attrs: Any) -> Node:  # noqa: N802 - the HTML tag's name
    """The ``<form>`` element. With ``method="post"`` (any case) while a page is serving a
    request, the hidden ``csrf_token`` field comes first among its children, so the POST
    passes the site's CSRF check (:mod:`pyweb.app.csrf`). Outside a request (a notebook,
    a test) there is no session and no field."""
    method = attrs.get("method")
    if post_form_field is not None and isinstance(method, str) and method.lower() == "post":
        field = post_form_field()
        if field is not None:
            children = (field, *children)
    return _plain_form(*children, **attrs)


FORM.__qualname__ = "FORM"
INPUT = _constructor("input")
BUTTON = _constructor("button")
LABEL = _constructor("label")
SELECT = _constructor("select")
OPTION = _constructor("option")
TEXTAREA = _constructor("textarea")
FIELDSET = _constructor("fieldset")
LEGEND = _constructor("legend")
PRE = _constructor("pre")
CODE = _constructor("code")
EM = _constructor("em")
STRONG = _constructor("strong")
I = _constructor("i")  # noqa: E741 - the HTML tag's name
B = _constructor("b")
SMALL = _constructor("small")
SUB = _constructor("sub")
SUP = _constructor("sup")
BLOCKQUOTE = _constructor("blockquote")
NAV = _constructor("nav")
HEADER = _constructor("header")
FOOTER = _constructor("footer")
MAIN = _constructor("main")
SECTION = _constructor("section")
ARTICLE = _constructor("article")
ASIDE = _constructor("aside")
FIGURE = _constructor("figure")
FIGCAPTION = _constructor("figcaption")
IFRAME = _constructor("iframe")
CENTER = _constructor("center")  # obsolete in HTML5, but the paper's pages use it

CONSTRUCTORS: dict[str, Callable[..., Node]] = {
    name: value
    for name, value in list(globals().items())
    if callable(value) and getattr(value, "__qualname__", "") == name and name.isupper()
}
"""Every capitalised constructor, by name."""
