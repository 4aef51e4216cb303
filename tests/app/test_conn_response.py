"""``conn.return_`` makes the usual answer's :class:`Response` field by field, without the
dataclass's ``__init__`` (docs/performance.md): it must stay the same object ``Response(...)``
makes, whatever fields ``Response`` has."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import pytest

from pyweb.app.conn import Conn
from pyweb.app.formdata import MultiDict
from pyweb.protocol.parser import RequestParser
from pyweb.protocol.response import Response


def _conn() -> Conn:
    parser = RequestParser()
    parser.feed(b"GET /hello HTTP/1.1\r\nHost: test\r\n\r\n")
    ctx = SimpleNamespace(request=parser.next_event(), peer="127.0.0.1:1", dev=False)
    return Conn(ctx, MultiDict(), MultiDict(), "hello.py")  # type: ignore[arg-type]


def test_return_sets_every_field_of_a_response():
    """If Response gains a field, return_ must set it too: this names the fields it sets."""
    assert [f.name for f in dataclasses.fields(Response)] == ["status", "headers", "body"]


@pytest.mark.parametrize(
    ("body", "status", "content_type", "expected"),
    [
        (b"Hello, world!", 200, "text/plain", Response(200, [("Content-Type", "text/plain")], b"Hello, world!")),
        ("<p>é</p>", 201, None, Response(201, [("Content-Type", "text/html; charset=utf-8")], "<p>é</p>".encode())),
        ("", 200, None, Response(200, [("Content-Type", "text/html; charset=utf-8")], b"")),
    ],
)  # fmt: skip
def test_the_usual_answer_is_the_response_the_dataclass_makes(body, status, content_type, expected):
    conn = _conn()
    conn.return_(body, status=status, content_type=content_type)
    response = conn.response
    assert type(response) is Response
    assert response == expected
    assert repr(response) == repr(expected)
    assert conn.own_response is response  # the site adds its headers in place
    other = _conn()
    other.return_(body, status=status, content_type=content_type)
    assert other.response.headers is not response.headers  # a list of its own per request
