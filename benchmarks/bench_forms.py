"""Micro-benchmark: a form declared once (``pyweb.forms.Form``) against the same form
written by hand (``wrap_fail`` getters and a quotation), in the same run.

The form is the example site's booking form (name, e-mail, arrival date, nights from 1 to
30). Three groups, each timing both ways:

* ``parse-good``: read and check a good submission;
* ``parse-bad``: read a submission with three bad fields, keeping every error;
* ``render-again``: the form shown again after a bad submission, with what was typed and
  each message beside its field (the hand-written page writes the same paragraphs).

Before timing, both ways are checked to agree (the same values, the same fields in error,
the same inputs and messages in the HTML). Run with

    .venv/bin/python -m pytest benchmarks/bench_forms.py --benchmark-only \\
        --benchmark-columns=min,median,ops -p no:timeout -p no:cacheprovider
"""

from __future__ import annotations

import datetime
import html
import re

import pytest

from pyweb import forms
from pyweb.forms import (
    Date,
    Email,
    Form,
    Nat,
    field,
    get_date,
    get_email,
    get_nat,
    get_string,
    wrap_fail,
)
from pyweb.quot import qq


class Booking(Form):
    name: str = field("Name", max_length=100)
    email: Email = field("E-mail")
    arrival: Date = field("Arrival")
    nights: Nat = field("Nights", min=1, max=30)


GOOD = {"name": "Ada", "email": "ada@example.org", "arrival": "2030-01-31", "nights": "3"}
BAD = {"name": "Ada", "email": "ada-at-home", "arrival": "31/01/2030", "nights": "31"}


def by_hand_parse(sent: dict[str, str]) -> tuple[dict[str, object], dict[str, forms.FormError]]:
    with forms.collect() as found, forms.use_form(sent):
        values = {
            "name": wrap_fail(get_string)("name", max_length=100),
            "email": wrap_fail(get_email)("email"),
            "arrival": wrap_fail(get_date)("arrival"),
            "nights": wrap_fail(get_nat)("nights", min=1, max=30),
        }
    return values, {e.name: e for e in found}


_LABELS = {"name": "Name", "email": "E-mail", "arrival": "Arrival", "nights": "Nights"}
_TYPES = {"name": "text", "email": "email", "arrival": "date", "nights": "text"}


def by_hand_render(sent: dict[str, str], errors: dict[str, forms.FormError]) -> str:
    rows = []
    for name, label in _LABELS.items():
        error = errors.get(name)
        message = (
            qq('<span class="field-error">Expected {expected}.</span>', expected=error.expected)
            if error
            else ""
        )
        rows.append(
            qq(
                '<p><label>{label} <input type="{kind}" value="{value}" name="{name}">'
                "</label>{message}</p>",
                label=label,
                kind=_TYPES[name],
                value=sent.get(name, ""),
                name=name,
                message=message,
            )
        )
    return qq('<form action="/booking" method="post">{rows}</form>', rows=qq("").join(rows)).to_html()


def _inputs(markup: str) -> list[tuple[str, str]]:
    found = re.findall(r'<input [^>]*?value="([^"]*)"[^>]*?name="([^"]*)"', markup)
    return sorted((name, html.unescape(value)) for value, name in found)


def test_both_ways_agree():
    values, errors = by_hand_parse(GOOD)
    declared = Booking.parse(GOOD)
    assert declared.ok and not errors and declared.values == values
    assert declared.arrival == datetime.date(2030, 1, 31)
    values, errors = by_hand_parse(BAD)
    declared = Booking.parse(BAD)
    assert set(declared.errors) == set(errors) == {"email", "arrival", "nights"}
    again = declared.render(action="/booking").__html__()
    hand = by_hand_render(BAD, errors)
    assert _inputs(again) == _inputs(hand) == sorted(BAD.items())
    for error in errors.values():
        assert again.count(html.escape(error.expected, quote=False)) == 1
        assert hand.count(html.escape(error.expected, quote=False)) == 1


@pytest.mark.benchmark(group="parse-good")
def test_parse_good_declared(benchmark):
    assert benchmark(Booking.parse, GOOD).ok


@pytest.mark.benchmark(group="parse-good")
def test_parse_good_by_hand(benchmark):
    assert not benchmark(by_hand_parse, GOOD)[1]


@pytest.mark.benchmark(group="parse-bad")
def test_parse_bad_declared(benchmark):
    assert len(benchmark(Booking.parse, BAD).errors) == 3


@pytest.mark.benchmark(group="parse-bad")
def test_parse_bad_by_hand(benchmark):
    assert len(benchmark(by_hand_parse, BAD)[1]) == 3


@pytest.mark.benchmark(group="render-again")
def test_render_again_declared(benchmark):
    parsed = Booking.parse(BAD)
    assert "field-error" in benchmark(lambda: parsed.render(action="/booking").__html__())


@pytest.mark.benchmark(group="render-again")
def test_render_again_by_hand(benchmark):
    errors = by_hand_parse(BAD)[1]
    assert "field-error" in benchmark(by_hand_render, BAD, errors)
