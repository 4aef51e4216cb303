"""Forms declared once: one class renders the HTML form and parses what comes back.

SMLserver's ``FormVar`` getters (§2.3, :mod:`pyweb.forms`) check what a browser sends, but
the page still writes the form by hand: each ``<input>``, its ``value="..."`` when the form
is shown again, and each error beside its field. Racket's *formlets* (Cooper, Lindley,
Wadler and Yallop, "The essence of form abstraction", 2008) declare a form once and get
both halves from the declaration: the HTML and the parser, which cannot drift apart. Here
the declaration is a class whose annotations are the getters' types::

    from pyweb.forms import Form, Nat, Email, field

    class Booking(Form):
        name: str = field("Name", max_length=100)
        email: Email = field("E-mail")
        nights: Nat = field("Nights", min=1, max=30)
        note: str | None = field("Anything else?", widget="textarea")

    booking = Booking.parse()          # the request's form: every field checked
    if booking.ok:
        booking.nights                 # an int from 1 to 30
    else:
        conn.return_(page("Book", booking.render(action="/booking")), status=422)

* A type is any annotation :func:`pyweb.forms.getter_for` knows: ``str``, ``int``, ``Nat``,
  ``float``, ``Email``, ``Url``, ``Date``, ``bool`` (a checkbox), ``Literal[...]`` or an
  ``Enum`` (a ``<select>``); ``T | None`` is an optional field (left empty: ``None``).
  :func:`field`'s keyword options go to the getter (``min``, ``max``, ``max_length``...),
  so the check and the message are the getter's own.
* :meth:`Form.parse` reads every field and keeps every error (``wrap_fail``'s idea, one
  message per field); :meth:`Form.render` gives the ``<form>`` with the text as typed and
  each message beside its field, all escaped; with ``method="post"`` inside a request it
  carries the CSRF field (:func:`pyweb.html.FORM`).

Like :mod:`pyweb.forms` it needs no server: in a notebook, ``Booking.parse({"name": ...})``.
"""

from __future__ import annotations

import enum
import functools
import sys
import typing
from collections.abc import Mapping
from typing import Any, ClassVar

import pyweb.forms as forms
from pyweb.html import (
    FORM,
    INPUT,
    LABEL,
    OPTION,
    SELECT,
    SPAN,
    TEXTAREA,
    Node,
    P,
)

__all__ = ["Form", "Field", "field", "WIDGETS"]

WIDGETS = ("text", "textarea", "password", "email", "url", "number", "date", "checkbox", "select", "hidden")
"""The widgets a field can be shown as (``field(widget=...)``); the type chooses by default."""

_CHOICE_GETTER = forms.get_enum
_WIDGET_OF: dict[Any, str] = {
    forms.get_email: "email",
    forms.get_url: "url",
    forms.get_nat: "number",
    forms.get_int: "number",
    forms.get_real: "text",  # (a number box would refuse 1e-3, which the getter takes)
    forms.get_date: "date",
    forms.get_bool: "checkbox",
}


class Field:
    """One field of a :class:`Form`: its label, widget and getter options (see :func:`field`).

    On a form instance the attribute is the parsed value (``booking.nights``)."""

    name: str = ""
    getter: Any = None
    optional: bool = False

    def __init__(
        self,
        label: str | None = None,
        *,
        widget: str | None = None,
        initial: Any = None,
        help: str | None = None,
        **options: Any,
    ) -> None:
        if widget is not None and widget not in WIDGETS:
            raise ValueError(f"field widget {widget!r} is not one of {', '.join(WIDGETS)}")
        self.label = label
        self.widget = widget
        self.initial = initial
        self.help = help
        self.options = options
        """Keyword options for the getter (``min=1, max=30``, ``max_length=100``)."""

    def _bind(self, owner: type, name: str, annotation: Any) -> None:
        """Set the field's name and getter from its annotation (at class creation)."""
        self.name = name
        base, self.optional = forms.split_optional(annotation)
        try:
            self.getter = forms.getter_for(base)
        except TypeError as exc:
            raise TypeError(f"{owner.__qualname__}.{name}: {exc}") from None
        if self.label is None:
            self.label = name.replace("_", " ").capitalize()
        if self.widget is None:
            self.widget = self._default_widget()
        self._check_options(owner)

    def _default_widget(self) -> str:
        getter = self.getter
        if isinstance(getter, functools.partial) and getter.func is _CHOICE_GETTER:
            return "select"
        return _WIDGET_OF.get(getter, "text")

    def _check_options(self, owner: type) -> None:
        """Options the getter does not take are a TypeError now, not on the first request."""
        try:
            self.getter(self.name, form={}, **self.options)
        except forms.FormError:
            pass  # missing, as expected: the options were accepted
        except TypeError as exc:
            raise TypeError(f"{owner.__qualname__}.{self.name}: {exc}") from None

    @property
    def choices(self) -> list[tuple[str, str]]:
        """``(value sent, text shown)`` for a ``select`` field (a ``Literal`` or an ``Enum``)."""
        getter = self.getter
        if not (isinstance(getter, functools.partial) and getter.func is _CHOICE_GETTER):
            return []
        options = getter.keywords["choices"]
        if isinstance(options, type) and issubclass(options, enum.Enum):
            return [(str(m.value), m.name.replace("_", " ").capitalize()) for m in options]
        return [(str(c), str(c)) for c in options]

    def parse(self, source: forms.FormSource) -> Any:
        """The field's value from ``source``; :class:`~pyweb.forms.FormError` if bad."""
        text = forms.lookup(self.name, source)
        if self.widget == "checkbox" and text is None:
            return False  # an unchecked box sends nothing
        if self.optional and (text is None or not text.strip()):
            return None  # left empty: no value (never an error)
        return self.getter(self.name, form=source, **self.options)

    def as_text(self, value: Any) -> str:
        """A value as the text a browser would send for it (to fill the field in)."""
        if value is None:
            return ""
        if isinstance(value, enum.Enum):
            return str(value.value)
        if isinstance(value, bool):
            return "on" if value else ""
        return str(value)

    def __get__(self, instance: Form | None, owner: type | None = None) -> Any:
        if instance is None:
            return self
        return instance.values.get(self.name)

    def __repr__(self) -> str:
        return f"<Field {self.name} {self.widget}>"


def field(
    label: str | None = None,
    *,
    widget: str | None = None,
    initial: Any = None,
    help: str | None = None,
    **options: Any,
) -> Any:
    """A :class:`Form` field: ``nights: Nat = field("Nights", min=1, max=30)``.

    ``label`` is shown before the box (default: the name, capitalised); ``widget`` one of
    :data:`WIDGETS` (default: chosen by the type: ``email``, ``url``, ``number``, ``date``,
    ``checkbox``, ``select``, else ``text``); ``initial`` the value of a blank form; ``help``
    a sentence shown beside the box. Other keywords go to the type's getter."""
    return Field(label, widget=widget, initial=initial, help=help, **options)


class Form:
    """A form declared once (see the module docstring). Subclass it; annotate the fields."""

    fields: ClassVar[dict[str, Field]] = {}
    """The fields, in the order they are declared."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # The frame running the ``class`` statement: its names resolve string annotations
        # (``from __future__ import annotations``) in a function or a page script too.
        where = sys._getframe(1)
        try:
            names = {**where.f_globals, **where.f_locals}
            hints = typing.get_type_hints(cls, localns=names, include_extras=True)
        except Exception as exc:  # NameError for an unknown name in an annotation, ...
            raise TypeError(f"{cls.__qualname__}: cannot read the field types: {exc!r}") from None
        finally:
            del where
        found: dict[str, Field] = {}
        for klass in reversed(cls.__mro__):  # a subclass may add fields to a form
            for name in getattr(klass, "__annotations__", {}):
                if name.startswith("_") or typing.get_origin(hints.get(name)) is ClassVar:
                    continue
                declared = klass.__dict__.get(name)
                if not isinstance(declared, Field):
                    if declared is not None:
                        raise TypeError(
                            f"{cls.__qualname__}.{name}: a field's value is field(...), "
                            f"not {declared!r:.40}"
                        )
                    declared = Field()
                    setattr(cls, name, declared)
                if not declared.name:
                    declared._bind(cls, name, hints[name])
                found[name] = declared
        if "csrf_token" in found:
            raise TypeError(f"{cls.__qualname__}: csrf_token is the CSRF field's name")
        cls.fields = found

    def __init__(self, initial: Mapping[str, Any] | None = None) -> None:
        """A blank form, filled in with ``initial`` values (typed, as :meth:`parse` gives
        them) or each field's ``initial``."""
        given = dict(initial or {})
        unknown = set(given) - set(self.fields)
        if unknown:
            raise TypeError(f"{type(self).__qualname__} has no field {sorted(unknown)[0]!r}")
        self.values: dict[str, Any] = {
            name: given.get(name, f.initial) for name, f in self.fields.items()
        }
        """Each field's value (after :meth:`parse`, the parsed values of the good fields)."""
        self.text: dict[str, str] = {
            name: f.as_text(self.values[name]) for name, f in self.fields.items()
        }
        """What each field shows: the text as typed after :meth:`parse`."""
        self.errors: dict[str, forms.FormError] = {}
        """The bad fields: name → :class:`~pyweb.forms.FormError` (empty: all good)."""

    @classmethod
    def parse(cls, form: forms.FormSource | None = None) -> Any:
        """The form filled in from ``form`` (default: the request being served), with
        every field checked: :attr:`ok`, :attr:`values`, :attr:`errors`."""
        source = forms.resolve_form(form)
        made = cls()
        for name, f in cls.fields.items():
            text = forms.lookup(name, source)
            made.text[name] = "" if text is None else text
            try:
                made.values[name] = f.parse(source)
            except forms.FormError as exc:
                made.values[name] = None
                made.errors[name] = exc
        return made

    @property
    def ok(self) -> bool:
        """True when every field holds a good value."""
        return not self.errors

    def check(self) -> None:
        """Raise :class:`~pyweb.forms.FormErrors` listing the bad fields (in a page: the
        400 page listing them), when there are any."""
        if self.errors:
            raise forms.FormErrors(self.errors.values())

    def message(self, name: str) -> str | None:
        """The message shown beside field ``name``, or None when it is good."""
        error = self.errors.get(name)
        if error is None:
            return None
        if error.missing:
            return f"Required: {error.expected}."
        return f"Expected {error.expected}."

    # ---- rendering ------------------------------------------------------------------

    def render(self, action: str = "", *, method: str = "post", submit: str = "Send") -> Node:
        """The whole ``<form>``: each field in a paragraph with its label, box, message
        (``class="field-error"``) and help; a submit button. Every value is escaped."""
        return FORM(
            *(self.render_field(name) for name in self.fields),
            P(INPUT(type="submit", value=submit)),
            action=action or None,
            method=method,
        )

    def render_field(self, name: str) -> Node:
        """One field's paragraph (to lay a form out by hand: ``form.render_field("email")``)."""
        f = self.fields[name]
        message = self.message(name)
        box = self._box(f, message)
        if f.widget == "hidden":
            return box
        return P(
            LABEL(f.label, " ", box),
            message and SPAN(message, class_="field-error", id=f"{name}-error"),
            f.help and SPAN(f.help, class_="field-help"),
            class_="field has-error" if message else "field",
        )

    def _box(self, f: Field, message: str | None) -> Node:
        text = self.text[f.name]
        common: dict[str, Any] = {
            "name": f.name,
            "id": f.name,
            "aria_invalid": "true" if message else None,
            "aria_describedby": f"{f.name}-error" if message else None,
        }
        if f.widget == "textarea":
            # One kind of line end (a browser reads CR as LF, then drops a first LF: the
            # node guards a first LF only).
            return TEXTAREA(text.replace("\r\n", "\n").replace("\r", "\n"), **common)
        if f.widget == "select":
            return SELECT(
                *(OPTION(shown, value=value, selected=value == text) for value, shown in f.choices),
                **common,
            )
        if f.widget == "checkbox":
            checked = text.lower() in ("on", "true", "yes", "1")
            return INPUT(type="checkbox", checked=checked, **common)
        if f.widget == "number":
            # A text box with a number keyboard: a browser's number box would show nothing
            # for "abc", and the form shows what was typed beside the message about it.
            return INPUT(type="text", inputmode="numeric", value=text, **common)
        if f.widget == "password":
            text = ""  # a password is never written into a page, not even back to its typist
        length = f.options.get("max_length")
        return INPUT(type=f.widget, value=text, maxlength=length, **common)

    def __html__(self) -> str:
        """The form as HTML, so ``qq("{form}")`` and ``P(form)`` insert it."""
        return self.render().__html__()

    def __repr__(self) -> str:
        state = "ok" if self.ok else f"errors in {', '.join(self.errors)}"
        return f"<{type(self).__qualname__} {state}>"
