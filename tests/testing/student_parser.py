"""A request parser as a student might write it for check_parser: whole-buffer, readable,
correct; and the same parser with one bug each, switched on by name.

``parse(pieces, bug=None)`` joins the pieces (a correct parser may: the bytes of one
connection are one stream) unless the bug is ``"loses-split-requests"``.
"""

from __future__ import annotations

import re

TOKEN = re.compile(r"[-!#$%&'*+.^_`|~0-9A-Za-z]+")
VERSION = re.compile(r"HTTP/[0-9]\.[0-9]")
FIELD_VALUE = re.compile(r"[^\x00\r\n]*")
HOST = re.compile(r"[^\s/?#@]*")


class Incomplete(Exception):
    """The bytes stop in the middle of a request: wait for more."""


def parse(pieces: list[bytes], bug: str | None = None) -> list[tuple]:
    if bug == "loses-split-requests":
        # Parses each piece on its own: a request cut in two is lost.
        found: list[tuple] = []
        for piece in pieces:
            found += _parse_stream(piece, bug)
        return found
    return _parse_stream(b"".join(pieces), bug)


def _parse_stream(data: bytes, bug: str | None) -> list[tuple]:
    found = []
    while data:
        try:
            request, data, ends = _one_request(data, bug)
        except Incomplete:
            break
        found.append(request)
        if ends and bug != "ignores-connection-close":
            break
    return found


def _one_request(data: bytes, bug: str | None) -> tuple[tuple, bytes, bool]:
    head, sep, rest = data.partition(b"\r\n\r\n")
    if not sep:
        raise Incomplete
    line, *field_lines = head.decode("latin-1").split("\r\n")
    method, target, version = _request_line(line)
    headers = [_field(f, bug) for f in field_lines]
    names = [n.lower() for n, _ in headers]
    values = {n.lower(): v for n, v in headers}
    if version == "HTTP/1.1" and names.count("host") != 1 or names.count("host") > 1:
        raise ValueError("exactly one Host field is needed")
    if "host" in values and not HOST.fullmatch(values["host"]):
        raise ValueError("bad Host")
    body, rest = _body(headers, version, rest, bug)
    connection = [t.strip().lower() for t in values.get("connection", "").split(",")]
    ends = "close" in connection or (version == "HTTP/1.0" and "keep-alive" not in connection)
    return (method, target, headers, body), rest, ends


def _request_line(line: str) -> tuple[str, str, str]:
    method, target, version = line.split(" ")
    if not TOKEN.fullmatch(method) or not VERSION.fullmatch(version):
        raise ValueError(f"bad request line {line!r}")
    if not (target.startswith("/") or (target == "*" and method == "OPTIONS")
            or re.fullmatch(r"https?://[^/?#@]+([/?].*)?", target)):
        raise ValueError(f"bad request-target {target!r}")
    return method, target, version


def _field(line: str, bug: str | None) -> tuple[str, str]:
    if bug == "lowercases-fields":
        line = line.lower()  # folds the names' case, and the values' with them
    if bug == "splits-on-every-colon":
        parts = line.split(":")
        name, value = parts[0], parts[1] if len(parts) > 1 else ""
        if len(parts) < 2:
            raise ValueError("no colon")
    else:
        name, colon, value = line.partition(":")
        if not colon:
            raise ValueError(f"no colon in field line {line!r}")
    value = value.strip(" \t")
    if not TOKEN.fullmatch(name) or not FIELD_VALUE.fullmatch(value):
        raise ValueError(f"bad field line {line!r}")
    return name, value


def _find(headers: list[tuple[str, str]], name: str, bug: str | None) -> list[str]:
    if bug == "case-sensitive-names":
        return [v for n, v in headers if n == name]
    return [v for n, v in headers if n.lower() == name.lower()]


def _body(headers, version, rest: bytes, bug: str | None) -> tuple[bytes, bytes]:
    lengths = _find(headers, "Content-Length", bug)
    codings = _find(headers, "Transfer-Encoding", bug)
    if codings and bug != "ignores-chunked":
        if lengths and bug != "accepts-length-with-chunked":
            raise ValueError("Content-Length with Transfer-Encoding")
        if version == "HTTP/1.0" or [c.strip().lower() for c in codings] != ["chunked"]:
            raise ValueError(f"unsupported Transfer-Encoding {codings}")
        return _chunked(rest)
    if not lengths:
        return b"", rest
    if len(set(lengths)) != 1 or not lengths[0].isdigit() or not lengths[0].isascii():
        raise ValueError(f"bad Content-Length {lengths}")
    n = int(lengths[0])
    if len(rest) < n:
        raise Incomplete
    return rest[:n], rest[n:]


def _chunked(rest: bytes) -> tuple[bytes, bytes]:
    body = b""
    while True:
        line, sep, rest = rest.partition(b"\r\n")
        if not sep:
            raise Incomplete
        size_text = line.split(b";")[0]
        if not re.fullmatch(rb"[0-9A-Fa-f]+", size_text):
            raise ValueError(f"bad chunk size {line!r}")
        size = int(size_text, 16)
        if size == 0:
            break
        if len(rest) < size + 2:
            raise Incomplete
        if rest[size:size + 2] != b"\r\n":
            raise ValueError("chunk data longer than its size")
        body, rest = body + rest[:size], rest[size + 2:]
    while True:  # trailer fields, then an empty line
        line, sep, rest = rest.partition(b"\r\n")
        if not sep:
            raise Incomplete
        if not line:
            return body, rest
