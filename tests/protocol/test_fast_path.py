"""The parser's fast path against its careful path (hypothesis).

The fast path (``_fastpath.known_lines``) takes a field line from a cache of lines that
the careful path (``parser._parse_fields``) has proven valid before. These tests parse the same
bytes with empty caches (every line goes the careful way) and with caches warmed by
other requests, by the same request, and by its mutations, and require the same
outcome: the same events, or the same error (class, status, message, offending bytes).
So the fast path accepts exactly what the careful path accepts, and says the same.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyweb.protocol import NEED_DATA, ConnectionClosed, Limits, ProtocolError, RequestParser
from pyweb.protocol import _fastpath as F
from pyweb.protocol import parser as P
from pyweb.testing import http

from .helpers import DEFAULT_LIMITS
from .test_oracle import SMALL, mutations, pipelines

pytestmark = pytest.mark.timeout(
    3600 if os.environ.get("HYPOTHESIS_PROFILE") == "fuzz" else 120
)


def outcome(data: bytes, limits: Limits = DEFAULT_LIMITS) -> tuple:
    """Every event the parser makes of ``data`` (fed at once, then EOF), and its error."""
    p = RequestParser(limits)
    p.feed(data)
    p.feed(b"")
    events: list = []
    try:
        for _ in range(1000):
            ev = p.next_event()
            if ev is NEED_DATA:
                break
            events.append(ev)
            if isinstance(ev, ConnectionClosed):
                break
    except ProtocolError as err:
        return events, (type(err), err.status, err.message, err.offending)
    return events, None


@contextmanager
def cold_caches() -> Iterator[None]:
    """Empty line caches for the block (the careful path for every line), then restored."""
    saved = [dict(c.entries) for c in (F.PLAIN_LINES, F.SPECIAL_LINES)]
    try:
        for c in (F.PLAIN_LINES, F.SPECIAL_LINES):
            c.entries.clear()
        yield
    finally:
        for c, entries in zip((F.PLAIN_LINES, F.SPECIAL_LINES), saved, strict=True):
            c.entries.clear()
            c.entries.update(entries)


def careful(data: bytes, limits: Limits = DEFAULT_LIMITS) -> tuple:
    with cold_caches():
        return outcome(data, limits)


def assert_same(data: bytes, warm: list[bytes], limits: Limits = DEFAULT_LIMITS) -> None:
    expected = careful(data, limits)
    with cold_caches():
        for other in warm:  # the caches learn these requests' lines
            outcome(other, limits)
        outcome(data, limits)  # and this one's (as far as it is valid)
        assert outcome(data, limits) == expected


PIPELINES = settings(max_examples=settings.default.max_examples // 2)
"""Half the profile's examples for the tests whose example is a whole pipeline of requests
(and more to warm the caches): 75 in make test, thousands in make fuzz, which runs
tests/protocol with HYPOTHESIS_PROFILE=fuzz."""


@PIPELINES
@given(pipelines(), st.lists(pipelines(), max_size=3))
def test_valid_requests_same_outcome_from_the_caches(data: bytes, warm: list[bytes]) -> None:
    assert_same(data, warm)


@PIPELINES
@given(mutations(), st.lists(pipelines() | mutations(), max_size=3))
def test_mutated_requests_same_outcome_from_the_caches(data: bytes, warm: list[bytes]) -> None:
    assert_same(data, warm)


@given(mutations(), st.lists(mutations(), max_size=2))
def test_same_outcome_under_small_limits(data: bytes, warm: list[bytes]) -> None:
    assert_same(data, warm, SMALL)


@PIPELINES
@given(http.invalid_requests(), st.lists(pipelines(), max_size=2))
def test_invalid_requests_same_error_from_the_caches(invalid, warm: list[bytes]) -> None:
    assert_same(bytes(invalid.wire), warm)


H = b"Host: example.org\r\n"


@pytest.mark.parametrize(
    "head",
    [
        b"GET / HTTP/1.1\r\n" + H + H,  # Host twice, both lines cached
        b"GET / HTTP/1.1\r\n" + H + b"Host: other.org\r\n",
        b"GET / HTTP/1.1\r\nAccept: */*\r\n",  # no Host
        b"GET / HTTP/1.0\r\nAccept: */*\r\n",  # no Host in 1.0: fine
        b"GET / HTTP/1.1\r\n" + H + b"Content-Length: 3\r\nContent-Length: 4\r\n",
        b"GET / HTTP/1.1\r\n" + H + b"Content-Length: 3\r\nTransfer-Encoding: chunked\r\n",
        b"GET / HTTP/1.1\r\n" + H + b"Accept: */*\r\nAccept: */*\r\n",
        b"GET / HTTP/1.1\r\n" + H + b"Accept: */*\r\nAccept : */*\r\n",
        b"GET / HTTP/1.1\r\n" + H + b"Accept: */*\r\n Accept: */*\r\n",
        b"GET / HTTP/1.1\r\n" + H + b"Accept: */*\r\nX: a\x01b\r\n",
        b"GET / HTTP/1.1\r\n" + H + b"Accept: */*\rX: y\r\n",
        b"GET / HTTP/1.1\r\n" + H + b"Accept: */*\nX: y\r\n",
        b"GET / HTTP/1.1\r\nHost: bad host\r\n",
        b"GET / HTTP/1.1\r\nHost: bad host\r\n",  # a second time: not learnt as valid
    ],
)
def test_unusual_heads_same_outcome_from_the_caches(head: bytes) -> None:
    data = head + b"\r\n"
    warm = [b"GET / HTTP/1.1\r\n" + H + b"Accept: */*\r\nContent-Length: 3\r\n\r\nabc"]
    assert_same(data, warm)
    assert_same(data, [data])


def test_only_valid_lines_are_remembered(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(P, "C_HEAD", None)  # the lines the Python path learns
    with cold_caches():
        outcome(b"GET / HTTP/1.1\r\nHost: bad host\r\nAccept: */*\r\n\r\n")
        outcome(b"GET / HTTP/1.1\r\nHost: a.org\r\nX: a\x01b\r\n\r\n")
        # A well-formed field line with a bad Host value is remembered as a field line;
        # the Host value is checked on every request (_read_fields), cached or not.
        with pytest.raises(ProtocolError, match="invalid Host"):
            P._read_fields([F.SPECIAL_LINES.entries["Host: bad host"]], "1.1")
        assert "X: a\x01b" not in F.PLAIN_LINES.entries
        outcome(b"GET / HTTP/1.1\r\nHost: a.org\r\nAccept: */*\r\n\r\n")
        assert F.PLAIN_LINES.entries["Accept: */*"] == ("accept", "*/*")
        assert F.SPECIAL_LINES.entries["Host: a.org"] == ("host", "a.org")


def test_line_cache_is_bounded() -> None:
    cache = F.LineCache("test", 4)
    for i in range(10):
        cache.add(f"X-{i}: y", (f"x-{i}", "y"))
        assert len(cache.entries) <= 4
    cache.add("X: " + "y" * cache.MAX_LINE, ("x", "y" * cache.MAX_LINE))
    assert "X: " + "y" * cache.MAX_LINE not in cache.entries
