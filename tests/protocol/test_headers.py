"""pyweb.protocol.Headers: the one reading view of header fields."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyweb.protocol import Headers


def test_lookup_ignores_case_and_joins_repeats():
    h = Headers([("Accept", "a"), ("x-one", "1"), ("accept", "b"), ("Set-Cookie", "s=1")])
    assert h["ACCEPT"] == "a, b" and h.get("x-ONE") == "1"
    assert h.get_all("accept") == ["a", "b"] and h.get_all("nope") == []
    assert "Accept" in h and "nope" not in h and 3 not in h
    assert list(h) == ["accept", "x-one", "set-cookie"] and len(h) == 3
    with pytest.raises(KeyError):
        h["nope"]


@given(st.lists(st.tuples(st.sampled_from(["a", "A", "b", "C"]), st.text(max_size=3))))
def test_like_a_dict_of_joined_values(pairs):
    expected: dict[str, list[str]] = {}
    for name, value in pairs:
        expected.setdefault(name.lower(), []).append(value)
    h = Headers(pairs)
    assert dict(h) == {name: ", ".join(values) for name, values in expected.items()}
