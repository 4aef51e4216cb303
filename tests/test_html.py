"""Tests of pyweb.html: HTML as node constructors (Hop §2.1) and the hello-ast reuse."""

# qq reads the values of its holes from the caller's local variables, which linters do not
# see: a local used only inside a qq template looks unused to them.
# ruff: noqa: F841

from __future__ import annotations

import html
import inspect
from html.parser import HTMLParser
from typing import Any

import jinja2
import markupsafe
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyweb import html as h
from pyweb.html import (
    BODY,
    BR,
    CENTER,
    DIV,
    FORM,
    H2,
    HEAD,
    HR,
    HTML,
    IMG,
    INPUT,
    LABEL,
    LI,
    META,
    PRE,
    SCRIPT,
    SPAN,
    STYLE,
    TABLE,
    TD,
    TEXTAREA,
    TITLE,
    TR,
    UL,
    A,
    B,
    Node,
    P,
    document,
    element,
)
from pyweb.quot import qq, safe


class Events(HTMLParser):
    """The stdlib parser as the oracle: what a browser-like parser reads from our output."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.events: list[tuple[Any, ...]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.events.append(("start", tag, attrs))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.events.append(("start", tag, attrs))

    def handle_endtag(self, tag: str) -> None:
        self.events.append(("end", tag))

    def handle_data(self, data: str) -> None:
        if self.events and self.events[-1][0] == "data":
            self.events[-1] = ("data", self.events[-1][1] + data)
        else:
            self.events.append(("data", data))

    def handle_decl(self, decl: str) -> None:
        self.events.append(("decl", decl))


def parse(text: str) -> list[tuple[Any, ...]]:
    parser = Events()
    parser.feed(text)
    parser.close()
    return parser.events


# -- the paper's example --------------------------------------------------------------------


def test_hop_hello() -> None:
    hello_ast = HTML(DIV("Hello", onclick="alert('world!')"))
    assert hello_ast.render() == '<html><div onclick="alert(&#x27;world!&#x27;)">Hello</div></html>'
    assert parse(hello_ast.render()) == [
        ("start", "html", []),
        ("start", "div", [("onclick", "alert('world!')")]),
        ("data", "Hello"),
        ("end", "div"),
        ("end", "html"),
    ]


def test_every_listed_constructor_exists_and_builds_its_tag() -> None:
    names = (
        "HTML HEAD TITLE META LINK STYLE SCRIPT BODY H1 H2 H3 H4 H5 H6 P DIV SPAN A IMG BR HR UL "
        "OL LI DL DT DD TABLE CAPTION THEAD TBODY TFOOT TR TH TD FORM INPUT BUTTON LABEL SELECT "
        "OPTION TEXTAREA FIELDSET LEGEND PRE CODE EM STRONG I B SMALL SUB SUP BLOCKQUOTE NAV "
        "HEADER FOOTER MAIN SECTION ARTICLE ASIDE FIGURE FIGCAPTION IFRAME CENTER"
    ).split()
    for name in names:
        constructor = getattr(h, name)
        assert h.CONSTRUCTORS[name] is constructor
        assert name in h.__all__
        node = constructor()
        assert node.tag == name.lower()
        close = "" if node.tag in h.VOID_ELEMENTS else f"</{node.tag}>"
        assert node.render() == f"<{node.tag}>{close}"


# -- children -------------------------------------------------------------------------------


def test_text_children_are_escaped() -> None:
    assert P("<b>&\"'</b>").render() == "<p>&lt;b&gt;&amp;&quot;&#x27;&lt;/b&gt;</p>"
    assert TD(3, " ", 2.5).render() == "<td>3 2.5</td>"


def test_node_and_html_children_are_inserted_as_html() -> None:
    x = "<"
    page = DIV(
        B("bold"),
        qq("<i>{x}</i>"),
        safe("<hr>"),
        markupsafe.Markup("<em>m</em>"),
    )
    assert page.render() == "<div><b>bold</b><i>&lt;</i><hr><em>m</em></div>"


def test_none_and_bools_are_skipped() -> None:
    user = None
    assert P("hi ", user and B(user), True, False, None).render() == "<p>hi </p>"
    assert P(0).render() == "<p>0</p>"


def test_lists_tuples_and_generators_are_flattened() -> None:
    node = UL([LI(1), (LI(2), [LI(3)])], (LI(n) for n in (4, 5)), map(LI, [6]))
    assert node.render() == "<ul>" + "".join(f"<li>{n}</li>" for n in range(1, 7)) + "</ul>"
    assert len(node.children) == 6
    assert isinstance(node.children, tuple)


@pytest.mark.parametrize(  # ids by name: object()'s repr differs between xdist workers
    "bad", [b"bytes", {"a": 1}, {1, 2}, object()], ids=["bytes", "dict", "set", "object"]
)
def test_other_children_are_a_type_error_naming_value_and_tag(bad: object) -> None:
    with pytest.raises(TypeError) as info:
        SPAN("ok", bad)
    assert repr(bad) in str(info.value)
    assert "<span>" in str(info.value)


# -- attributes -----------------------------------------------------------------------------


def test_attribute_names_from_python_keywords() -> None:
    node = LABEL("Name", for_="name", class_="big", data_user_id=7, http_equiv="x")
    assert node.render() == (
        '<label for="name" class="big" data-user-id="7" http-equiv="x">Name</label>'
    )
    assert node.attrs == (
        ("for", "name"),
        ("class", "big"),
        ("data-user-id", 7),
        ("http-equiv", "x"),
    )


def test_boolean_and_none_attributes() -> None:
    node = INPUT(type="checkbox", checked=True, disabled=False, title=None)
    assert node.render() == '<input type="checkbox" checked>'


def test_attribute_values_are_escaped_for_double_quotes() -> None:
    node = A("x", href='/a?b=1&c="2"', title="<'>")
    assert node.render() == ('<a href="/a?b=1&amp;c=&quot;2&quot;" title="&lt;&#x27;&gt;">x</a>')
    # HTML values keep their entities; a bare '"' inside them is still escaped.
    assert DIV(title=safe('a &amp; "b"')).render() == '<div title="a &amp; &quot;b&quot;"></div>'


@pytest.mark.parametrize("name", ['on"x', "a b", "x>", "a=b", "", "a/b", "c\x00"])
def test_invalid_attribute_name_is_a_value_error_naming_it(name: str) -> None:
    with pytest.raises(ValueError) as info:
        element("div", **{name: "v"})
    assert repr(name) in str(info.value)


def test_attribute_given_twice_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="'class'"):
        element("div", class_="a", **{"class": "b"})


def test_bad_attribute_value_is_a_type_error_naming_it() -> None:
    with pytest.raises(TypeError, match=r"'class'.*\['a', 'b'\]"):
        DIV(class_=["a", "b"])


def test_invalid_tag_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="'p onclick'"):
        Node("p onclick")
    assert element("my-widget", "x").render() == "<my-widget>x</my-widget>"


def test_node_takes_html_attribute_names_as_they_are() -> None:
    node = Node("div", ["x"], {"class": "c", "data_raw": "1"})
    assert node.render() == '<div class="c" data_raw="1">x</div>'
    assert Node("p", "text").render() == "<p>text</p>"


# -- void and raw text elements -------------------------------------------------------------


@pytest.mark.parametrize("constructor", [BR, HR, IMG, INPUT, META])
def test_void_elements_take_no_children(constructor) -> None:  # type: ignore[no-untyped-def]
    tag = constructor().tag
    assert constructor(class_="x").render() == f'<{tag} class="x">'
    with pytest.raises(ValueError, match=f"<{tag}>"):
        constructor("child")


def test_script_and_style_are_raw_text() -> None:
    assert SCRIPT("if (a < b && c) f('x');").render() == "<script>if (a < b && c) f('x');</script>"
    assert STYLE("p > b { color: red }").render() == "<style>p > b { color: red }</style>"
    events = parse(SCRIPT("a<b").render())
    assert events == [("start", "script", []), ("data", "a<b"), ("end", "script")]


@pytest.mark.parametrize("text", ["x = '</script>'", "</SCRIPT", "a</ScRiPt >"])
def test_script_end_tag_inside_script_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="</script") as info:
        SCRIPT(text)
    assert repr(text) in str(info.value)


def test_style_end_tag_inside_style_is_refused() -> None:
    with pytest.raises(ValueError, match="</style"):
        STYLE("b{} </Style><script>x()</script>")
    assert STYLE("/* </script> is harmless here */").render().startswith("<style>/*")


def test_raw_text_elements_refuse_nodes() -> None:
    with pytest.raises(TypeError, match="<script>"):
        SCRIPT(B("x"))


def test_pre_keeps_a_leading_newline() -> None:
    node = PRE("\nline")
    assert node.render() == "<pre>\n\nline</pre>"
    # A browser drops the first newline; the stdlib parser keeps both.
    assert parse(node.render())[1] == ("data", "\n\nline")
    assert TEXTAREA("x").render() == "<textarea>x</textarea>"


# -- documents and rendering ----------------------------------------------------------------


def test_document_adds_the_doctype() -> None:
    page = document(HEAD(TITLE("T")), BODY(P("x")), lang="en")
    assert page.render() == (
        '<!DOCTYPE html>\n<html lang="en"><head><title>T</title></head><body><p>x</p></body></html>'
    )
    assert parse(page.render())[0] == ("decl", "DOCTYPE html")
    assert repr(page).startswith("document([Node('head'")


def test_render_encode_str_and_protocols() -> None:
    node = P("é<")
    assert node.render() == str(node) == node.__html__() == node._repr_html_() == "<p>é&lt;</p>"
    assert node.encode() == "<p>é&lt;</p>".encode()
    assert markupsafe.escape(node) == markupsafe.Markup("<p>é&lt;</p>")
    env = jinja2.Environment(autoescape=True)
    assert env.from_string("<div>{{ n }}</div>").render(n=node) == "<div><p>é&lt;</p></div>"


def test_node_inside_a_quot_is_not_escaped_again() -> None:
    cell = TD("<x>")
    assert qq("<tr>{cell}</tr>").to_html() == "<tr><td>&lt;x&gt;</td></tr>"


def test_write_to_pieces_concatenate_to_render() -> None:
    items = list(range(3000))
    dynamic = UL(LI(i, " ", qq("<b>{i}</b>", i=i)) for i in items)
    pieces: list[str] = []
    dynamic.write_to(pieces.append)
    assert "".join(pieces) == dynamic.render()
    assert len(pieces) > 1 and all(pieces)
    constant = UL(LI(i) for i in items)
    pieces = []
    constant.write_to(pieces.append)
    assert pieces == [constant.render()]


def test_nodes_are_immutable() -> None:
    node = P("a", class_="x")
    for attr in ("tag", "children", "attrs"):
        with pytest.raises(AttributeError):
            setattr(node, attr, None)
    with pytest.raises(AttributeError):
        node.extra = 1  # type: ignore[attr-defined]
    assert isinstance(node.children, tuple) and isinstance(node.attrs, tuple)


def test_equality_and_repr() -> None:
    assert P("a", B("b"), class_="x") == P("a", B("b"), class_="x")
    assert P("a") != P("b") and P("a") != DIV("a") and P("a") != "<p>a</p>"
    assert hash(P("a")) == hash(P("a"))
    assert repr(P("a", id="x")) == "Node('p', ['a'], {'id': 'x'})"


def test_deep_trees_render_without_recursion() -> None:
    node: Node = SPAN("core")
    for _ in range(5000):
        node = DIV(node, qq("{x}", x=1))  # not cacheable: the iterative path
    text = node.render()
    assert text.startswith("<div>" * 10) and text.count("<span>core</span>") == 1


# -- hello-ast reuse: caching ---------------------------------------------------------------


def test_constant_tree_renders_once() -> None:
    hello_ast = HTML(DIV("Hello", onclick="alert('world!')"))
    first = hello_ast.render()
    assert hello_ast.render() is first  # the cached string itself, no new rendering


def test_tree_with_a_quot_is_not_cached() -> None:
    items: list[int] = []
    page = DIV(P("count:"), qq("{items}"))
    assert page.render() == "<div><p>count:</p>[]</div>"
    items.append(1)
    assert page.render() == "<div><p>count:</p>[1]</div>"


def test_shared_constant_subtree_is_cached_when_met_twice() -> None:
    nav = UL(LI(A("Home", href="/")), LI(A("Guess", href="/guess")))

    def page(n: int) -> Node:
        return BODY(nav, P(qq("request {n}", n=n)))

    assert page(1).render() == page(2).render().replace("request 2", "request 1")
    assert nav._cache == nav.render()  # kept after being met the second time
    assert page(3).render() == f"<body>{nav.render()}<p>request 3</p></body>"


def test_deep_constant_tree_shared_between_pages_renders_without_recursion() -> None:
    deep: Node = SPAN("core")
    for _ in range(3000):
        deep = DIV(deep)
    pages = [BODY(deep, qq("{n}", n=n)) for n in range(3)]
    texts = [page.render() for page in pages]
    assert texts[0].replace(">0</body>", ">1</body>") == texts[1]
    assert texts[2].endswith("</div>2</body>")


def test_safe_strings_and_markup_keep_a_tree_cacheable() -> None:
    node = DIV(safe("<hr>"), markupsafe.Markup("<br>"), P(1.5))
    assert node.render() is node.render()


# -- properties -----------------------------------------------------------------------------


@given(st.text())
def test_property_text_and_attribute_round_trip_through_a_parser(t: str) -> None:
    out = P(t, title=t).render()
    events = parse(out)
    assert events[0] == ("start", "p", [("title", t)])
    text = "".join(e[1] for e in events if e[0] == "data")
    assert text == t
    assert events[-1] == ("end", "p")
    assert out.count("<") == 2 and out.count(">") == 2 and out.count('"') == 2


def reference(node: Any) -> str:
    """An independent, recursive, uncached renderer for the property below."""
    if isinstance(node, Node):
        attrs = "".join(
            f" {k}" if v is True else f' {k}="{html.escape(str(v), quote=True)}"'
            for k, v in node.attrs
            if v is not None and v is not False
        )
        if node.tag in h.VOID_ELEMENTS:
            return f"<{node.tag}{attrs}>"
        return f"<{node.tag}{attrs}>{''.join(map(reference, node.children))}</{node.tag}>"
    if hasattr(node, "__html__"):
        return node.__html__()
    return html.escape(str(node), quote=True)


_text = st.text(alphabet="ab<>&\"' é", max_size=4)
_leaf = st.one_of(_text, st.integers(-5, 5), _text.map(safe))
_tags = st.sampled_from(["div", "p", "span", "td", "b", "br", "img"])
_attrs = st.dictionaries(
    st.sampled_from(["title", "class", "data-x", "hidden"]),
    st.one_of(_text, st.integers(0, 9), st.booleans(), st.none()),
    max_size=3,
)


def _node(children: st.SearchStrategy[list[Any]]) -> st.SearchStrategy[Node]:
    return st.builds(
        lambda tag, kids, attrs: Node(tag, [] if tag in h.VOID_ELEMENTS else kids, attrs),
        _tags,
        children,
        _attrs,
    )


_trees = st.recursive(
    _node(st.lists(_leaf, max_size=3)),
    lambda inner: _node(st.lists(st.one_of(_leaf, inner), max_size=4)),
    max_leaves=20,
)


@given(_trees)
def test_property_cached_rendering_equals_uncached(tree: Node) -> None:
    expected = reference(tree)
    shared_twice = DIV(tree, SPAN(tree), qq("{x}", x="dynamic"))  # not cacheable itself
    assert shared_twice.render() == f"<div>{expected}<span>{expected}</span>dynamic</div>"
    assert tree.render() == expected  # cached on the second meeting, or now
    assert tree.render() == expected  # from the cache
    assert shared_twice.render() == f"<div>{expected}<span>{expected}</span>dynamic</div>"
    pieces: list[str] = []
    shared_twice.write_to(pieces.append)
    assert "".join(pieces) == shared_twice.render()
    # What the server writes into its reply arena: the same HTML, piece by piece.
    assert "".join(shared_twice.html_parts()) == shared_twice.render()
    assert tree.html_parts() == [expected]  # constant: one cached piece


# -- the short paths: a node made of text and rendered nodes renders when it is built --------

# Constructors whose content is ordinary (not void, not raw text, no leading-newline rule).
_PLAIN_CONSTRUCTORS = sorted(
    name
    for name, make in h.CONSTRUCTORS.items()
    if name.lower() not in h.VOID_ELEMENTS | h.RAW_TEXT_ELEMENTS | {"pre", "textarea", "form"}
)
_any_text = st.one_of(st.text(max_size=6), st.text(alphabet="<>&\"'a", max_size=6))


@given(st.sampled_from(_PLAIN_CONSTRUCTORS), st.one_of(_any_text, st.integers()))
def test_property_one_text_child_short_path_equals_the_general_path(name: str, kid: Any) -> None:
    node = h.CONSTRUCTORS[name](kid)  # the short path of the constructors
    general = Node(name.lower(), [kid, qq("")])  # a Quot child: the general path, uncached
    assert node.render() == general.render() == reference(node)
    assert node == Node(name.lower(), [kid]) and node.children == (kid,)
    assert hash(node) == hash(Node(name.lower(), [kid])) and repr(node) == repr(Node(name, [kid]))
    assert node.html_parts() == [node.render()] and node.encode() == general.encode()


def test_void_element_refuses_a_child_on_the_short_path_too() -> None:
    with pytest.raises(ValueError, match="void element"):
        BR("text")
    with pytest.raises(ValueError, match="void element"):
        IMG(3)


def test_rows_are_rendered_as_they_are_built_and_large_nodes_are_not() -> None:
    row = TR(TD(1), TD("<b>"))
    assert row._cache == "<tr><td>1</td><td>&lt;b&gt;</td></tr>"  # before any render()
    big = DIV(*[P("x" * 100) for _ in range(h._RENDER_NOW_LIMIT // 100 + 1)])
    assert big._cache is None  # its children's HTML is over the limit: kept as items
    assert big.render() == reference(big)


_kid = st.one_of(
    _any_text,
    st.integers(-5, 5),
    st.integers(0, h._RENDER_NOW_LIMIT + 10).map(lambda n: "y" * n),  # crosses the limit
)
_ctor_trees = st.recursive(
    st.builds(lambda name, kids: h.CONSTRUCTORS[name](*kids), st.sampled_from(_PLAIN_CONSTRUCTORS),
              st.lists(_kid, max_size=3)),  # fmt: skip
    lambda inner: st.builds(
        lambda name, kids, attrs: h.CONSTRUCTORS[name](*kids, **attrs),
        st.sampled_from(_PLAIN_CONSTRUCTORS),
        st.lists(st.one_of(_kid, inner), max_size=4),
        st.dictionaries(st.sampled_from(["title", "class_", "data_x"]), _any_text, max_size=2),
    ),
    max_leaves=12,
)


@given(_ctor_trees)
def test_property_trees_rendered_when_built_equal_the_reference(tree: Node) -> None:
    expected = reference(tree)
    assert tree.render() == expected
    assert "".join(tree.html_parts()) == expected
    pieces: list[str] = []
    DIV(tree, qq("{x}", x=1)).write_to(pieces.append)
    assert "".join(pieces) == f"<div>{expected}1</div>"


# -- the constructors' fast path (pyweb/_html_fast.py) against their plain versions --------

_FAST_CONSTRUCTORS = sorted(n for n, make in h.CONSTRUCTORS.items() if hasattr(make, "__wrapped__"))
_ODD = object()  # a child no element takes: both versions must refuse it alike
_any_child = st.one_of(
    _kid,
    st.floats(allow_nan=False),
    st.sampled_from([None, True, False, _ODD, qq("<q>"), safe("<b>safe</b>"), "</script>"]),
    _ctor_trees,
    st.lists(st.one_of(_any_text, st.integers(0, 3)), max_size=3),
)
_any_attrs = st.dictionaries(
    st.sampled_from(["title", "class_", "data_x", "hidden", "bad name", "on\x00"]),
    st.one_of(_any_text, st.integers(), st.sampled_from([True, False, None])),
    max_size=3,
)


def _outcome(make: Any, args: tuple[Any, ...], attrs: dict[str, Any]) -> tuple[Any, ...]:
    """What is compared of one call: the node's every public view, or the error."""
    try:
        node = make(*args, **attrs)
    except (TypeError, ValueError) as exc:
        return ("error", type(exc), str(exc))
    parts: list[str] = []
    node.write_to(parts.append)
    views = (node.tag, node.children, node.attrs, repr(node), hash(node), "".join(parts))
    return ("node", node.render(), "".join(node.html_parts()), *views)


# One child alone is the constructors' shortest path (a table's cells): drawn on its own too.
_children_lists = st.one_of(_any_child.map(lambda kid: [kid]), st.lists(_any_child, max_size=4))


@given(st.sampled_from(_FAST_CONSTRUCTORS), _children_lists, _any_attrs)
def test_property_fast_constructor_equals_the_plain_one(
    name: str, children: list[Any], attrs: dict[str, Any]
) -> None:
    fast = h.CONSTRUCTORS[name]
    plain = fast.__wrapped__  # type: ignore[attr-defined]
    expected = _outcome(plain, tuple(children), attrs)
    assert _outcome(fast, tuple(children), attrs) == expected
    if expected[0] == "node":
        assert fast(*children, **attrs) == plain(*children, **attrs)


@given(
    st.sampled_from(["td", "TR", "br", "script", "my-widget", "pre", "9bad", ""]),
    _children_lists,
    _any_attrs,
)
def test_property_fast_element_equals_the_plain_one(
    tag: str, children: list[Any], attrs: dict[str, Any]
) -> None:
    plain = element.__wrapped__  # type: ignore[attr-defined]
    assert _outcome(element, (tag, *children), attrs) == _outcome(plain, (tag, *children), attrs)


def test_the_constructors_and_element_are_decorated_with_their_plain_versions_kept() -> None:
    assert len(_FAST_CONSTRUCTORS) == len(h.CONSTRUCTORS) - 1  # all but FORM, which calls one
    assert TD.__name__ == "TD" and TD.__wrapped__.__name__ == "TD"  # type: ignore[attr-defined]
    assert "Node(" in inspect.getsource(TD.__wrapped__)  # type: ignore[attr-defined]
    assert element.__wrapped__ is not element  # type: ignore[attr-defined]


def test_the_papers_guess_page_renders_and_parses() -> None:
    n, title = 42, "Guess a number between 0 and 100"
    form = FORM(
        INPUT(type="hidden", name="n", value=n),
        INPUT(type="text", name="guess"),
        INPUT(type="submit", value="Guess"),
        action="guess",
        method="post",
    )
    page = document(
        HEAD(TITLE(title)),
        BODY(CENTER(H2(title), IMG(src="bill_guess.jpg"), form), bgcolor="white"),
    )
    events = parse(page.render())
    assert ("start", "input", [("type", "hidden"), ("name", "n"), ("value", "42")]) in events
    assert ("data", title) in events
    assert TABLE(TR(TD(1))).render() == "<table><tr><td>1</td></tr></table>"
