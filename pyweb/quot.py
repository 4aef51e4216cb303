"""Quotations: HTML (and SQL) written as text with holes, after SMLserver §2.2.

SMLserver (Elsman and Hallenberg, *Web Programming with SMLserver*, PADL 2003, §2.2) embeds
HTML in Standard ML with *quotations*. A quotation is text between back-quotes in which
``^id`` or ``^(exp)`` marks a hole, an *anti-quotation*. It evaluates to a list of fragments
of the predeclared datatype::

    datatype 'a frag = QUOTE of string | ANTIQUOTE of 'a

The paper's example::

    val text = "fun"
    val ulist = `Web programming is ^text
    `

binds ``ulist`` to ``[QUOTE "Web programming is ", ANTIQUOTE "fun", QUOTE "\\n"]``, and
``Quot.flatten ulist`` turns it into the string sent to the browser. In Python the same
thing is written with :func:`qq`, whose ``{name}`` holes play the part of ``^id``::

    >>> text = "fun"
    >>> ulist = qq("Web programming is {text}\\n")
    >>> ulist
    Quot([QUOTE('Web programming is '), ANTIQUOTE('fun'), QUOTE('\\n')])
    >>> ulist.flatten()
    'Web programming is fun\\n'

Keeping the two kinds of fragment apart is what makes quotations safe where string
concatenation is not: the QUOTE text was written by the programmer, the ANTIQUOTE values
may come from a user. So a :class:`Quot` can be rendered

* as HTML (:meth:`Quot.to_html`): the quoted text is kept, every antiquoted value is
  HTML-escaped unless it says it already is HTML (it has an ``__html__`` method, like a
  nested :class:`Quot`, a :func:`safe` string, an ``pyweb.html`` node or ``markupsafe.Markup``);
* as SQL (:meth:`Quot.to_sql`): the quoted text is the statement, every antiquoted value a
  bound parameter, so user input never becomes SQL text;
* as plain text (:meth:`Quot.flatten`, the paper's ``Quot.flatten``): no escaping at all.

A Quot refuses to be turned into a ``str`` implicitly (``str(q)``, ``f"{q}"``, ``print(q)``
raise :class:`TypeError`): each of the three renderings above is right in one place and
dangerous in the others, so the programmer has to say which one is meant.

This module imports nothing else from pyweb; it is usable in a notebook or a test alone.
"""

from __future__ import annotations

import html as _html
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, overload

from ._quot_fast import fast_concat2, fast_qq, maker

try:  # t-strings (PEP 750) exist from Python 3.14 on.
    from string.templatelib import Template as _Template  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - depends on the Python version
    _Template = None

__all__ = [
    "ANTIQUOTE",
    "QUOTE",
    "Antiquote",
    "Fragment",
    "PARAMSTYLES",
    "Quot",
    "Quote",
    "Safe",
    "concat",
    "qq",
    "safe",
]


@dataclass(frozen=True, slots=True)
class Quote:
    """A piece of quoted text: written by the programmer, used verbatim (SML ``QUOTE``)."""

    text: str

    def __repr__(self) -> str:
        return f"QUOTE({self.text!r})"


@dataclass(frozen=True, slots=True)
class Antiquote:
    """A hole filled with a value (SML ``ANTIQUOTE``); escaped or bound when rendered."""

    value: object

    def __repr__(self) -> str:
        return f"ANTIQUOTE({self.value!r})"


# ``Quote(text)`` for the quotes Quot.join and concat merge, without the frozen
# dataclass's __init__ (pyweb/_quot_fast.py).
_quote = maker(Quote, "text")


QUOTE = Quote
"""The paper's name for :class:`Quote`."""
ANTIQUOTE = Antiquote
"""The paper's name for :class:`Antiquote`."""

Fragment = Quote | Antiquote


class Safe(str):
    """A string of trusted HTML: inserted as it is by :meth:`Quot.to_html` and ``pyweb.html``.

    It follows the ``__html__`` protocol of markupsafe and jinja2, so jinja2 does not escape
    it either. Only wrap text you wrote or sanitised yourself: a ``Safe`` made from user input
    is an XSS hole.
    """

    __slots__ = ()

    def __html__(self) -> str:
        return self

    def __repr__(self) -> str:
        return f"safe({str.__repr__(self)})"


def safe(text: str) -> Safe:
    """Mark ``text`` as trusted HTML (see :class:`Safe`)."""
    if not isinstance(text, str):
        raise TypeError(f"safe() takes a str, not {type(text).__name__}: {text!r}")
    return Safe(text)


_needs_escape = re.compile("[&<>\"']").search


def _escape(value: object) -> str:
    """The HTML for one antiquoted value (see :meth:`Quot.to_html`)."""
    if type(value) is str:
        return _html.escape(value, True)
    html_method = getattr(value, "__html__", None)
    if html_method is not None:
        return html_method()
    if type(value) is int:  # the common case of numbers needs no escaping at all
        return str(value)
    return _html.escape(str(value), quote=True)


# The parameter styles Quot.to_sql knows (PEP 249 names), with the placeholders they write
# and the drivers that use them.
PARAMSTYLES: dict[str, str] = {
    "qmark": "?  (sqlite3)",
    "numeric_dollar": "$1, $2, ...  (asyncpg, PostgreSQL)",
    "numeric": ":1, :2, ...  (sqlite3, Oracle)",
    "format": "%s  (aiomysql, psycopg)",
    "pyformat": "%(p1)s, %(p2)s, ...  (psycopg, aiomysql); parameters as a dict",
    "named": ":p1, :p2, ...  (sqlite3, Oracle); parameters as a dict",
}


class Quot:
    """An immutable sequence of :class:`Quote` and :class:`Antiquote` fragments.

    The SML type ``quot = string frag list``. Build one with :func:`qq`, or from fragments::

        Quot([QUOTE("<p>"), ANTIQUOTE(name), QUOTE("</p>")])

    Adjacent quotes are merged and empty quotes dropped, so two Quots that render the same
    way in every context compare equal.

    Concatenation: the paper's infix ``^^`` is ``+`` in Python. ``q1 + q2`` joins two Quots;
    a ``str`` on either side of ``+`` is taken as *quoted* text (trusted, like the text inside
    a ``qq`` template), so never ``+`` user input onto a Quot: put it in a hole instead.

    A Quot is deliberately not a string: ``str(q)``, ``format(q)``, ``f"{q}"`` and therefore
    ``print(q)`` raise :class:`TypeError`. Whether its holes must be HTML-escaped, bound as SQL
    parameters or copied as they are depends on where it goes, so say it: ``q.to_html()``,
    ``q.to_sql()`` (or hand it to the database layer) or ``q.flatten()``. ``repr(q)`` shows
    the fragments, and in Jupyter a Quot displays as HTML.
    """

    __slots__ = ("_fragments",)

    _fragments: tuple[Fragment, ...]

    def __init__(self, fragments: Iterable[Fragment] = ()) -> None:
        if isinstance(fragments, str):
            raise TypeError(
                f"Quot() takes an iterable of QUOTE/ANTIQUOTE fragments, not {fragments!r}; "
                "use qq(...) to build a Quot from a template"
            )
        out: list[Fragment] = []
        for fragment in fragments:
            if type(fragment) is Quote:
                if not isinstance(fragment.text, str):
                    raise TypeError(f"QUOTE text must be a str, not {fragment.text!r}")
                if not fragment.text:
                    continue
                if out and type(out[-1]) is Quote:
                    out[-1] = Quote(out[-1].text + fragment.text)
                    continue
            elif type(fragment) is not Antiquote:
                raise TypeError(f"a Quot holds QUOTE and ANTIQUOTE fragments, not {fragment!r}")
            out.append(fragment)
        self._fragments = tuple(out)

    @classmethod
    def _of(cls, fragments: tuple[Fragment, ...]) -> Quot:
        """A Quot from fragments known to be normalised already (no checks, no copy)."""
        q = object.__new__(cls)
        q._fragments = fragments
        return q

    # -- the sequence -------------------------------------------------------------------

    @property
    def fragments(self) -> tuple[Fragment, ...]:
        """The fragments, as a tuple."""
        return self._fragments

    def __iter__(self) -> Iterator[Fragment]:
        return iter(self._fragments)

    def __len__(self) -> int:
        return len(self._fragments)

    @overload
    def __getitem__(self, index: int) -> Fragment: ...
    @overload
    def __getitem__(self, index: slice) -> Quot: ...
    def __getitem__(self, index: int | slice) -> Fragment | Quot:
        if isinstance(index, slice):
            return Quot._of(self._fragments[index])
        return self._fragments[index]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Quot):
            return self._fragments == other._fragments
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._fragments)

    def __repr__(self) -> str:
        return f"Quot([{', '.join(map(repr, self._fragments))}])"

    # -- concatenation (the paper's ^^) -------------------------------------------------

    def __add__(self, other: Quot | str) -> Quot:
        if isinstance(other, Quot):
            return _concat2(self._fragments, other._fragments)
        if isinstance(other, str):
            return _concat2(self._fragments, (Quote(other),)) if other else self
        return NotImplemented

    def __radd__(self, other: str) -> Quot:
        if isinstance(other, str):
            return _concat2((Quote(other),), self._fragments) if other else self
        return NotImplemented

    def join(self, items: Iterable[Quot | str]) -> Quot:
        """Concatenate ``items`` with this Quot between them, like ``str.join``.

        Also callable as ``Quot.join(", ", items)``: the separator may be a ``str``. Each item
        is a Quot or a str, and a str is quoted text (see the class docstring).
        """
        sep = _as_fragments(self, "separator")
        out: list[Fragment] = []
        first = True
        for item in items:
            if not first:
                _extend(out, sep)
            first = False
            _extend(out, _as_fragments(item, "item"))
        return Quot._of(tuple(out))

    # -- renderings ---------------------------------------------------------------------

    def flatten(self) -> str:
        """The plain text: quoted text plus ``str(value)`` of each hole, nothing escaped.

        The paper's ``Quot.flatten``. A nested Quot in a hole is flattened in turn. Use this
        for text that is neither HTML nor SQL (a plain-text e-mail, a log line).
        """
        parts: list[str] = []
        _flatten_into(self._fragments, parts)
        return "".join(parts)

    def to_html(self) -> str:
        """The HTML: quoted text verbatim, every hole escaped unless it is HTML already.

        A value with an ``__html__`` method (a nested Quot, a :func:`safe` string, a
        ``pyweb.html`` node, ``markupsafe.Markup``) is inserted as its ``__html__()``;
        anything else as ``html.escape(str(value), quote=True)``, which is safe in element
        content and in quoted attribute values.
        """
        return "".join(self.html_parts())

    def html_parts(self) -> list[str]:
        """The pieces :meth:`to_html` joins, in order. A server can write them out one by
        one (pyweb copies them into its reply arena) instead of building one big str."""
        parts: list[str] = []
        append = parts.append
        for fragment in self._fragments:
            if type(fragment) is Quote:
                append(fragment.text)
            else:
                value = fragment.value  # type: ignore[union-attr]
                if type(value) is str:  # most text has nothing to escape: one search says so
                    append(value if _needs_escape(value) is None else _html.escape(value, True))
                else:
                    append(_escape(value))
        return parts

    def __html__(self) -> str:
        """The markupsafe/jinja2 protocol: a Quot is HTML, see :meth:`to_html`."""
        return self.to_html()

    def _repr_html_(self) -> str:
        """How Jupyter displays a Quot: as the HTML it renders to."""
        return self.to_html()

    def to_sql(self, paramstyle: str = "qmark") -> tuple[str, list[Any] | dict[str, Any]]:
        """The SQL statement and its parameters: quoted text is SQL, every hole a parameter.

        ``paramstyle`` is one of :data:`PARAMSTYLES` (PEP 249 names): ``"qmark"`` gives ``?``
        (sqlite3), ``"numeric_dollar"`` gives ``$1`` (asyncpg), ``"format"`` gives ``%s``
        (aiomysql), ``"named"`` gives ``:p1`` and returns the parameters as a dict. A nested
        Quot in a hole is spliced in: its text is SQL, its holes parameters, so statements
        can be built from pieces. With ``"format"`` and ``"pyformat"`` a literal ``%`` in the
        quoted text is doubled, as those drivers expect.

            >>> name = "Robert'); DROP TABLE students;--"
            >>> qq("select id from students where name = {name}").to_sql()
            ('select id from students where name = ?', ["Robert'); DROP TABLE students;--"])
        """
        if paramstyle not in PARAMSTYLES:
            raise ValueError(
                f"unknown paramstyle {paramstyle!r}; use one of {', '.join(PARAMSTYLES)}"
            )
        sql: list[str] = []
        values: list[Any] = []
        double_percent = paramstyle in ("format", "pyformat")
        _sql_into(self._fragments, sql, values, paramstyle, double_percent)
        if paramstyle in ("named", "pyformat"):
            return "".join(sql), {f"p{i}": v for i, v in enumerate(values, 1)}
        return "".join(sql), values

    # -- never silently a string --------------------------------------------------------

    def __str__(self) -> str:
        raise TypeError(_NOT_A_STRING.format(repr(self)))

    def __format__(self, spec: str) -> str:
        raise TypeError(_NOT_A_STRING.format(repr(self)))


_NOT_A_STRING = (
    "a Quot is not a str: use .flatten() for plain text, .to_html() for HTML, or give it to "
    "the database layer, which binds its antiquotes as parameters (.to_sql()); the Quot was {}"
)


def _as_fragments(part: object, what: str) -> tuple[Fragment, ...]:
    if isinstance(part, Quot):
        return part._fragments
    if isinstance(part, str):
        return (Quote(part),) if part else ()
    raise TypeError(f"a Quot can only be joined with a Quot or a str; the {what} is {part!r}")


# + runs this with its objects made in line, no call per fragment (pyweb/_quot_fast.py).
@fast_concat2(Quote, Quot)
def _concat2(a: tuple[Fragment, ...], b: tuple[Fragment, ...]) -> Quot:
    """``a + b``, merging the quotes that meet (both are normalised)."""
    if a and b and type(a[-1]) is Quote and type(b[0]) is Quote:
        merged = Quote(a[-1].text + b[0].text)
        return Quot._of((*a[:-1], merged, *b[1:]))
    return Quot._of(a + b)


def concat(*parts: Quot | str) -> Quot:
    """Concatenate Quots and strs (strs are quoted text): ``concat(a, b, c) == a + b + c``."""
    out: list[Fragment] = []
    for part in parts:
        _extend(out, _as_fragments(part, "part"))
    return Quot._of(tuple(out))


def _extend(out: list[Fragment], fragments: tuple[Fragment, ...]) -> None:
    """``out.extend(fragments)``, merging the quotes that meet (both are normalised)."""
    if out and fragments and type(out[-1]) is Quote and type(fragments[0]) is Quote:
        out[-1] = _quote(out[-1].text + fragments[0].text)
        out.extend(fragments[1:])
    else:
        out.extend(fragments)


def _flatten_into(fragments: tuple[Fragment, ...], parts: list[str]) -> None:
    for fragment in fragments:
        if type(fragment) is Quote:
            parts.append(fragment.text)
        else:
            value = fragment.value  # type: ignore[union-attr]
            if isinstance(value, Quot):
                _flatten_into(value._fragments, parts)
            else:
                parts.append(str(value))


def _sql_into(
    fragments: tuple[Fragment, ...],
    sql: list[str],
    values: list[Any],
    paramstyle: str,
    double_percent: bool,
) -> None:
    for fragment in fragments:
        if type(fragment) is Quote:
            text = fragment.text
            sql.append(text.replace("%", "%%") if double_percent else text)
            continue
        value = fragment.value  # type: ignore[union-attr]
        if isinstance(value, Quot):
            _sql_into(value._fragments, sql, values, paramstyle, double_percent)
            continue
        values.append(value)
        n = len(values)
        if paramstyle == "qmark":
            sql.append("?")
        elif paramstyle == "numeric_dollar":
            sql.append(f"${n}")
        elif paramstyle == "numeric":
            sql.append(f":{n}")
        elif paramstyle == "format":
            sql.append("%s")
        elif paramstyle == "pyformat":
            sql.append(f"%(p{n})s")
        else:  # named
            sql.append(f":p{n}")


# -- qq: the quotation syntax -------------------------------------------------------------

# One token of a template: an escaped brace, a placeholder, or a brace that is neither.
_TOKEN = re.compile(r"\{\{|\}\}|\{([^{}]*)\}|[{}]")


@lru_cache(maxsize=1024)
def _parse(template: str) -> tuple[Quote | tuple[str, tuple[str, ...]], ...]:
    """Split a template into its QUOTE fragments and placeholders ``(name, attributes)``.

    Cached: a page calls ``qq`` with the same literal template on every request, and the
    parse depends on nothing else. The QUOTE fragments are immutable, so every Quot made
    from the template shares them.
    """
    items: list[str | tuple[str, tuple[str, ...]]] = []
    text: list[str] = []
    pos = 0
    for m in _TOKEN.finditer(template):
        text.append(template[pos : m.start()])
        pos = m.end()
        token = m.group()
        if token == "{{":
            text.append("{")
        elif token == "}}":
            text.append("}")
        elif m.group(1) is not None:
            inner = m.group(1)
            path = tuple(inner.split("."))
            if not all(part.isidentifier() for part in path):
                raise ValueError(
                    f"qq: placeholder {token!r} at position {m.start()} is not a name or a "
                    "dotted name ({name} or {name.attr}); compute the value first and put it "
                    "in a variable, and write {{ or }} for literal braces; "
                    f"template: {template!r}"
                )
            items.append("".join(text))
            text.clear()
            items.append((path[0], path[1:]))
        else:
            raise ValueError(
                f"qq: unbalanced {token!r} at position {m.start()}; write {{{{ or }}}} for a "
                f"literal brace; template: {template!r}"
            )
    text.append(template[pos:])
    items.append("".join(text))
    return tuple(Quote(item) if isinstance(item, str) else item for item in items if item != "")


Scopes = tuple[dict[str, Any], ...]
"""The caller's locals, globals and builtins, where ``qq`` looks up a hole not given."""


def _hole_value(
    template: str, name: str, attrs: tuple[str, ...], names: dict[str, object], scopes: Scopes
) -> object:
    """The value of the hole ``{name.attr...}``: ``names[name]`` or the caller's ``name``."""
    for scope in (names, *scopes):
        if name in scope:
            value = scope[name]
            break
    else:
        raise _hole_error(template, name)
    for attr in attrs:
        try:
            value = getattr(value, attr)
        except AttributeError as exc:
            raise _hole_error(template, name, attrs, exc) from exc
    return value


def _hole_error(
    template: str, name: str, attrs: tuple[str, ...] = (), exc: AttributeError | None = None
) -> Exception:
    """The exception for a hole that cannot be filled: ``name`` is not defined, or ``exc``
    was raised following its attributes ``attrs``."""
    if exc is None:
        return NameError(
            f"qq: name {name!r} is not defined (not a keyword argument, nor a local, "
            f"global or builtin of the caller); template: {template!r}",
            name=name,
        )
    placeholder = ".".join((name, *attrs))
    return AttributeError(f"qq: in placeholder {{{placeholder}}}: {exc}; template: {template!r}")


# qq runs with its loop's objects made in line, no call per fragment (pyweb/_quot_fast.py);
# this plain version stays as qq.__wrapped__, and tests/test_quot.py holds the two equal.
@fast_qq(Quote, Antiquote, Quot, _parse, _hole_error)
def qq(template: str, /, **names: object) -> Quot:
    """Build a :class:`Quot` from a template: ``{name}`` and ``{name.attr}`` are holes.

    The SML quotation `` `<b>^name</b>` `` is ``qq("<b>{name}</b>")``. The text around the
    holes is quoted (trusted); ``{{`` and ``}}`` stand for literal braces. A hole's value is
    ``names[name]`` if given, else the variable ``name`` of the caller (its locals, then its
    module's globals, then the builtins), followed through the ``.attr`` attributes.
    Like ``str.format(**locals())``, a variable of an enclosing function is only seen if the
    calling function itself uses it; pass it as a keyword otherwise.

    Only names are allowed in holes: ``{1+2}``, ``{x:>3}``, ``{x!r}`` raise ValueError
    (compute the value into a variable first), a name that is not defined raises NameError.
    The parse of each template string is cached.

    On Python 3.14 and later ``template`` may also be a t-string (``t"<b>{name}</b>"``,
    PEP 750): its interpolations become the holes (after their ``!r``/``:spec``, if any).
    """
    if _Template is not None and isinstance(template, _Template):
        if names:
            raise TypeError(
                f"qq: keyword values {sorted(names)} are not used with a t-string template"
            )
        return _from_template(template)
    if not isinstance(template, str):
        raise TypeError(
            f"qq: the template must be a str, not {type(template).__name__}: {template!r}"
        )
    caller = sys._getframe(1)
    scopes = (caller.f_locals, caller.f_globals, caller.f_builtins)
    del caller  # no reference cycle through this frame
    out: list[Fragment] = []
    for item in _parse(template):
        if type(item) is Quote:
            out.append(item)
        else:
            name, attrs = item  # type: ignore[misc]
            out.append(Antiquote(_hole_value(template, name, attrs, names, scopes)))
    return Quot(out)


def _from_template(template: Any) -> Quot:
    out: list[Fragment] = []
    for part in template:
        if isinstance(part, str):
            out.append(Quote(part))
            continue
        value = part.value
        if part.conversion == "r":
            value = repr(value)
        elif part.conversion == "s":
            value = str(value)
        elif part.conversion == "a":
            value = ascii(value)
        if part.format_spec:
            value = format(value, part.format_spec)
        out.append(Antiquote(value))
    return Quot(out)
