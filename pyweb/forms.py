"""pyweb.forms: typed, validated form variables (SMLserver's ``FormVar``).

From Elsman and Hallenberg, "Web Programming with SMLserver" (PADL 2003), §2.3 "Obtaining
Data from Users". A web page cannot trust what a browser sends: a field meant to hold a
number may be missing, empty, ``abc`` or ``99999999999``. SMLserver's ``FormVar`` structure
answers with *getters*, one per kind of value, and *wrappers* that decide what a failure
means. The paper's guessing game reads its guess with::

    case FormVar.wrapOpt FormVar.getNat "guess" of
        NONE   => (* ask again *)
      | SOME g => (* compare g with n *)

and in Python::

    from pyweb.forms import get_nat, wrap_opt

    guess = wrap_opt(get_nat)("guess")      # int | None
    if guess is None:
        ...  # "You must type a number - try again"

The design is higher-order, as in the paper (which says it is "necessary to obtain a
shallow interface and gain a high degree of code reuse"):

* A **getter** is a plain function ``get_X(name, *, form=None, ...) -> X``: it looks the
  variable up, parses its text, and raises :class:`FormError` (naming the variable, the
  value sent and what was expected) when the variable is missing or malformed.
* The text-to-value part of every getter is a separate function ``parse_X(text, ...)``
  raising ``ValueError(expected)``, reusable on its own (and property-tested).
* A **wrapper** turns a getter into a getter with another failure policy:
  :func:`wrap_opt` answers ``None`` (SMLserver's ``wrapOpt``), :func:`wrap_exn` lets the
  :class:`FormError` propagate (the app answers a 400 page naming the variable), and
  :func:`wrap_fail` records the error and returns ``None`` so a page can check *all* its
  fields and answer *one* 400 page listing every bad one (:func:`collect`, :func:`check`).
* Typed service parameters (Hop's ``define-service``, with Python annotations) reuse the
  same getters: :func:`getter_for` maps an annotation to a getter and
  :func:`parse_arguments` fills a function's parameters from a form.

Where the form comes from: a *form* is a mapping from a name to its values. pyweb's app
passes a multi-dict (``form.getall(name) -> list[str]``); a plain ``dict`` whose values are
``str`` or ``list[str]`` works too. Getters read the form given as ``form=``, else the one in
the context variable :data:`current_form`, which a notebook sets with
``with use_form({...}):``, else the form of the page being served (:data:`current_page`,
which the app sets for each request). **When a name has several values, getters use
the last one** (as ``conn.form[name]`` does). An empty value (``n=``, what a browser sends for
an empty text box) is *present*, and invalid for every getter except
``get_string(..., allow_empty=True)``; only a name that was not sent at all is *missing*.

**Forms declared once.** :class:`Form` (from :mod:`pyweb.formclass`) is a class whose
annotated fields use these getters' types; it renders the HTML form and parses it back,
every error beside its field (after Racket's formlets).

This module imports nothing else from pyweb (``Form`` is loaded on first use): it works in
a notebook and in a test.
"""

from __future__ import annotations

import datetime
import enum
import functools
import html
import inspect
import ipaddress
import re
import types
import typing
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Literal, Protocol, TypeVar
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from pyweb.formclass import Field, Form, field

__all__ = [
    "NAT_MAX",
    "INT_MIN",
    "INT_MAX",
    "FormSource",
    "Getter",
    "FormError",
    "FormErrors",
    "current_form",
    "current_page",
    "use_form",
    "lookup",
    "make_getter",
    "parse_nat",
    "parse_int",
    "parse_real",
    "parse_string",
    "parse_bool",
    "parse_email",
    "parse_url",
    "parse_enum",
    "parse_date",
    "get_nat",
    "get_int",
    "get_real",
    "get_string",
    "get_bool",
    "get_email",
    "get_url",
    "get_enum",
    "get_date",
    "wrap_opt",
    "wrap_exn",
    "wrap_fail",
    "collect",
    "errors",
    "check",
    "Nat",
    "Real",
    "Email",
    "Url",
    "Date",
    "getter_for",
    "check_signature",
    "parse_arguments",
    "Form",
    "Field",
    "field",
]

T = TypeVar("T")

NAT_MAX = 2**31 - 1
"""The largest value :func:`get_nat` and :func:`get_int` accept by default: SMLserver's
``getNat`` accepts what "fits in 32 bits" (a signed 32-bit ``int``)."""
INT_MIN = -(2**31)
"""The smallest value :func:`get_int` accepts by default."""
INT_MAX = 2**31 - 1
"""The largest value :func:`get_int` accepts by default."""


# ---------------------------------------------------------------------------------------
# Forms and where getters find them


class _MultiValued(Protocol):
    def getall(self, name: str) -> list[Any]: ...


FormSource = _MultiValued | Mapping[str, Any]
"""What a getter reads: an object with ``getall(name) -> list[str]`` (pyweb's multi-dict),
or a mapping whose values are ``str`` or a list of ``str``."""

Getter = Callable[..., Any]
"""A getter: ``getter(name, *, form=None, **options) -> value``, raising :class:`FormError`."""

current_form: ContextVar[FormSource | None] = ContextVar("pyweb_current_form", default=None)
"""The form getters read when called without ``form=``, set by :func:`use_form`; when it is
unset, they read the form of the page being served (:data:`current_page`)."""


class PageForm(Protocol):
    """What :data:`current_page` holds (the app's ``conn``): the request's form, and the
    list that :func:`wrap_fail` records errors into when no :func:`collect` block is
    nearer (the app answers the 400 page listing them)."""

    form: FormSource
    form_errors: list[FormError]


current_page: ContextVar[PageForm] = ContextVar("pyweb_conn")
"""The page being served, set by the app once per request: one context variable gives the
getters the request's form and collector, and ``current_conn()`` its ``conn``."""


@contextmanager
def use_form(form: FormSource) -> Iterator[FormSource]:
    """Make ``form`` the :data:`current_form` inside the ``with`` block.

    >>> with use_form({"n": "42"}):
    ...     get_nat("n")
    42
    """
    token = current_form.set(form)
    try:
        yield form
    finally:
        current_form.reset(token)


def resolve_form(form: FormSource | None) -> FormSource:
    """The form to read: ``form`` when given, else the one :func:`use_form` set, else the
    current page's; ``RuntimeError`` when there is none (the getters' ``form=`` rule)."""
    if form is not None:
        return form
    found = current_form.get()
    if found is None:
        page = current_page.get(None)
        if page is not None:
            return page.form
        raise RuntimeError(
            "no form to read: pass form=..., or use `with forms.use_form(form):` "
            "(inside a page the app sets the request's form)"
        )
    return found


def lookup(name: str, form: FormSource | None = None) -> str | None:
    """The text sent for ``name`` (the last value when there are several), ``None`` when
    it was not sent at all.

    A value that is not a string (an uploaded file sent where text was expected, or a
    number put into a hand-made dict) comes back as ``"<not text: ...>"``, which no getter
    accepts, so the error page names it.
    """
    source = resolve_form(form)
    values: Any
    getall = getattr(source, "getall", None)
    if callable(getall):
        try:
            values = getall(name)
        except KeyError:
            values = []
    else:
        values = source.get(name)  # type: ignore[union-attr]
        if values is None:
            values = []
        elif isinstance(values, str) or not isinstance(values, list | tuple):
            values = [values]
    if not values:
        return None
    last = values[-1]
    if isinstance(last, str):
        return last
    return f"<not text: {last!r}>"


# ---------------------------------------------------------------------------------------
# Errors


def _show(value: str) -> str:
    """``repr(value)``, cut short: a value may be a megabyte of whatever a client sent."""
    if len(value) > 60:
        return f"{value[:57]!r}... ({len(value)} characters)"
    return repr(value)


class FormError(ValueError):
    """A form variable that is missing or does not hold what a page expects.

    ``name`` is the variable, ``value`` the text sent (``None`` when missing) and
    ``expected`` a short English description such as ``"a natural number from 0 to
    2147483647"``.

    >>> str(FormError("n", "-3", "a natural number from 0 to 2147483647"))
    "form variable 'n' = '-3': expected a natural number from 0 to 2147483647"
    """

    status = 400

    def __init__(self, name: str, value: str | None, expected: str) -> None:
        super().__init__(name, value, expected)
        self.name = name
        self.value = value
        self.expected = expected

    @property
    def missing(self) -> bool:
        """True when the variable was not sent at all."""
        return self.value is None

    def __str__(self) -> str:
        if self.value is None:
            return f"form variable {self.name!r} is missing: expected {self.expected}"
        return f"form variable {self.name!r} = {_show(self.value)}: expected {self.expected}"

    def to_html(self) -> str:
        """The 400 page for this one error (see :meth:`FormErrors.to_html`)."""
        return FormErrors([self]).to_html()


_PAGE = """<!DOCTYPE html>
<html lang="en">
<head><meta charset="utf-8"><title>Bad form input</title></head>
<body>
<h1>400 Bad form input</h1>
<p>{intro}</p>
<table border="1" cellpadding="4">
<thead><tr><th>Variable</th><th>Value given</th><th>What was expected</th></tr></thead>
<tbody>
{rows}</tbody>
</table>
</body>
</html>
"""


class FormErrors(Exception):
    """Several form errors (each a :class:`FormError`), reported together on one 400 page.

    Raised by :func:`check` and :func:`parse_arguments`; ``errors`` lists them in the
    order they were found.
    """

    status = 400

    def __init__(self, errors: Iterable[FormError]) -> None:
        found = list(errors)
        if not found:
            raise ValueError("FormErrors needs at least one FormError")
        super().__init__(found)
        self.errors: list[FormError] = found

    def __str__(self) -> str:
        if len(self.errors) == 1:
            return str(self.errors[0])
        lines = [f"{len(self.errors)} bad form variables:"]
        lines.extend(f"  {e}" for e in self.errors)
        return "\n".join(lines)

    def to_html(self) -> str:
        """A short, complete HTML page (for a 400 answer) with a table of the variable, the
        value given and what was expected. Everything is escaped: the values are whatever a
        client sent."""
        return _PAGE.format(intro=self.intro(), rows=self._rows())

    def intro(self) -> str:
        """One sentence: how many fields were wrong, and what to do."""
        if len(self.errors) == 1:
            return "A form field was missing or invalid. Please go back, correct it and send the form again."
        return (
            f"{len(self.errors)} form fields were missing or invalid. Please go back, "
            "correct them and send the form again."
        )

    def table_html(self) -> str:
        """The table of the page alone (variable, value given, what was expected), for a
        page that has its own layout."""
        return (
            "<table>\n<thead><tr><th>Variable</th><th>Value given</th>"
            f"<th>What was expected</th></tr></thead>\n<tbody>\n{self._rows()}</tbody>\n</table>\n"
        )

    def _rows(self) -> str:
        rows = []
        for e in self.errors:
            given = (
                "<em>(missing)</em>"
                if e.value is None
                else f"<code>{html.escape(_show(e.value))}</code>"
            )
            rows.append(
                f"<tr><td><code>{html.escape(e.name)}</code></td><td>{given}</td>"
                f"<td>{html.escape(e.expected)}</td></tr>\n"
            )
        return "".join(rows)

    def describe(self) -> str:
        """The bad fields as one line of text: ``n: '0' (expected ...); who: missing``."""
        return "; ".join(
            f"{e.name}: {'missing' if e.value is None else _show(e.value)} "
            f"(expected {e.expected})"
            for e in self.errors
        )


# ---------------------------------------------------------------------------------------
# Parsers: text -> value, raising ValueError(expected)

_DIGITS = re.compile(r"[0-9]+")
_SIGNED = re.compile(r"([+-]?)([0-9]+)")
# Decimal notation only: no "nan", "inf", hex, underscores or spaces, which float() allows.
_REAL = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_DATE = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})")
# RFC 5322 dot-atom local part (no quoted strings, no comments)
_LOCAL = re.compile(r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*")
_LABEL = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?")
_HOST = re.compile(r"[\w.-]+")

_TRUE = frozenset({"on", "true", "yes", "1"})
_FALSE = frozenset({"off", "false", "no", "0"})


def _too_long(digits: str, *bounds: int) -> bool:
    """True when ``digits`` is certainly beyond the bounds, checked before ``int()`` so a
    huge string costs nothing (and never meets Python's int-conversion digit limit)."""
    significant = digits.lstrip("0")
    return len(significant) > max(len(str(abs(b))) for b in bounds)


def _describe_nat(max: int, min: int = 0) -> str:
    return f"a natural number from {min} to {max}"


def parse_nat(text: str, *, min: int = 0, max: int = NAT_MAX) -> int:
    """A natural number written in ASCII digits, from ``min`` (0 unless given) to ``max``.

    No sign, spaces, underscores or non-ASCII digits (all of which ``int()`` would accept);
    leading zeros are fine. Raises ``ValueError`` whose message is what was expected.
    """
    if min < 0:
        raise ValueError(f"a natural number is never below 0: min={min!r}")
    expected = _describe_nat(max, min)
    if not _DIGITS.fullmatch(text) or _too_long(text, max):
        raise ValueError(expected)
    # int("000...") counts leading zeros against Python's digit limit; drop them first
    n = int(text.lstrip("0") or "0")
    if not min <= n <= max:
        raise ValueError(expected)
    return n


def _describe_int(min: int, max: int) -> str:
    if (min, max) == (INT_MIN, INT_MAX):  # the 32-bit bounds are no one's intent: say what it looks like
        return "a whole number, like 42 or -7"
    return f"an integer from {min} to {max}"


def parse_int(text: str, *, min: int = INT_MIN, max: int = INT_MAX) -> int:
    """An integer in ASCII digits with an optional ``-`` or ``+`` sign, from ``min`` to
    ``max`` (by default the signed 32-bit range)."""
    expected = _describe_int(min, max)
    match = _SIGNED.fullmatch(text)
    if match is None or _too_long(match.group(2), min, max):
        raise ValueError(expected)
    sign, digits = match.groups()
    n = int(sign + (digits.lstrip("0") or "0"))
    if not min <= n <= max:
        raise ValueError(expected)
    return n


def _describe_real(min: float | None, max: float | None) -> str:
    if min is not None and max is not None:
        return f"a decimal number from {min} to {max}"
    if min is not None:
        return f"a decimal number of at least {min}"
    if max is not None:
        return f"a decimal number of at most {max}"
    return "a decimal number"


def parse_real(text: str, *, min: float | None = None, max: float | None = None) -> float:
    """A finite number in decimal notation (``3``, ``-0.5``, ``.5``, ``1e-3``), optionally
    bounded by ``min`` and ``max`` (inclusive).

    ``nan``, ``inf``, hex floats, underscores, spaces and numbers too large for a float
    (``1e400``) are rejected.
    """
    expected = _describe_real(min, max)
    if not _REAL.fullmatch(text):
        raise ValueError(expected)
    x = float(text)
    if x in (float("inf"), float("-inf")):
        raise ValueError(expected)
    if (min is not None and x < min) or (max is not None and x > max):
        raise ValueError(expected)
    return x


def _describe_string(allow_empty: bool, max_length: int | None) -> str:
    base = "a text" if allow_empty else "a non-empty text"
    if max_length is not None:
        return f"{base} of at most {max_length} characters"
    return base


def parse_string(
    text: str, *, allow_empty: bool = False, max_length: int | None = None, strip: bool = True
) -> str:
    """Text, by default with the surrounding whitespace removed (``strip=False`` keeps it).

    It must not be blank (empty after removing whitespace) unless ``allow_empty``; its
    length, after stripping when ``strip``, must be at most ``max_length`` when given.
    """
    expected = _describe_string(allow_empty, max_length)
    stripped = text.strip()
    if not stripped and not allow_empty:
        raise ValueError(expected)
    result = stripped if strip else text
    if max_length is not None and len(result) > max_length:
        raise ValueError(expected)
    return result


_BOOL_EXPECTED = "yes or no (one of on, true, yes, 1, off, false, no, 0)"


def parse_bool(text: str) -> bool:
    """``on``, ``true``, ``yes``, ``1`` are true; ``off``, ``false``, ``no``, ``0`` are
    false; case does not matter. (A checked HTML checkbox sends ``on``; an unchecked one
    sends nothing, so give a ``bool`` parameter a default of ``False``.)"""
    lowered = text.lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ValueError(_BOOL_EXPECTED)


_EMAIL_EXPECTED = "an e-mail address such as name@example.com"


def parse_email(text: str) -> str:
    """A practical e-mail address ``local@domain``, returned as given.

    Accepted: an ASCII local part of at most 64 characters made of letters, digits and
    ``!#$%&'*+/=?^_`{|}~-``, in dot-separated non-empty pieces; a domain of at most 253
    characters with at least two dot-separated labels, each 1 to 63 letters, digits or
    hyphens, not starting or ending with a hyphen, the last one not all digits; at most
    254 characters in all. Rejected: spaces, quoted local parts, IP-address domains,
    non-ASCII characters (write an internationalised domain in its ``xn--`` form).
    """
    if len(text) > 254 or text.count("@") != 1:
        raise ValueError(_EMAIL_EXPECTED)
    local, domain = text.split("@")
    if len(local) > 64 or not _LOCAL.fullmatch(local) or len(domain) > 253:
        raise ValueError(_EMAIL_EXPECTED)
    labels = domain.split(".")
    if len(labels) < 2 or not all(_LABEL.fullmatch(label) for label in labels):
        raise ValueError(_EMAIL_EXPECTED)
    if labels[-1].isdigit():
        raise ValueError(_EMAIL_EXPECTED)
    return text


def _describe_url(schemes: tuple[str, ...]) -> str:
    names = " or ".join(schemes)
    example = f"{schemes[0]}://example.com/" if schemes else "..."
    return f"an absolute {names} URL such as {example}"


def parse_url(text: str, *, schemes: Iterable[str] = ("http", "https")) -> str:
    """An absolute URL with one of ``schemes`` (case-insensitive) and a host, returned as
    given. Whitespace and control characters anywhere are rejected (``urlsplit`` would
    silently drop some of them); the host must be a name (letters, digits, ``-``, ``.``,
    ``_``; non-ASCII letters allowed) or a bracketed IPv6 address; a port must be a number.
    ``javascript:`` and other schemes are rejected, so the result is safe to put in an
    ``href`` (after the usual HTML escaping).
    """
    allowed = tuple(s.lower() for s in schemes)
    expected = _describe_url(allowed)
    if not text or any(c.isspace() or ord(c) < 32 or ord(c) == 127 for c in text):
        raise ValueError(expected)
    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018  (raises ValueError on a bad port)
    except ValueError:
        raise ValueError(expected) from None
    host = parts.hostname
    if parts.scheme.lower() not in allowed or not host:
        raise ValueError(expected)
    if "[" in parts.netloc:
        try:
            ipaddress.IPv6Address(host.split("%")[0])
        except ValueError:
            raise ValueError(expected) from None
    elif not _HOST.fullmatch(host):
        raise ValueError(expected)
    return text


def _enum_table(choices: Iterable[Any] | type[enum.Enum]) -> dict[str, Any]:
    """Text -> value. An Enum answers to each member's value (as text) and its name; a
    plain iterable answers to each choice (as text)."""
    table: dict[str, Any] = {}
    if isinstance(choices, type) and issubclass(choices, enum.Enum):
        for member in choices:
            table.setdefault(str(member.value), member)
        for member_name, member in choices.__members__.items():
            table.setdefault(member_name, member)
        return table
    for choice in choices:
        table.setdefault(str(choice), choice)
    return table


def _describe_enum(choices: Iterable[Any] | type[enum.Enum]) -> str:
    if isinstance(choices, type) and issubclass(choices, enum.Enum):
        shown = [str(m.value) for m in choices]
    else:
        shown = [str(c) for c in choices]
    if not shown:
        return "one of no choices (the page offers none)"
    if len(shown) == 1:
        return f"{shown[0]!r}"
    return "one of " + ", ".join(repr(s) for s in shown)


def parse_enum(text: str, choices: Iterable[Any] | type[enum.Enum]) -> Any:
    """One of ``choices``, matched exactly (case matters).

    ``choices`` is an iterable of strings (the string is returned), of other values such as
    ints (the value whose ``str`` is ``text`` is returned) or an :class:`enum.Enum` subclass
    (the member is returned, matched by its value as text or by its name).
    """
    if not (isinstance(choices, type) and issubclass(choices, enum.Enum)):
        choices = tuple(choices)
    table = _enum_table(choices)
    if text not in table:
        raise ValueError(_describe_enum(choices))
    return table[text]


_DATE_EXPECTED = "a date written YYYY-MM-DD, such as 2024-03-31"


def parse_date(text: str) -> datetime.date:
    """An ISO 8601 calendar date ``YYYY-MM-DD``, what ``<input type=date>`` sends (ASCII
    digits, four-digit year from 0001, a real day of a real month)."""
    match = _DATE.fullmatch(text)
    if match is None:
        raise ValueError(_DATE_EXPECTED)
    year, month, day = (int(g) for g in match.groups())
    try:
        return datetime.date(year, month, day)
    except ValueError:
        raise ValueError(_DATE_EXPECTED) from None


# ---------------------------------------------------------------------------------------
# Getters: lookup + parse + FormError


def _get(name: str, form: FormSource | None, parse: Callable[[str], T], expected: str) -> T:
    text = lookup(name, form)
    if text is None:
        raise FormError(name, None, expected)
    try:
        return parse(text)
    except ValueError as exc:
        # the parser's message is its own, more precise, description when it has one
        raise FormError(name, text, str(exc) or expected) from None


def make_getter(parse: Callable[[str], T], expected: str) -> Callable[..., T]:
    """A getter ``(name, *, form=None) -> T`` from a parser that raises ``ValueError``.

    ``expected`` describes the accepted values (used when the variable is missing, and when
    the parser's ``ValueError`` has no message).

    >>> def parse_even(text: str) -> int:
    ...     n = parse_nat(text)
    ...     if n % 2:
    ...         raise ValueError("an even natural number")
    ...     return n
    >>> get_even = make_getter(parse_even, "an even natural number")
    >>> get_even("n", form={"n": "4"})
    4
    """

    def getter(name: str, *, form: FormSource | None = None) -> T:
        return _get(name, form, parse, expected)

    getter.__name__ = f"get_{getattr(parse, '__name__', 'value').removeprefix('parse_')}"
    getter.__doc__ = f"A form variable holding {expected} (see :func:`make_getter`)."
    return getter


def get_nat(name: str, *, form: FormSource | None = None, min: int = 0, max: int = NAT_MAX) -> int:
    """The natural number in variable ``name``, from ``min`` to ``max`` (see
    :func:`parse_nat`; the same bounds as :func:`get_int`). SMLserver's ``FormVar.getNat``."""
    if min < 0:
        raise ValueError(f"get_nat({name!r}): a natural number is never below 0: min={min!r}")
    return _get(name, form, lambda t: parse_nat(t, min=min, max=max), _describe_nat(max, min))


def get_int(
    name: str, *, form: FormSource | None = None, min: int = INT_MIN, max: int = INT_MAX
) -> int:
    """The integer in variable ``name`` (see :func:`parse_int`). ``FormVar.getInt``."""
    return _get(name, form, lambda t: parse_int(t, min=min, max=max), _describe_int(min, max))


def get_real(
    name: str,
    *,
    form: FormSource | None = None,
    min: float | None = None,
    max: float | None = None,
) -> float:
    """The finite decimal number in variable ``name`` (see :func:`parse_real`).
    ``FormVar.getReal``."""
    return _get(name, form, lambda t: parse_real(t, min=min, max=max), _describe_real(min, max))


def get_string(
    name: str,
    *,
    form: FormSource | None = None,
    allow_empty: bool = False,
    max_length: int | None = None,
    strip: bool = True,
) -> str:
    """The text in variable ``name``, stripped of surrounding whitespace and not blank by
    default (see :func:`parse_string`). ``FormVar.getString``."""
    return _get(
        name,
        form,
        lambda t: parse_string(t, allow_empty=allow_empty, max_length=max_length, strip=strip),
        _describe_string(allow_empty, max_length),
    )


def get_bool(name: str, *, form: FormSource | None = None) -> bool:
    """The yes/no value in variable ``name`` (see :func:`parse_bool`). A missing variable
    is an error here; an unchecked checkbox is missing, so use ``wrap_opt`` or a ``bool``
    parameter with a default."""
    return _get(name, form, parse_bool, _BOOL_EXPECTED)


def get_email(name: str, *, form: FormSource | None = None) -> str:
    """The e-mail address in variable ``name`` (see :func:`parse_email`).
    ``FormVar.getEmail``."""
    return _get(name, form, parse_email, _EMAIL_EXPECTED)


def get_url(
    name: str, *, form: FormSource | None = None, schemes: Iterable[str] = ("http", "https")
) -> str:
    """The absolute URL in variable ``name`` (see :func:`parse_url`). ``FormVar.getUrl``."""
    allowed = tuple(s.lower() for s in schemes)
    return _get(name, form, lambda t: parse_url(t, schemes=allowed), _describe_url(allowed))


def get_enum(
    name: str, choices: Iterable[Any] | type[enum.Enum], *, form: FormSource | None = None
) -> Any:
    """One of ``choices`` in variable ``name`` (see :func:`parse_enum`): the string, or the
    Enum member. ``FormVar.getEnum``."""
    if not (isinstance(choices, type) and issubclass(choices, enum.Enum)):
        choices = tuple(choices)  # an iterator would be used up by the first parse
    fixed = choices
    return _get(name, form, lambda t: parse_enum(t, fixed), _describe_enum(fixed))


def get_date(name: str, *, form: FormSource | None = None) -> datetime.date:
    """The ``YYYY-MM-DD`` date in variable ``name`` (see :func:`parse_date`)."""
    return _get(name, form, parse_date, _DATE_EXPECTED)


# ---------------------------------------------------------------------------------------
# Wrappers: what a failure means


def _name_of(getter: Callable[..., Any]) -> str:
    return getattr(getter, "__name__", None) or repr(getter)


@functools.lru_cache(maxsize=512)  # one wrapper per getter, not one per call
def wrap_opt(getter: Callable[..., T]) -> Callable[..., T | None]:
    """SMLserver's ``wrapOpt``: a getter that answers ``None`` when the variable is missing
    or invalid, instead of raising :class:`FormError`.

    >>> with use_form({"guess": "abc"}):
    ...     print(wrap_opt(get_nat)("guess"))
    None
    """

    @functools.wraps(getter)
    def opt(name: str, /, *args: Any, **kwargs: Any) -> T | None:
        try:
            return getter(name, *args, **kwargs)
        except FormError:
            return None

    opt.__doc__ = f"{_name_of(getter)}, answering None when the variable is missing or invalid."
    return opt


@functools.lru_cache(maxsize=512)  # one wrapper per getter, not one per call
def wrap_exn(getter: Callable[..., T]) -> Callable[..., T]:
    """SMLserver's ``wrapExn``: a getter that raises :class:`FormError` on a missing or
    invalid variable. Inside a page the app turns an uncaught ``FormError`` into a 400 page
    naming the variable. (pyweb's getters already behave so; the wrapper names the policy
    where a page chooses between policies.)"""

    @functools.wraps(getter)
    def exn(name: str, /, *args: Any, **kwargs: Any) -> T:
        return getter(name, *args, **kwargs)

    return exn


_collector: ContextVar[list[FormError] | None] = ContextVar("pyweb_form_errors", default=None)

_NO_COLLECTOR = (
    "no form error collector: use `with forms.collect():` around the code that calls "
    "wrap_fail getters (inside a page the app installs one for each request)"
)


class collect:
    """Install a fresh list of form errors for :func:`wrap_fail` getters; yield it.

    A page has one already (its ``conn.form_errors``: the app answers a 400 page listing
    every recorded error when the page ends); elsewhere::

        with forms.collect() as errs:
            age = wrap_fail(get_nat)("age")
            mail = wrap_fail(get_email)("mail")
            forms.check()          # raises FormErrors naming both if both are bad

    (A small class rather than a ``@contextmanager`` generator: the app enters one per
    request, and a class costs a third as much.)
    """

    __slots__ = ("found", "_token")

    def __enter__(self) -> list[FormError]:
        self.found: list[FormError] = []
        self._token = _collector.set(self.found)
        return self.found

    def __exit__(self, *exc_info: object) -> None:
        _collector.reset(self._token)


def _current_collector() -> list[FormError]:
    found = _collector.get()
    if found is None:  # no collect() block: the page's own list, if a page is running
        page = current_page.get(None)
        if page is None:
            raise RuntimeError(_NO_COLLECTOR)
        return page.form_errors
    return found


def errors() -> list[FormError]:
    """The errors recorded so far in the current :func:`collect` block (the same list it
    yields). Raises ``RuntimeError`` outside any."""
    return _current_collector()


def check() -> None:
    """Raise :class:`FormErrors` now if any error has been recorded in the current
    :func:`collect` block, so a page can stop before using the ``None`` values that
    :func:`wrap_fail` returned. Raises ``RuntimeError`` outside any collector."""
    found = _current_collector()
    if found:
        raise FormErrors(found)


@functools.lru_cache(maxsize=512)  # one wrapper per getter, not one per call
def wrap_fail(getter: Callable[..., T]) -> Callable[..., T | None]:
    """SMLserver's ``wrapFail``: a getter that, on a missing or invalid variable, records
    the :class:`FormError` in the current :func:`collect` block and returns ``None``. A page
    reads all its fields this way and the user gets one page listing every bad field.

    The collector is required even when the value is fine, so a forgotten ``collect()``
    shows up at once, not on the first bad input.
    """

    @functools.wraps(getter)
    def fail(name: str, /, *args: Any, **kwargs: Any) -> T | None:
        found = _current_collector()
        try:
            return getter(name, *args, **kwargs)
        except FormError as exc:
            found.append(exc)
            return None

    fail.__doc__ = f"{_name_of(getter)}, recording the error and answering None on failure."
    return fail


# ---------------------------------------------------------------------------------------
# Typed parameters: annotations -> getters (Hop's define-service, with types)

Nat = Annotated[int, get_nat]
"""A natural number 0..2**31-1 (:func:`get_nat`); plain ``int`` means :func:`get_int`."""
Real = Annotated[float, get_real]
"""A finite decimal number (:func:`get_real`), the same as ``float``."""
Email = Annotated[str, get_email]
"""An e-mail address (:func:`get_email`)."""
Url = Annotated[str, get_url]
"""An absolute http(s) URL (:func:`get_url`)."""
Date = Annotated[datetime.date, get_date]
"""A ``YYYY-MM-DD`` date (:func:`get_date`), the same as ``datetime.date``."""

_BY_TYPE: dict[Any, Getter] = {
    bool: get_bool,
    int: get_int,
    float: get_real,
    str: get_string,
    datetime.date: get_date,
}

_SUPPORTED = (
    "int, float, str, bool, datetime.date, Literal[...], an Enum subclass, "
    "Annotated[T, getter] (such as forms.Nat) or one of these | None"
)


def split_optional(annotation: Any) -> tuple[Any, bool]:
    """``T | None`` -> (T, True); anything else -> (annotation, False)."""
    origin = typing.get_origin(annotation)
    if origin is typing.Union or origin is types.UnionType:
        args = typing.get_args(annotation)
        others = [a for a in args if a is not type(None)]
        if len(others) == 1 and len(others) < len(args):
            return others[0], True
    return annotation, False


def _show_annotation(annotation: Any) -> str:
    if isinstance(annotation, type):
        return annotation.__qualname__
    return repr(annotation)


def getter_for(annotation: Any) -> Getter:
    """The getter for a parameter annotation.

    ``int`` -> :func:`get_int`, ``float`` -> :func:`get_real`, ``str`` -> :func:`get_string`,
    ``bool`` -> :func:`get_bool`, ``datetime.date`` -> :func:`get_date`,
    ``Literal["a", "b"]`` and an ``Enum`` subclass -> :func:`get_enum` with those choices,
    ``Annotated[T, getter]`` -> that getter (the last callable in the metadata; if there is
    none, the getter for ``T``), ``T | None`` -> ``wrap_opt`` of the getter for ``T``.
    Anything else raises ``TypeError`` naming the annotation.
    """
    inner, optional = split_optional(annotation)
    if optional:
        return wrap_opt(getter_for(inner))
    if typing.get_origin(annotation) is Annotated:
        base, *metadata = typing.get_args(annotation)
        for item in reversed(metadata):
            if callable(item):
                return item
        return getter_for(base)
    if typing.get_origin(annotation) is Literal:
        values = typing.get_args(annotation)
        if not all(isinstance(v, str | int) and not isinstance(v, bool) for v in values):
            raise TypeError(
                f"no form getter for {_show_annotation(annotation)}: "
                "Literal choices must be strings or ints"
            )
        return functools.partial(get_enum, choices=values)
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return functools.partial(get_enum, choices=annotation)
    try:
        return _BY_TYPE[annotation]
    except (KeyError, TypeError):  # TypeError: an unhashable annotation object
        pass
    raise TypeError(
        f"no form getter for annotation {_show_annotation(annotation)}; use {_SUPPORTED}"
    )


@dataclass(frozen=True, slots=True)
class FormParameter:
    """One form variable of a function: its name, getter, whether ``None`` is allowed, and
    its default (``inspect.Parameter.empty`` when it is required)."""

    name: str
    getter: Getter
    optional: bool
    default: Any  # inspect.Parameter.empty when required


_plans: weakref.WeakKeyDictionary[Any, dict[tuple[str, ...], tuple[FormParameter, ...]]] = (
    weakref.WeakKeyDictionary()
)


def _describe_func(func: Callable[..., Any]) -> str:
    return getattr(func, "__qualname__", None) or repr(func)


def _build_plan(func: Callable[..., Any], skip: tuple[str, ...]) -> tuple[FormParameter, ...]:
    # get_type_hints wants the function itself: look through partials and callable objects
    target: Any = func
    while isinstance(target, functools.partial):
        target = target.func
    if isinstance(target, type):
        target = target.__init__  # type: ignore[misc]  # its hints are the class's
    elif not (inspect.isfunction(target) or inspect.ismethod(target)):
        target = type(target).__call__
    try:
        hints = typing.get_type_hints(target, include_extras=True)
    except Exception as exc:  # NameError for an unknown name in a string annotation, ...
        raise TypeError(
            f"{_describe_func(func)}: cannot evaluate the parameter annotations: {exc!r}"
        ) from exc
    plan = []
    for param in inspect.signature(func).parameters.values():
        if param.name in skip:
            continue
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        if param.kind is param.POSITIONAL_ONLY:
            raise TypeError(
                f"{_describe_func(func)}: parameter {param.name!r} is positional-only; "
                "form variables are passed by keyword"
            )
        annotation = hints.get(param.name, str)
        base, optional = split_optional(annotation)
        try:
            getter = getter_for(base)
        except TypeError as exc:
            raise TypeError(f"{_describe_func(func)}: parameter {param.name!r}: {exc}") from None
        plan.append(FormParameter(param.name, getter, optional, param.default))
    return tuple(plan)


def form_parameters(func: Callable[..., Any], skip: Iterable[str]) -> tuple[FormParameter, ...]:
    """The form variables of ``func`` (its parameters but those in ``skip``), worked out
    once per function and remembered; ``TypeError`` names a parameter with no getter."""
    key = tuple(skip)
    try:
        per_skip = _plans.setdefault(func, {})
    except TypeError:  # not weak-referenceable: plan it every time
        return _build_plan(func, key)
    plan = per_skip.get(key)
    if plan is None:
        plan = per_skip[key] = _build_plan(func, key)
    return plan


def check_signature(func: Callable[..., Any], *, skip: Iterable[str] = ("conn",)) -> None:
    """Raise ``TypeError`` naming the first parameter of ``func`` whose annotation has no
    getter (or that is positional-only), so an app can report it when it loads a service,
    not on each request. The plan it builds is cached for :func:`parse_arguments`."""
    form_parameters(func, skip)


def parse_arguments(
    func: Callable[..., Any],
    form: FormSource | None = None,
    *,
    skip: Iterable[str] = ("conn",),
) -> dict[str, Any]:
    """Keyword arguments for ``func`` read from ``form`` (default: :data:`current_form`),
    one form variable per parameter, each parsed by :func:`getter_for` its annotation.

    * ``x: T | None`` is the paper's ``wrapOpt``: ``None`` when missing or invalid; a
      non-``None`` default is used when the variable is missing.
    * ``x: T = default``: ``default`` when missing, an error when present but invalid.
    * ``x: T``: an error when missing or invalid.
    * no annotation: ``str``. Parameters named in ``skip`` and ``*args``/``**kwargs`` are
      left out.

    Every parameter is checked before raising :class:`FormErrors` naming all the bad ones,
    so the user fixes the whole form at once. Annotations may be strings (``from __future__
    import annotations``). An unsupported annotation raises ``TypeError``
    (see :func:`check_signature`).
    """
    plan = form_parameters(func, skip)
    source = resolve_form(form)
    values: dict[str, Any] = {}
    bad: list[FormError] = []
    for p in plan:
        try:
            values[p.name] = p.getter(p.name, form=source)
        except FormError as exc:
            has_default = p.default is not inspect.Parameter.empty
            if p.optional:
                values[p.name] = p.default if exc.missing and has_default else None
            elif exc.missing and has_default:
                values[p.name] = p.default
            else:
                bad.append(exc)
    if bad:
        raise FormErrors(bad)
    return values


def __getattr__(name: str) -> Any:
    """``Form``, ``Field`` and ``field`` (:mod:`pyweb.formclass`), loaded on first use: the
    form class builds HTML, which the getters never need."""
    if name in ("Form", "Field", "field"):
        import pyweb.formclass as formclass

        value = getattr(formclass, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'pyweb.forms' has no attribute {name!r}")
