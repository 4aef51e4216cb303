"""Cache types: validation, encoding round trips, canonical encodings, decode errors."""

from __future__ import annotations

import math

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from pyweb.cache import Bool, Bytes, Int, List, Option, Pair, Real, String, Triple
from pyweb.cache.types import DecodeError


def values_of(t):
    """A hypothesis strategy for the values of cache type ``t``."""
    name = t.name
    if name == "Int":
        return st.integers()
    if name == "Real":
        return st.floats(allow_nan=False)
    if name == "String":
        return st.text()
    if name == "Bool":
        return st.booleans()
    if name == "Bytes":
        return st.binary()
    if name.startswith(("Pair", "Triple")):
        return st.tuples(*(values_of(p) for p in t.parts))
    if name.startswith("Option"):
        return st.none() | values_of(t.inner)
    if name.startswith("List"):
        return st.lists(values_of(t.inner), max_size=5)
    raise AssertionError(name)


base = st.sampled_from([Int, Real, String, Bool, Bytes])
types = st.recursive(
    base,
    lambda inner: st.one_of(
        st.builds(Pair, inner, inner),
        st.builds(Triple, inner, inner, inner),
        st.builds(Option, inner),
        st.builds(List, inner),
    ),
    max_leaves=6,
)


@given(st.data())
def test_every_value_round_trips(data):
    t = data.draw(types)
    value = data.draw(values_of(t))
    assert t.check(value)
    encoded = t.encode(value)
    assert isinstance(encoded, bytes)
    assert t.decode(encoded) == value


def test_the_encoding_is_canonical():
    """Equal values have equal encodings, different values different ones (keys rely on it)."""
    taken = {"equal encodings": 0, "equal reprs": 0}

    @given(st.data())
    def canonical(data):
        t = data.draw(types)
        a = data.draw(values_of(t))
        # Half the time b is a itself, so that both branches below are taken (two
        # independent draws are rarely equal for a composite type).
        b = data.draw(st.one_of(st.just(a), values_of(t)))
        if t.encode(a) == t.encode(b):
            event("equal encodings")
            taken["equal encodings"] += 1
            assert a == b
        if repr(a) == repr(b):  # not just ==: -0.0 == 0.0, yet they are different floats
            event("equal reprs")
            taken["equal reprs"] += 1
            assert t.encode(a) == t.encode(b)

    canonical()
    # The asserts above sit under `if`s: the property proves something only if both
    # branches were taken.
    assert taken["equal encodings"] > 0 and taken["equal reprs"] > 0, taken


def test_none_and_empty_are_different_options():
    t = Option(String)
    assert t.encode(None) != t.encode("")
    assert t.decode(t.encode("")) == ""
    assert t.decode(t.encode(None)) is None


@pytest.mark.parametrize(
    "t, value",
    [
        (Int, True),
        (Int, 1.0),
        (Int, "1"),
        (Real, 1),
        (Real, "1.0"),
        (String, b"x"),
        (String, "\ud800"),  # a lone surrogate is not UTF-8
        (Bool, 1),
        (Bytes, "x"),
        (Pair(Int, Int), [1, 2]),
        (Pair(Int, Int), (1, 2, 3)),
        (Option(Int), "x"),
        (List(Int), (1, 2)),
        (List(Int), [1, "2"]),
    ],
)
def test_wrong_values_are_refused(t, value):
    assert not t.check(value)


@pytest.mark.parametrize(
    "t, data",
    [
        (Int, b"x"),
        (Real, b"one"),
        (Bool, b"2"),
        (Option(Int), b"Q1"),
        (Pair(Int, Int), b"1:1"),
        (List(Int), b"5:1"),
        (String, b"\xff"),
    ],
)
def test_bad_encodings_raise_decode_error(t, data):
    with pytest.raises(DecodeError):
        t.decode(data)


def test_names_spell_the_type():
    assert Pair(Int, List(Real)).name == "Pair(Int, List(Real))"
    assert Option(Triple(Int, String, Bool)).name == "Option(Triple(Int, String, Bool))"
    assert Pair(Int, Int) == Pair(Int, Int)


def test_constructors_take_types():
    with pytest.raises(TypeError, match="cache types"):
        Pair(int, Int)
    with pytest.raises(TypeError, match="Option takes a cache type"):
        Option(str)


def test_special_floats():
    for x in (math.inf, -math.inf, -0.0, 5e-324):
        assert Real.decode(Real.encode(x)) == x
    assert math.isnan(Real.decode(Real.encode(math.nan)))
