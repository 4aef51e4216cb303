"""Micro-benchmark: five ways to render the same HTML page, measured in the same run.

Three pages, one benchmark group each:

* ``hello``: a tiny constant page (SMLserver's ``hello`` script of Table 1; Hop's ``hello``).
* ``guess``: the "Guess a number" page of SMLserver §2.3 (a title used twice, a picture, a
  form with a hidden input holding the number).
* ``table``: SMLserver Table 1's ``table`` script, a 500-line HTML table; each row holds
  ``i``, ``i*i`` and a text that needs escaping.

Techniques: ``quot`` (``pyweb.quot.qq`` + ``to_html``, SMLserver §2.2), ``nodes`` (a
``pyweb.html`` tree built per request, Hop §2.1), ``prebuilt`` (the tree built once at
import and returned per request: Hop's ``hello-ast``; constant pages only), ``jinja2``
(autoescape on, template compiled once) and ``fstring`` (f-strings with ``html.escape``).
Before timing, every technique's output is parsed with the stdlib HTML parser and compared
with the f-string's, so all do the same work. Run with

    .venv/bin/python -m pytest benchmarks/bench_render.py --benchmark-only \\
        --benchmark-columns=min,median,ops -p no:timeout -p no:cacheprovider
"""

from __future__ import annotations

import html
from collections.abc import Callable
from html.parser import HTMLParser
from typing import Any

import jinja2
import pytest

from pyweb.html import (
    BODY,
    CENTER,
    FORM,
    H2,
    HEAD,
    IMG,
    INPUT,
    TABLE,
    TD,
    TITLE,
    TR,
    A,
    I,
    P,
    document,
)
from pyweb.quot import concat, qq

_env = jinja2.Environment(autoescape=True)
_esc = html.escape

# -- hello ----------------------------------------------------------------------------------

HELLO_PAGE = (
    "<!DOCTYPE html>\n<html><head><title>Hello</title></head>"
    "<body><p>Hello, world!</p></body></html>"
)
HELLO_JINJA = _env.from_string(HELLO_PAGE)


def hello_quot() -> str:
    return qq(HELLO_PAGE).to_html()


def hello_nodes() -> str:
    return document(HEAD(TITLE("Hello")), BODY(P("Hello, world!"))).render()


HELLO_AST = document(HEAD(TITLE("Hello")), BODY(P("Hello, world!")))


def hello_prebuilt() -> str:
    return HELLO_AST.render()


def hello_jinja2() -> str:
    return HELLO_JINJA.render()


def hello_fstring() -> str:
    return (
        "<!DOCTYPE html>\n<html><head><title>Hello</title></head>"
        "<body><p>Hello, world!</p></body></html>"
    )


# -- guess (SMLserver §2.3: returnPage title pic (mk_form n)) ------------------------------

GUESS_ARGS = ("Your guess is too big - try again", "bill_large.jpg", 42)

GUESS_FORM = (
    '<form action="guess" method="post"><input type="hidden" name="n" value="{n}">'
    '<input type="text" name="guess"><input type="submit" value="Guess"></form>'
)
GUESS_PAGE = (
    "<!DOCTYPE html>\n<html><head><title>{title}</title></head>"
    '<body bgcolor="white"><center><h2>{title}</h2><img src="{pic}">{body}'
    '<i>Served by <a href="http://www.smlserver.org">SMLserver</a></i>'
    "</center></body></html>"
)
GUESS_JINJA = _env.from_string(
    GUESS_PAGE.replace("{title}", "{{ title }}")
    .replace("{pic}", "{{ pic }}")
    .replace("{body}", GUESS_FORM.replace("{n}", "{{ n }}"))
)


def guess_quot(title: str, pic: str, n: int) -> str:
    form = qq(GUESS_FORM, n=n)
    return qq(GUESS_PAGE, title=title, pic=pic, body=form).to_html()


def guess_nodes(title: str, pic: str, n: int) -> str:
    form = FORM(
        INPUT(type="hidden", name="n", value=n),
        INPUT(type="text", name="guess"),
        INPUT(type="submit", value="Guess"),
        action="guess",
        method="post",
    )
    return document(
        HEAD(TITLE(title)),
        BODY(
            CENTER(
                H2(title),
                IMG(src=pic),
                form,
                I("Served by ", A("SMLserver", href="http://www.smlserver.org")),
            ),
            bgcolor="white",
        ),
    ).render()


def guess_jinja2(title: str, pic: str, n: int) -> str:
    return GUESS_JINJA.render(title=title, pic=pic, n=n)


def guess_fstring(title: str, pic: str, n: int) -> str:
    title = _esc(title)
    form = (
        f'<form action="guess" method="post"><input type="hidden" name="n" value="{n}">'
        '<input type="text" name="guess"><input type="submit" value="Guess"></form>'
    )
    return (
        f"<!DOCTYPE html>\n<html><head><title>{title}</title></head>"
        f'<body bgcolor="white"><center><h2>{title}</h2><img src="{_esc(pic)}">{form}'
        '<i>Served by <a href="http://www.smlserver.org">SMLserver</a></i>'
        "</center></body></html>"
    )


# -- table (SMLserver Table 1: a 500-line HTML table) ---------------------------------------

TABLE_ROWS = [(i, i * i, f'<{i}> & "{i * i}"') for i in range(500)]

TABLE_PAGE = (
    "<!DOCTYPE html>\n<html><head><title>Table</title></head>"
    "<body><table>{rows}</table></body></html>"
)
TABLE_ROW = "<tr><td>{i}</td><td>{sq}</td><td>{text}</td></tr>"
TABLE_JINJA = _env.from_string(
    TABLE_PAGE.replace(
        "{rows}",
        "{% for i, sq, text in rows %}"
        "<tr><td>{{ i }}</td><td>{{ sq }}</td><td>{{ text }}</td></tr>"
        "{% endfor %}",
    )
)


def table_quot(rows: list[tuple[int, int, str]]) -> str:
    body = concat(*[qq(TABLE_ROW, i=i, sq=sq, text=text) for i, sq, text in rows])
    return qq(TABLE_PAGE, rows=body).to_html()


def table_nodes(rows: list[tuple[int, int, str]]) -> str:
    return document(
        HEAD(TITLE("Table")),
        BODY(TABLE([TR(TD(i), TD(sq), TD(text)) for i, sq, text in rows])),
    ).render()


def table_jinja2(rows: list[tuple[int, int, str]]) -> str:
    return TABLE_JINJA.render(rows=rows)


def table_fstring(rows: list[tuple[int, int, str]]) -> str:
    body = "".join(
        [f"<tr><td>{i}</td><td>{sq}</td><td>{_esc(text)}</td></tr>" for i, sq, text in rows]
    )
    return (
        "<!DOCTYPE html>\n<html><head><title>Table</title></head>"
        f"<body><table>{body}</table></body></html>"
    )


# -- the cases ------------------------------------------------------------------------------

PAGES: dict[str, tuple[tuple[Any, ...], dict[str, Callable[..., str]]]] = {
    "hello": (
        (),
        {
            "quot": hello_quot,
            "nodes": hello_nodes,
            "prebuilt": hello_prebuilt,
            "jinja2": hello_jinja2,
            "fstring": hello_fstring,
        },
    ),
    "guess": (
        GUESS_ARGS,
        {
            "quot": guess_quot,
            "nodes": guess_nodes,
            "jinja2": guess_jinja2,
            "fstring": guess_fstring,
        },
    ),
    "table": (
        (TABLE_ROWS,),
        {
            "quot": table_quot,
            "nodes": table_nodes,
            "jinja2": table_jinja2,
            "fstring": table_fstring,
        },
    ),
}


class _Events(HTMLParser):
    """What a parser reads from a page: tags, attributes and text, entities decoded."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.events: list[tuple[Any, ...]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.events.append(("start", tag, attrs))

    def handle_endtag(self, tag: str) -> None:
        self.events.append(("end", tag))

    def handle_data(self, data: str) -> None:
        self.events.append(("data", data))

    def handle_decl(self, decl: str) -> None:
        self.events.append(("decl", decl))


def _parse(page: str) -> list[tuple[Any, ...]]:
    parser = _Events()
    parser.feed(page)
    parser.close()
    return parser.events


def check_same_page(page: str, technique: str) -> None:
    """Every technique must produce the page the f-string produces (as a parser reads it)."""
    args, techniques = PAGES[page]
    expected = _parse(techniques["fstring"](*args))
    got = _parse(techniques[technique](*args))
    assert got == expected, f"{page}/{technique} renders a different page"
    if page == "table":
        assert sum(1 for e in got if e[:2] == ("start", "tr")) == 500
        assert ("data", '<499> & "249001"') in got


CASES = [
    pytest.param(page, technique, marks=pytest.mark.benchmark(group=page), id=f"{page}-{technique}")
    for page, (_, techniques) in PAGES.items()
    for technique in techniques
]


@pytest.mark.parametrize(("page", "technique"), CASES)
def test_render(benchmark: Any, page: str, technique: str) -> None:
    check_same_page(page, technique)
    args, techniques = PAGES[page]
    result = benchmark(techniques[technique], *args)
    assert result == techniques[technique](*args)
