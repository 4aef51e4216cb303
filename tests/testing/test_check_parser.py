"""check_parser: correct parsers pass; each buggy one fails with a message naming its bug.

The parsers are in student_parser.py: one readable whole-buffer parser, and the same parser
with one bug switched on. The messages are checked for the parts the contract promises:
the bytes, where they were cut, what pyweb parsed and what the parser said.
"""

from __future__ import annotations

import pytest

from pyweb.testing import http
from pyweb.testing.http import check_parser, parse_with_h11, parse_with_pyweb

from .student_parser import parse

pytestmark = pytest.mark.timeout(300)


@pytest.mark.parametrize(
    "correct", [parse, parse_with_pyweb, parse_with_h11], ids=["student", "pyweb", "h11"]
)
def test_a_correct_parser_passes(correct):
    check_parser(correct, max_examples=150)


def test_h11_itself_passes_by_default_and_fails_only_on_pyweb_choices():
    # Before: check_parser held every parser to pyweb's stricter choices, so h11 itself
    # failed (it takes Content-Length with Transfer-Encoding, which RFC 9112 §6.1 allows).
    def raw_h11(pieces):
        done, error, _ = http.run_h11(pieces)
        if error is not None:
            raise error
        return [r.as_tuple() for r in done]

    check_parser(raw_h11, max_examples=150)
    with pytest.raises(AssertionError) as caught:
        check_parser(raw_h11, max_examples=300, strict=True)
    message = str(caught.value)
    assert "This rule is pyweb's choice, held because strict=True" in message
    assert any(rule in message for rule in http.RFC_ALLOWS)


def test_the_rules_are_split_between_the_rfc_and_pyweb():
    assert set(http.RFC_REQUIRED) | set(http.RFC_ALLOWS) == set(http.RULES)
    assert not set(http.RFC_REQUIRED) & set(http.RFC_ALLOWS)
    assert http.RULES[0] in http.RFC_ALLOWS  # Content-Length with Transfer-Encoding


def failure(bug: str, strict: bool = True) -> str:
    with pytest.raises(AssertionError) as caught:
        check_parser(lambda pieces: parse(pieces, bug), max_examples=150, strict=strict)
    message = str(caught.value)
    assert message.startswith("check_parser: your parser ")
    assert "The bytes (" in message and "arrived " in message
    assert "your parser said" in message
    return message


def test_ignoring_chunked_bodies_is_found():
    message = failure("ignores-chunked")
    assert "transfer-encoding:" in message.lower() and "chunked" in message
    assert "pyweb parsed:" in message


def test_folding_the_case_of_values_with_names_is_found():
    message = failure("lowercases-fields")
    assert "header" in message and "names are compared case-insensitively" in message


def test_looking_up_framing_fields_case_sensitively_is_found():
    message = failure("case-sensitive-names")
    assert "the body should be" in message or "should not be there" in message or (
        "raised" in message
    )
    lines = message.lower()
    assert "content-length:" in lines or "transfer-encoding:" in lines


def test_accepting_content_length_with_transfer_encoding_is_found():
    message = failure("accepts-length-with-chunked")
    assert "accepts an invalid request" in message
    assert http.RULES[0] in message  # RFC 9112 §6.1
    assert "pyweb's choice" in message and "Transfer-Encoding alone" in message
    assert "pyweb rejects them: BadRequest" in message and "h11 accepts them" in message


def test_losing_a_request_split_across_pieces_is_found():
    message = failure("loses-split-requests")
    assert "arrived cut into " in message  # never "in one piece": whole, it parses fine


def test_splitting_a_field_on_every_colon_is_found():
    message = failure("splits-on-every-colon")
    assert "header" in message and ":" in message.split("should be", 1)[1].split(")")[0]


def test_reading_past_connection_close_is_found():
    message = failure("ignores-connection-close")
    assert "should not be there" in message
    assert "close" in message.lower() or "HTTP/1.0" in message


def test_a_result_of_the_wrong_shape_is_explained():
    with pytest.raises(AssertionError, match="the body should be bytes, got str"):
        check_parser(
            lambda pieces: [(m, t, h, b.decode("latin-1")) for m, t, h, b in parse(pieces)],
            max_examples=20,
        )
    with pytest.raises(AssertionError, match="should return a list"):
        check_parser(lambda pieces: None, max_examples=20)


def test_the_strategies_shrink_to_readable_examples():
    # A parser that loses everything: the counterexample is one small request, one piece.
    with pytest.raises(AssertionError) as caught:
        check_parser(lambda pieces: [], max_examples=50)
    message = str(caught.value)
    assert "arrived in one piece" in message and "request 1 is missing" in message
    assert len(message) < 600, message


def test_split_and_cut():
    assert http.cut(b"abcdef", [4, 2, 2, 0, 99]) == [b"ab", b"cd", b"ef"]
    from hypothesis import given
    from hypothesis import strategies as st

    @given(st.sampled_from([b"", b"x"]).flatmap(lambda d: st.tuples(st.just(d), http.split(d))))
    def tiny(case):
        data, pieces = case
        assert pieces == ([data] if data else [])

    tiny()

    @given(http.split(b"GET / HTTP/1.1\r\n\r\n"))
    def pieces_rejoin(pieces):
        assert b"".join(pieces) == b"GET / HTTP/1.1\r\n\r\n" and all(pieces)

    pieces_rejoin()


def test_invalid_requests_rules_are_checked():
    from hypothesis import given

    @given(http.invalid_requests(rules=["no such rule"]))
    def never(_):
        raise AssertionError("not reached")

    with pytest.raises(ValueError, match="RULES"):
        never()
