"""Tests of pyweb.quot: SMLserver's quotations (§2.2) as HTML, SQL and plain text."""

# qq reads the values of its holes from the caller's local variables, which linters do not
# see: a local used only inside a qq template looks unused to them.
# ruff: noqa: F841

from __future__ import annotations

import dataclasses
import doctest
import html
import sqlite3
import sys
from types import SimpleNamespace

import jinja2
import markupsafe
import pytest
from hypothesis import given
from hypothesis import strategies as st

import pyweb.quot
from pyweb.quot import (
    ANTIQUOTE,
    PARAMSTYLES,
    QUOTE,
    Antiquote,
    Quot,
    Quote,
    Safe,
    concat,
    qq,
    safe,
)

GREETING = "hello from the module"


# -- fragments and the Quot sequence --------------------------------------------------------


def test_paper_example_ulist() -> None:
    text = "fun"
    ulist = qq("Web programming is {text}\n")
    assert ulist.fragments == (QUOTE("Web programming is "), ANTIQUOTE("fun"), QUOTE("\n"))
    assert repr(ulist) == "Quot([QUOTE('Web programming is '), ANTIQUOTE('fun'), QUOTE('\\n')])"
    assert ulist.flatten() == "Web programming is fun\n"


def test_paper_names_are_aliases() -> None:
    assert QUOTE is Quote
    assert ANTIQUOTE is Antiquote


def test_fragments_are_frozen_and_slotted() -> None:
    q = Quote("a")
    with pytest.raises(dataclasses.FrozenInstanceError):
        q.text = "b"  # type: ignore[misc]
    assert not hasattr(q, "__dict__")
    assert not hasattr(Antiquote(1), "__dict__")
    assert Quote("a") == Quote("a") and hash(Quote("a")) == hash(Quote("a"))
    assert Antiquote(1) != Quote("1")


def test_quot_merges_adjacent_quotes_and_drops_empty_ones() -> None:
    q = Quot([QUOTE("a"), QUOTE(""), QUOTE("b"), ANTIQUOTE(1), QUOTE(""), ANTIQUOTE(2)])
    assert q.fragments == (QUOTE("ab"), ANTIQUOTE(1), ANTIQUOTE(2))
    assert Quot([QUOTE("")]).fragments == ()


def test_quot_is_an_immutable_sequence() -> None:
    q = Quot([QUOTE("<b>"), ANTIQUOTE("x"), QUOTE("</b>")])
    assert len(q) == 3
    assert list(q) == [QUOTE("<b>"), ANTIQUOTE("x"), QUOTE("</b>")]
    assert q[1] == ANTIQUOTE("x")
    assert q[1:] == Quot([ANTIQUOTE("x"), QUOTE("</b>")])
    assert isinstance(q.fragments, tuple)
    with pytest.raises(AttributeError):
        q.fragments = ()  # type: ignore[misc]
    assert Quot() == Quot([]) and len(Quot()) == 0 and not Quot()


def test_quot_equality_and_hash_by_fragments() -> None:
    a = Quot([QUOTE("x"), ANTIQUOTE(1)])
    b = Quot([QUOTE("x"), ANTIQUOTE(1)])
    assert a == b and hash(a) == hash(b)
    assert a != Quot([QUOTE("x"), ANTIQUOTE(2)])
    assert a != "x1"
    assert len({a, b}) == 1


def test_quot_rejects_what_is_not_a_fragment() -> None:
    with pytest.raises(TypeError, match="'oops'"):
        Quot([QUOTE("a"), "oops"])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="qq"):
        Quot("<b>not fragments</b>")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="42"):
        Quot([QUOTE(42)])  # type: ignore[arg-type]
    q = qq("<b>{x}</b>", x=1)
    assert Quot(q) == q and Quot(iter(q)) == q


# -- qq ------------------------------------------------------------------------------------


def test_qq_takes_values_from_keywords_locals_globals_builtins() -> None:
    name = "local"
    q = qq("{name}|{GREETING}|{len}|{other}", other="keyword")
    assert q.fragments[0] == ANTIQUOTE("local")
    assert q.fragments[2] == ANTIQUOTE(GREETING)
    assert q.fragments[4] == ANTIQUOTE(len)
    assert q.fragments[6] == ANTIQUOTE("keyword")


def test_qq_keyword_beats_local() -> None:
    name = "local"
    assert qq("{name}", name="keyword").flatten() == "keyword"
    assert name == "local"


def test_qq_dotted_names_follow_attributes() -> None:
    user = SimpleNamespace(name="Ada", address=SimpleNamespace(city="London"))
    q = qq("{user.name} lives in {user.address.city}")
    assert q.fragments == (ANTIQUOTE("Ada"), QUOTE(" lives in "), ANTIQUOTE("London"))


def test_qq_missing_attribute_names_the_placeholder() -> None:
    user = SimpleNamespace(name="Ada")
    with pytest.raises(AttributeError, match=r"\{user\.nmae\}") as info:
        qq("<p>{user.nmae}</p>")
    assert "<p>{user.nmae}</p>" in str(info.value)
    assert user.name == "Ada"


def test_qq_missing_name_is_a_name_error_naming_it_and_the_template() -> None:
    with pytest.raises(NameError, match="'no_such_variable'") as info:
        qq("<p>{no_such_variable}</p>")
    assert "<p>{no_such_variable}</p>" in str(info.value)
    assert info.value.name == "no_such_variable"


def test_qq_double_braces_are_literal() -> None:
    x = 1
    q = qq("{{x}} = {x}; a {{ b }}")
    assert q.fragments == (QUOTE("{x} = "), ANTIQUOTE(1), QUOTE("; a { b }"))


@pytest.mark.parametrize(
    ("template", "placeholder", "position"),
    [
        ("a {1+2} b", "{1+2}", 2),
        ("{x:>3}", "{x:>3}", 0),
        ("<p>{x!r}</p>", "{x!r}", 3),
        ("empty {}", "{}", 6),
        ("{ x }", "{ x }", 0),
        ("{x[0]}", "{x[0]}", 0),
        ("{x.}", "{x.}", 0),
    ],
)
def test_qq_other_placeholder_syntax_is_a_value_error(
    template: str, placeholder: str, position: int
) -> None:
    x = [1]
    with pytest.raises(ValueError) as info:
        qq(template)
    message = str(info.value)
    assert repr(placeholder) in message
    assert f"position {position}" in message
    assert x == [1]


@pytest.mark.parametrize(
    ("template", "brace", "position"),
    [("a { b", "{", 2), ("a } b", "}", 2), ("{a{b}", "{", 0), ("{a}}", "}", 3)],
)
def test_qq_unbalanced_braces_are_a_value_error(template: str, brace: str, position: int) -> None:
    a = b = 1
    with pytest.raises(ValueError, match="unbalanced") as info:
        qq(template)
    assert repr(brace) in str(info.value)
    assert f"position {position}" in str(info.value)
    assert a == b


def test_qq_template_must_be_a_str() -> None:
    with pytest.raises(TypeError, match="b'bytes'"):
        qq(b"bytes")  # type: ignore[arg-type]


def test_qq_parse_is_cached() -> None:
    template = "<li>{item}</li> (cache test)"
    item = 1
    qq(template)
    before = pyweb.quot._parse.cache_info().hits
    for item in range(3):
        assert qq(template).fragments[1] == ANTIQUOTE(item)
    assert pyweb.quot._parse.cache_info().hits == before + 3


def test_qq_of_an_empty_template_is_empty() -> None:
    assert qq("") == Quot()


@pytest.mark.skipif(sys.version_info < (3, 14), reason="t-strings (PEP 750) need Python 3.14")
def test_qq_accepts_t_strings() -> None:
    name = "<Ada>"
    n = 7
    template = eval('t"<b>{name}</b> {n:03d} {name!r}"', {"name": name, "n": n})
    q = qq(template)
    assert q.fragments == (
        QUOTE("<b>"),
        ANTIQUOTE("<Ada>"),
        QUOTE("</b> "),
        ANTIQUOTE("007"),
        QUOTE(" "),
        ANTIQUOTE("'<Ada>'"),
    )
    assert q.to_html() == "<b>&lt;Ada&gt;</b> 007 &#x27;&lt;Ada&gt;&#x27;"
    with pytest.raises(TypeError, match="t-string"):
        qq(template, name="x")


# -- concatenation --------------------------------------------------------------------------


def test_plus_is_the_papers_caret_caret() -> None:
    a, b = "A", "B"
    q = qq("<i>{a}</i>") + qq("<b>{b}</b>")
    assert q.fragments == (
        QUOTE("<i>"),
        ANTIQUOTE("A"),
        QUOTE("</i><b>"),
        ANTIQUOTE("B"),
        QUOTE("</b>"),
    )


def test_plus_with_str_quotes_the_str() -> None:
    x = 1
    q = "<p>" + qq("{x}") + "</p>"
    assert q.fragments == (QUOTE("<p>"), ANTIQUOTE(1), QUOTE("</p>"))
    assert qq("{x}") + "" == qq("{x}")
    assert "" + qq("{x}") == qq("{x}")


def test_plus_with_other_types_is_a_type_error() -> None:
    with pytest.raises(TypeError):
        qq("a") + 1  # type: ignore[operator]
    with pytest.raises(TypeError):
        1 + qq("a")  # type: ignore[operator]


def test_join_like_str_join() -> None:
    items = [qq("<li>{x}</li>", x=x) for x in "ab"]
    assert qq("\n").join(items).to_html() == "<li>a</li>\n<li>b</li>"
    assert Quot.join(", ", ["x", qq("{y}", y="<")]).to_html() == "x, &lt;"
    assert qq("-").join([]) == Quot()
    assert qq("-").join(iter([qq("a")])) == qq("a")


def test_join_names_a_bad_item() -> None:
    with pytest.raises(TypeError, match="42"):
        qq(", ").join([qq("a"), 42])  # type: ignore[list-item]


def test_concat() -> None:
    x = "<"
    assert concat("<p>", qq("{x}"), "</p>").to_html() == "<p>&lt;</p>"
    assert concat() == Quot()
    with pytest.raises(TypeError, match="None"):
        concat(qq("a"), None)  # type: ignore[arg-type]


# -- renderings -----------------------------------------------------------------------------


def test_flatten_copies_everything_unescaped() -> None:
    inner = qq("<b>{v}</b>", v="&")
    q = qq("<p>{inner} {n} {none}</p>", n=3, none=None)
    assert q.flatten() == "<p><b>&</b> 3 None</p>"


def test_to_html_escapes_antiquotes_only() -> None:
    evil = "<script>alert('x')</script> & \"q\""
    q = qq('<p title="{evil}">{evil}</p>')
    expected_evil = "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt; &amp; &quot;q&quot;"
    assert q.to_html() == f'<p title="{expected_evil}">{expected_evil}</p>'
    assert qq("{n}", n=42).to_html() == "42"
    assert qq("{f}", f=1.5).to_html() == "1.5"


def test_to_html_does_not_double_escape_html_values() -> None:
    inner = qq("<b>{x}</b>", x="<")
    assert qq("<p>{inner}</p>").to_html() == "<p><b>&lt;</b></p>"
    assert qq("{s}", s=safe("<hr>")).to_html() == "<hr>"
    assert qq("{m}", m=markupsafe.Markup("<em>ok</em>")).to_html() == "<em>ok</em>"


def test_html_protocols() -> None:
    q = qq("<i>{x}</i>", x="&")
    assert q.__html__() == q.to_html() == q._repr_html_() == "<i>&amp;</i>"
    assert markupsafe.escape(q) == markupsafe.Markup("<i>&amp;</i>")


def test_jinja2_inserts_a_quot_as_html() -> None:
    env = jinja2.Environment(autoescape=True)
    q = qq("<i>{x}</i>", x="<&>")
    assert env.from_string("<p>{{ q }}</p>").render(q=q) == "<p><i>&lt;&amp;&gt;</i></p>"


@pytest.mark.parametrize(
    "make_text",
    [str, lambda q: format(q, ""), lambda q: f"{q}", lambda q: "{}".format(q), print],  # noqa: UP032
    ids=["str", "format", "f-string", "str.format", "print"],
)
def test_a_quot_is_never_silently_text(make_text) -> None:  # type: ignore[no-untyped-def]
    q = qq("<b>{x}</b>", x="y")
    with pytest.raises(TypeError) as info:
        make_text(q)
    message = str(info.value)
    assert ".flatten()" in message and ".to_html()" in message and "database" in message
    assert "ANTIQUOTE('y')" in message


def test_safe() -> None:
    s = safe("<b>trusted</b>")
    assert isinstance(s, str) and isinstance(s, Safe)
    assert s == "<b>trusted</b>"
    assert s.__html__() is s
    assert repr(s) == "safe('<b>trusted</b>')"
    assert markupsafe.escape(s) == "<b>trusted</b>"
    with pytest.raises(TypeError, match="42"):
        safe(42)  # type: ignore[arg-type]


# -- SQL ------------------------------------------------------------------------------------


def test_to_sql_paramstyles() -> None:
    a, b = "x", 2
    q = qq("select * from t where a = {a} and b > {b}")
    assert q.to_sql() == ("select * from t where a = ? and b > ?", ["x", 2])
    assert q.to_sql("qmark") == q.to_sql()
    assert q.to_sql("numeric_dollar") == ("select * from t where a = $1 and b > $2", ["x", 2])
    assert q.to_sql("numeric") == ("select * from t where a = :1 and b > :2", ["x", 2])
    assert q.to_sql("format") == ("select * from t where a = %s and b > %s", ["x", 2])
    assert q.to_sql("named") == ("select * from t where a = :p1 and b > :p2", {"p1": "x", "p2": 2})
    assert q.to_sql("pyformat") == (
        "select * from t where a = %(p1)s and b > %(p2)s",
        {"p1": "x", "p2": 2},
    )
    assert set(PARAMSTYLES) == {"qmark", "numeric_dollar", "numeric", "format", "pyformat", "named"}


def test_to_sql_doubles_percent_for_format_styles_only() -> None:
    pat = "a%"
    q = qq("select 1 where 'x%' like {pat}")
    assert q.to_sql("format")[0] == "select 1 where 'x%%' like %s"
    assert q.to_sql("pyformat")[0] == "select 1 where 'x%%' like %(p1)s"
    assert q.to_sql("qmark")[0] == "select 1 where 'x%' like ?"
    assert pat == "a%"


def test_to_sql_splices_nested_quots() -> None:
    lo, hi, name = 1, 9, "n"
    where = qq("x between {lo} and {hi}")
    q = qq("select * from t where {where} and name = {name}")
    assert q.to_sql("numeric_dollar") == (
        "select * from t where x between $1 and $2 and name = $3",
        [1, 9, "n"],
    )


def test_to_sql_unknown_paramstyle_names_it() -> None:
    with pytest.raises(ValueError, match="'dollar'"):
        qq("select 1").to_sql("dollar")


def test_to_sql_keeps_user_input_out_of_the_sql_text() -> None:
    db = sqlite3.connect(":memory:")
    db.execute("create table students (name text)")
    name = "Robert'); DROP TABLE students;--"
    db.execute(*qq("insert into students (name) values ({name})").to_sql())
    rows = db.execute(*qq("select name from students where name = {name}").to_sql()).fetchall()
    assert rows == [(name,)]
    assert db.execute("select count(*) from students").fetchone() == (1,)


# -- properties -----------------------------------------------------------------------------


@given(st.text())
def test_property_to_html_round_trips_and_escapes(t: str) -> None:
    out = qq("<p>{t}</p>").to_html()
    assert html.unescape(out) == "<p>" + t + "</p>"
    middle = out[len("<p>") : -len("</p>")]
    assert not set(middle) & set('<>"')
    # The server writes the pieces one by one (its reply arena): they are the same HTML.
    assert "".join(qq("<p>{t}</p>").html_parts()) == out


_sql_values = st.one_of(
    st.none(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False),
    st.text(),
    st.binary(),
)
_texts = st.text(alphabet="ab<>&' \n", max_size=5)


@st.composite
def quots(draw: st.DrawFn, depth: int = 2) -> Quot:
    fragments = []
    for _ in range(draw(st.integers(0, 4))):
        kind = draw(st.sampled_from(["quote", "antiquote", "nested"] if depth else ["quote"]))
        if kind == "quote":
            fragments.append(QUOTE(draw(_texts)))
        elif kind == "antiquote":
            fragments.append(ANTIQUOTE(draw(st.one_of(_texts, st.integers()))))
        else:
            fragments.append(ANTIQUOTE(draw(quots(depth - 1))))
    return Quot(fragments)


@given(st.one_of(st.text(), st.text(alphabet="<>&\"'ab", max_size=8)))
def test_property_to_html_escapes_text_exactly_as_html_escape(t: str) -> None:
    # to_html skips the escaping of text with nothing to escape: the same result
    assert qq("{t}").to_html() == html.escape(t, quote=True)


@given(quots(), quots(), quots())
def test_property_plus_is_associative_and_flatten_distributes(a: Quot, b: Quot, c: Quot) -> None:
    assert (a + b) + c == a + (b + c)
    assert (a + b).flatten() == a.flatten() + b.flatten()
    assert ((a + b) + c).flatten() == (a + (b + c)).flatten()
    assert (a + b).to_html() == a.to_html() + b.to_html()
    assert concat(a, b, c) == a + b + c


@given(st.lists(_sql_values, min_size=1, max_size=8), st.booleans())
def test_property_to_sql_round_trips_through_sqlite(values: list, nest: bool) -> None:
    holes = [qq("{v}", v=v) for v in values]
    if nest:  # put the second half inside a nested Quot: spliced, not stringified
        half = len(holes) // 2
        holes = holes[:half] + [qq("{rest}", rest=Quot.join(", ", holes[half:]))]
    q = concat("select '100%', ", Quot.join(", ", holes))
    db = sqlite3.connect(":memory:")

    sql, params = q.to_sql("qmark")
    assert sql.count("?") == len(params) == len(values)
    assert db.execute(sql, params).fetchone() == ("100%", *values)

    sql, params = q.to_sql("named")
    assert sql.count(":p") == len(params) == len(values)
    assert db.execute(sql, params).fetchone() == ("100%", *values)

    sql, params = q.to_sql("numeric_dollar")
    assert sql.count("$") == len(params)
    named = {str(i): v for i, v in enumerate(params, 1)}  # sqlite reads $1 as a name
    assert db.execute(sql, named).fetchone() == ("100%", *values)

    sql, params = q.to_sql("format")  # the driver's own %-step, then sqlite's ?
    assert sql.count("%s") == len(params)
    assert db.execute(sql % (("?",) * len(params)), params).fetchone() == ("100%", *values)


def test_module_docstring_examples() -> None:
    result = doctest.testmod(pyweb.quot)
    assert result.attempted >= 5 and result.failed == 0


# -- the fast path (pyweb/_quot_fast.py) against the classes ------------------------------


@given(st.text(), st.one_of(st.integers(), st.text(), st.none()))
def test_fragments_made_without_init_are_the_classes_own(text, value):
    from pyweb._quot_fast import maker

    quote, antiquote = maker(Quote, "text")(text), maker(Antiquote, "value")(value)
    assert (type(quote), quote, hash(quote)) == (Quote, Quote(text), hash(Quote(text)))
    assert (type(antiquote), antiquote) == (Antiquote, Antiquote(value))
    with pytest.raises(dataclasses.FrozenInstanceError):
        quote.text = "changed"  # type: ignore[misc]
    assert qq("a{value}b", value=value) == Quot([QUOTE("a"), ANTIQUOTE(value), QUOTE("b")])


# -- qq's fast path (pyweb/_quot_fast.py) against its plain version -------------------------

# The plain versions, which the fast ones decorate.
plain_qq = qq.__wrapped__  # type: ignore[attr-defined]
plain_concat2 = pyweb.quot._concat2.__wrapped__  # type: ignore[attr-defined]

HOLE_NAMES = ("kw_a", "kw_b", "local_v", "local_ns", "GREETING", "len", "not_defined")
HOLE_ATTRS = ("inner", "deep", "text", "real", "nope")


@st.composite
def templates(draw: st.DrawFn) -> str:
    """Literal text (its braces doubled), ``{{``/``}}`` and holes with or without attributes."""
    parts = draw(
        st.lists(
            st.one_of(
                st.text(max_size=8).map(lambda t: t.replace("{", "{{").replace("}", "}}")),
                st.sampled_from(["{{", "}}"]),
                st.tuples(
                    st.sampled_from(HOLE_NAMES), st.lists(st.sampled_from(HOLE_ATTRS), max_size=2)
                ).map(lambda hole: "{" + ".".join((hole[0], *hole[1])) + "}"),
            ),
            max_size=8,
        )
    )
    return "".join(parts)


def failure(exc: Exception) -> tuple[object, ...]:
    """What is compared of qq's exception: its type, message, name and cause."""
    return (type(exc), str(exc), getattr(exc, "name", None), type(exc.__cause__))


@given(
    templates(),
    st.dictionaries(
        st.sampled_from(["kw_a", "kw_b", "local_v"]),
        st.one_of(
            st.integers(),
            st.text(),
            st.builds(SimpleNamespace, text=st.text(), inner=st.builds(SimpleNamespace)),
        ),
    ),
)
def test_property_fast_qq_equals_the_plain_one(template: str, keywords: dict) -> None:
    local_v = "<local>"
    local_ns = SimpleNamespace(inner=SimpleNamespace(deep=1.5), text="<t>")
    fast: Quot | tuple[object, ...]
    plain: Quot | tuple[object, ...]
    try:
        fast = qq(template, **keywords)  # looks up local_v and local_ns here
    except (NameError, AttributeError) as exc:
        fast = failure(exc)
    try:
        plain = plain_qq(template, **keywords)  # and so does the plain qq
    except (NameError, AttributeError) as exc:
        plain = failure(exc)
    assert fast == plain
    if isinstance(fast, Quot):
        assert [type(f) for f in fast] == [type(f) for f in plain]  # type: ignore[union-attr]


@given(quots(), quots())
def test_property_fast_plus_equals_the_plain_one(a: Quot, b: Quot) -> None:
    fast, plain = a + b, plain_concat2(a.fragments, b.fragments)
    assert (type(fast), fast, hash(fast)) == (Quot, plain, hash(plain))
    assert fast == Quot([*a, *b])
    for fragment in fast:
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(fragment, "text" if type(fragment) is Quote else "value", "changed")
