"""Form data parsing: urlencoded (differential against urllib's encoder) and multipart
(differential against the standard library's MIME parser, the email package)."""

from __future__ import annotations

import email.parser
import email.policy
from urllib.parse import parse_qsl, urlencode

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyweb.app.formdata import (
    FormDataError,
    FormLimits,
    MultiDict,
    form_from,
    parse_content_type,
    parse_multipart,
    parse_urlencoded,
)

names = st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=20)
values = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)
pairs = st.lists(st.tuples(names, values), max_size=10)


@given(pairs)
def test_urlencoded_round_trip(fields):
    assert parse_urlencoded(urlencode(fields)) == fields


# Queries with nothing to decode (no % and no +), which parse_urlencoded splits itself:
# empty fields, fields without "=", several "=", repeated names, any other character.
plain_queries = st.text(st.sampled_from("ab=&;?/é\x00 .-_~!*'()"), max_size=30)


@given(plain_queries)
def test_urlencoded_without_escapes_is_what_parse_qsl_gives(query):
    expected = parse_qsl(query, keep_blank_values=True, encoding="utf-8", errors="strict")
    assert parse_urlencoded(query, FormLimits(max_fields=1000)) == expected


def test_urlencoded_without_escapes_by_hand():
    assert parse_urlencoded("n=50&guess=25") == [("n", "50"), ("guess", "25")]
    assert parse_urlencoded("a&&b=&c==d&a=2") == [("a", ""), ("b", ""), ("c", "=d"), ("a", "2")]


def encode_multipart(boundary: str, fields, files) -> bytes:
    out = []
    for name, value in fields:
        out.append(
            f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n'.encode()
            + value.encode()
            + b"\r\n"
        )
    for name, filename, data in files:
        out.append(
            f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"; filename="{filename}"\r\n'
            f"Content-Type: application/octet-stream\r\n\r\n".encode()
            + data
            + b"\r\n"
        )
    return b"".join(out) + f"--{boundary}--\r\n".encode()


# Names without quotes, backslashes or line breaks (browsers %-encode those in names).
safe_names = st.text(
    st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters='"\\'),
    min_size=1,
    max_size=15,
)
boundaries = st.text(st.sampled_from("abcXYZ0129'()+_,-./:=?"), min_size=1, max_size=70).filter(
    lambda b: not b.endswith(" ")
)


@given(
    boundaries,
    st.lists(st.tuples(safe_names, values), max_size=6),
    st.lists(st.tuples(safe_names, safe_names, st.binary(max_size=60)), max_size=3),
)
def test_multipart_agrees_with_the_email_package(boundary, fields, files):
    body = encode_multipart(boundary, fields, files)
    if any(
        f"--{boundary}".encode() in v.encode() or f"--{boundary}".encode() in d
        for _, v in fields
        for *_, d in files
    ):
        return  # a value containing the delimiter is not a valid encoding of that value
    got_fields, got_files = parse_multipart(body, boundary)
    assert got_fields == fields
    assert [(n, f.filename, f.data) for n, f in got_files] == files

    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        f'Content-Type: multipart/form-data; boundary="{boundary}"\r\n\r\n'.encode() + body
    )
    oracle = []
    for part in message.iter_parts():
        oracle.append(
            (part.get_param("name", header="content-disposition"), part.get_payload(decode=True))
        )
    ours = [(n, v.encode()) for n, v in fields] + [(n, d) for n, _, d in files]
    assert oracle == ours


def test_multipart_details():
    body = (
        b"preamble\r\n--B \t\r\n"
        b'Content-Disposition: form-data; name="f"; filename*=UTF-8\'\'%E2%82%AC.txt; filename="e.txt"\r\n\r\n'
        b"euro\r\n--B\r\n"
        b"Content-Disposition: form-data; name=latin\r\nContent-Type: text/plain; charset=latin-1\r\n\r\n"
        b"caf\xe9\r\n--B--\r\nepilogue"
    )
    fields, files = parse_multipart(body, "B")
    assert fields == [("latin", "café")]
    assert files[0][1].filename == "€.txt" and files[0][1].data == b"euro"


@pytest.mark.parametrize(
    "body, message",
    [
        (b"--B\r\nContent-Disposition: form-data; name=a\r\n\r\nno end", "closing boundary"),
        (b"--BX", "not followed by CRLF"),
        (b"--B\r\nno colon here\r\n\r\nx\r\n--B--", "malformed header line"),
        (b"--B\r\nContent-Disposition: attachment; name=a\r\n\r\nx\r\n--B--", "form-data"),
        (b"--B\r\nContent-Disposition: form-data; name=a\r\n\r\n\xff\r\n--B--", "not valid utf-8"),
    ],
)
def test_multipart_errors_name_the_problem(body, message):
    with pytest.raises(FormDataError, match=message):
        parse_multipart(body, "B")


def test_limits_and_encodings():
    with pytest.raises(FormDataError, match="too many form fields: 3"):
        parse_urlencoded("a=1&b=2&c=3", FormLimits(max_fields=2))
    with pytest.raises(FormDataError, match="must be ASCII"):
        form_from("", "é=1".encode(), "application/x-www-form-urlencoded")
    with pytest.raises(FormDataError, match="1 to 70"):
        parse_multipart(b"", "x" * 71)
    form, files = form_from("a=1", b"a=2", "application/x-www-form-urlencoded; charset=utf-8")
    assert form["a"] == "2" and form.getall("a") == ["1", "2"] and len(files) == 0
    # a body of another type is not form data: only the query counts
    form, _ = form_from("a=1", b'{"a": 2}', "application/json")
    assert form.getall("a") == ["1"]


def test_content_type_parameters():
    assert parse_content_type('Multipart/Form-Data; Boundary="a \\"b\\""; charset=utf-8') == (
        "multipart/form-data",
        {"boundary": 'a "b"', "charset": "utf-8"},
    )


def test_multidict():
    d = MultiDict([("a", "1"), ("b", "2"), ("a", "3")])
    assert d["a"] == "3" and d.getall("a") == ["1", "3"] and d.getall("zz") == []
    assert list(d) == ["a", "b"] and len(d) == 2 and "b" in d and d.get("c") is None
    assert d.multi_items() == [("a", "1"), ("b", "2"), ("a", "3")]
