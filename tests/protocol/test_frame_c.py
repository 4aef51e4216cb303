"""The C framer (``pyweb_regions._frame``) against the Python one (hypothesis).

``frame_response`` hands the everyday reply to the C fast path, which frames it from the
Python framer's caches, or declines. These tests frame the same reply with the C framer on
and off and require the same outcome: the same head bytes (with a joined body), the same
``chunked``/``send_body``/``keep_alive``, or the same exception (class and message). Each
reply is framed by C first (a field not yet cached: C declines, the Python code checks and
caches it), then by Python alone, then by C again (now from the cache). The C module
itself is also tested directly: it declines what it has not been shown.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

import pyweb_regions
from pyweb.protocol import Request, RequestParser
from pyweb.protocol import response as R

pytestmark = pytest.mark.timeout(
    3600 if os.environ.get("HYPOTHESIS_PROFILE") == "fuzz" else 120
)

C = pyweb_regions.extension("_frame")


@pytest.fixture(autouse=True)
def c_framer() -> Iterator[None]:
    """These tests need the C framer; they switch it on and off, then leave it as it was."""
    before = R.use_c_framer(None)
    if not R.use_c_framer(True):
        pytest.skip("pyweb_regions._frame is not built (or PYWEB_REGIONS=python)")
    yield
    R.use_c_framer(before)


def request(method: str = "GET", version: str = "1.1", keep_alive: bool = True) -> Request:
    p = RequestParser()
    connection = b"Connection: keep-alive\r\n" if keep_alive else b"Connection: close\r\n"
    p.feed(f"{method} /x HTTP/{version}\r\nHost: t\r\n".encode() + connection + b"\r\n")
    req = p.next_event()
    assert isinstance(req, Request)
    return req


def outcome(c: bool, *args: object, **kwargs: object) -> tuple[object, ...]:
    """What frame_response gives with the C framer on or off: the head as a plain tuple,
    or the exception's class and message."""
    R.use_c_framer(c)
    try:
        return tuple(R.frame_response(*args, **kwargs))  # type: ignore[arg-type]
    except Exception as exc:  # noqa: BLE001 - the point is to compare any of them
        return (type(exc), str(exc))


def same_second(run, *args, **kwargs):  # type: ignore[no-untyped-def]
    """``run(*args, **kwargs)``, again while the clock's second changed under it (the Date
    line)."""
    while True:
        second = int(time.time())
        result = run(*args, **kwargs)
        if int(time.time()) == second:
            return result


def c_and_python(*args: object, keep_alive: bool, join: bytes | None) -> tuple[object, object]:
    """The C module's head (or None) and frame_response's outcome without C."""
    assert C is not None
    return C.frame(*args, keep_alive, join), outcome(
        False, *args, keep_alive=keep_alive, join=join
    )


NAMES = [
    "Content-Type", "content-type", "X-Frame-Options", "Set-Cookie", "ETag", "Date", "date",
    "Server", "SERVER", "Content-Length", "content-length", "Transfer-Encoding",
    "Connection", "CONNECTION", "Cache-Control", "x",
]  # fmt: skip
VALUES = ["text/html; charset=utf-8", "nosniff", "0", "close", "chunked", "mine", "", "a b"]

names = st.sampled_from(NAMES) | st.text(
    alphabet=st.characters(min_codepoint=0, max_codepoint=0x17F), max_size=8
)
values = st.sampled_from(VALUES) | st.text(
    alphabet=st.characters(min_codepoint=0, max_codepoint=0x17F), max_size=12
)
everyday = st.tuples(st.sampled_from(NAMES), st.sampled_from(VALUES))
odd = st.tuples(names, values)
# Mostly fields the C framer will take (once cached), some that it must leave to Python.
fields = st.one_of(everyday, everyday, everyday, odd, odd.map(list))
statuses = st.one_of(
    st.sampled_from([100, 101, 103, 200, 201, 204, 206, 301, 304, 404, 500]),
    st.sampled_from([200, 204, 304]),
    st.sampled_from([42, 99, 299, 599, 999, 1000, -1]),
    st.integers(100, 999),
)
requests = st.none() | st.builds(
    request,
    method=st.sampled_from(["GET", "HEAD", "POST", "head"]),
    version=st.sampled_from(["1.1", "1.0"]),
    keep_alive=st.booleans(),
)


@st.composite
def replies(draw: st.DrawFn) -> tuple[tuple[object, ...], dict[str, object]]:
    """The arguments of one frame_response call."""
    length = draw(st.none() | st.integers(0, 70_000))
    join = None
    if length is not None and length < 100 and draw(st.booleans()):
        join = b"b" * length
    headers = draw(st.lists(fields, max_size=6))
    args = (draw(requests), draw(statuses), headers, length)
    return args, {"keep_alive": draw(st.booleans()), "join": join}


@given(replies())
def test_c_and_python_frame_alike(reply: tuple[tuple[object, ...], dict[str, object]]) -> None:
    args, kwargs = reply

    def three() -> tuple[tuple[object, ...], ...]:
        return outcome(True, *args, **kwargs), outcome(False, *args, **kwargs), outcome(
            True, *args, **kwargs
        )

    first_c, python, cached_c = same_second(three)
    assert first_c == python
    assert cached_c == python


@given(replies())
def test_the_header_list_as_a_tuple_is_framed_alike(
    reply: tuple[tuple[object, ...], dict[str, object]],
) -> None:
    (req, status, headers, length), kwargs = reply
    args = (req, status, tuple(headers), length)
    python = same_second(lambda: (outcome(True, *args, **kwargs), outcome(False, *args, **kwargs)))
    assert python[0] == python[1]


EVERYDAY = [
    ("Content-Type", "text/html; charset=utf-8"),
    ("X-Content-Type-Options", "nosniff"),
    ("X-Frame-Options", "SAMEORIGIN"),
    ("Referrer-Policy", "same-origin"),
]


def test_c_frames_the_everyday_reply_once_its_fields_are_cached() -> None:
    """The point of the fast path: after one reply through Python, C takes the next."""
    assert C is not None
    req = request()
    headers = [(name, value + " ") for name, value in EVERYDAY]  # new tuples, never seen
    assert C.frame(req, 200, headers, 428, True, None) is None  # not checked yet
    python = R.frame_response(req, 200, headers, 428)  # checks and caches them
    head = same_second(lambda: (C.frame(req, 200, headers, 428, True, None), R.frame_response(
        req, 200, headers, 428)))
    assert head[0] is not None and head[0] == head[1]
    assert type(head[0]) is R.ResponseHead
    assert python.data.startswith(b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8 \r\n")
    # HEAD, 1.0 keep-alive, close, a joined body: all from the same cache
    for req, keep_alive in ((request("HEAD"), True), (request(version="1.0"), True),
                            (request(keep_alive=False), True), (request(), False)):
        R.frame_response(req, 200, headers, 3, keep_alive=keep_alive, join=b"abc")
        got = same_second(c_and_python, req, 200, headers, 3, keep_alive=keep_alive, join=b"abc")
        assert got[0] is not None and tuple(got[0]) == got[1]


GRID_REQUESTS = [
    None, request(), request(keep_alive=False), request("HEAD"), request(version="1.0"),
    request(version="1.0", keep_alive=False), request("HEAD", "1.0"),
]  # fmt: skip


@pytest.mark.parametrize("status", [100, 101, 200, 204, 206, 299, 304, 404])
@pytest.mark.parametrize("req", GRID_REQUESTS)
def test_c_takes_every_status_request_and_length(status: int, req: Request | None) -> None:
    """Every combination of a known status, a request (none, HEAD, 1.0, 1.1, keep-alive or
    not), the server's wish, a length or a stream, a joined body: C frames all of them
    but the streamed body, as Python does."""
    assert C is not None
    headers = [("Content-Type", "text/plain"), ("Connection", "keep-alive"), ("Server", "s")]
    for keep_alive in (True, False):
        for length in (None, 0, 5):
            join = b"12345" if length == 5 else None
            args = (req, status, headers, length)
            R.frame_response(*args, keep_alive=keep_alive, join=join)  # caches what it needs
            c, python = same_second(c_and_python, *args, keep_alive=keep_alive, join=join)
            streamed = length is None and status >= 200 and status not in (204, 304)
            assert (c is None) == streamed, (args, keep_alive)
            if c is not None:
                assert tuple(c) == python, (args, keep_alive)


def test_c_declines_what_it_is_not_sure_of() -> None:
    assert C is not None
    req = request()
    R.frame_response(req, 200, EVERYDAY, 5)
    R.frame_response(req, 200, EVERYDAY, None)
    assert C.frame(req, 200, list(EVERYDAY), 5, True, None) is not None
    # (not a fixed number: the random tests of this module may have framed any status)
    unframed = next(s for s in range(999, 99, -1) if s not in R._status_lines)
    uncached = next(n for n in range(123_456_789, 10**10) if n not in R._length_lines)
    declined = [
        (req, 200, [list(f) for f in EVERYDAY], 5, True, None),  # lists, not tuples
        (req, 200, tuple(EVERYDAY), 5, True, None),  # not a list
        (req, 200, [("X-New", "never seen")], 5, True, None),  # not cached yet
        (req, 200, list(EVERYDAY), None, True, None),  # a streamed body
        (req, 200, list(EVERYDAY), uncached, True, None),  # a length not cached yet
        (req, unframed, list(EVERYDAY), 5, True, None),  # a status never framed
        (req, 200.0, list(EVERYDAY), 5, True, None),  # not an int
        (req, 200, list(EVERYDAY), 5, 1, None),  # not a bool
        (req, 200, list(EVERYDAY), 5, True, bytearray(5)),  # join: not bytes
        (object(), 200, list(EVERYDAY), 5, True, None),  # not a request
        (req, 200, [("X-A", "1")] * 60, 5, True, None),  # more fields than it takes
    ]
    R.frame_response(req, 200, [("X-A", "1")], 5)
    for args in declined:
        assert C.frame(*args) is None, args


def test_a_request_that_is_not_a_request_is_read_with_getattr() -> None:
    """Another type with the same attributes (a parser's own request type) works too."""
    assert C is not None

    class Other:
        method = "HEAD"
        http_version = "1.0"
        keep_alive = True

    R.frame_response(request(), 200, EVERYDAY, 5)
    got = same_second(lambda: (C.frame(Other(), 200, list(EVERYDAY), 5, True, b"12345"),
                               outcome(False, Other(), 200, EVERYDAY, 5, join=b"12345")))
    assert got[0] is not None and tuple(got[0]) == got[1]
    assert got[0].data.endswith(b"Connection: keep-alive\r\n\r\n")  # HEAD: nothing joined
