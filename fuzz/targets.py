"""The fuzz targets: one function per API that takes untrusted bytes, each checking what
must hold for *any* input (not just "does not crash").

Each ``target_*(data: bytes)`` raises only when something is wrong: an exception the API
does not document, a broken invariant (an assertion), or, for the C extension, a memory
error that AddressSanitizer/UBSan report. ``fuzz/run.py`` runs them under atheris
(coverage-guided, libFuzzer); ``tests/fuzz`` replays the kept corpus and every input that
once failed (``fuzz/regressions/TARGET/``), so each crash found stays a regression test.

* ``parser``: :class:`pyweb.protocol.RequestParser` on bytes cut in two pieces (a request
  split across reads), then EOF: only :class:`~pyweb.protocol.ProtocolError`, a bounded
  number of events, body bytes never more than were fed; and the same events, errors and
  states with the C request head (``parser.C_HEAD``, when built) as without it.
* ``forms``: :func:`pyweb.app.formdata.form_from` on url-encoded and multipart bodies: only
  :class:`~pyweb.app.formdata.FormDataError`; every text value free of C0 controls.
* ``quot``: :func:`pyweb.qq` with a fuzzed template and values: only the documented
  ValueError/NameError/AttributeError; ``to_html`` never lets a value's ``<`` through.
* ``arena``: :class:`pyweb_regions.Arena` driven by a program decoded from the bytes
  (write, writev, tail+commit, views, getvalue, reset), checked against a bytearray.
"""

from __future__ import annotations

import pyweb_regions
from pyweb import qq
from pyweb.app.formdata import FormDataError, FormLimits, form_from
from pyweb.protocol import (
    NEED_DATA,
    ConnectionClosed,
    Data,
    EndOfMessage,
    Limits,
    ProtocolError,
    Request,
    RequestParser,
)
from pyweb.protocol import parser as parser_module

__all__ = ["TARGETS"]

_LIMITS = Limits(max_body=1 << 16)


def target_parser(data: bytes) -> None:
    if not data:
        return
    cut = data[0] % (len(data) + 1)
    rest = data[1:]
    pieces = (rest[:cut], rest[cut:], b"")  # b"": the client closed (EOF)
    outcome = _parse(pieces, parser_module.C_HEAD)
    if parser_module.C_HEAD is not None:
        # The C request head takes what it knows and declines the rest: with it and
        # without it the parser must say the same (events, error, state after each piece).
        assert _parse(pieces, None) == outcome, "the C head and the Python head disagree"


def _state_of(parser: RequestParser) -> tuple:
    """Every slot of the parser but its error (the error is compared by what it says)."""
    return tuple(
        bytes(value) if isinstance(value, bytearray) else value
        for value in (getattr(parser, name) for name in RequestParser.__slots__
                      if name != "_error")
    )


def _parse(pieces: tuple[bytes, ...], c_head: object) -> list:
    """What the parser makes of ``pieces`` (fed one by one), with ``c_head`` as its C
    fast path (None: the Python path alone); checks the invariants on the way."""
    saved = parser_module.C_HEAD
    parser_module.C_HEAD = c_head  # type: ignore[assignment]
    try:
        parser = RequestParser(_LIMITS)
        seen: list = []
        body = 0
        try:
            for piece in pieces:
                parser.feed(piece)
                for _ in range(10_000):
                    event = parser.next_event()
                    if event is NEED_DATA:
                        break
                    seen.append(event)
                    if type(event) is ConnectionClosed:
                        return seen
                    if type(event) is Data:
                        body += len(event.data)
                        assert body <= len(b"".join(pieces)), "more body bytes than were fed"
                    else:
                        assert type(event) in (Request, EndOfMessage), event
                else:
                    raise AssertionError("the parser produced 10,000 events without asking for data")
                seen.append(_state_of(parser))
        except ProtocolError as err:
            assert 400 <= err.status <= 505, err.status
            seen.append((type(err), err.status, err.message, err.offending))
        return seen
    finally:
        parser_module.C_HEAD = saved  # type: ignore[assignment]


_CONTROLS = {chr(c) for c in range(32)} - {"\t", "\n", "\r"}


def target_forms(data: bytes) -> None:
    if len(data) < 2:
        return
    kind, rest = data[0], data[1:]
    query, _, body = rest.partition(b"\n")
    boundary = "b" + str(kind)
    content_type = (
        "application/x-www-form-urlencoded"
        if kind % 2
        else f'multipart/form-data; boundary="{boundary}"'
    )
    if kind % 4 == 2:  # a multipart body written around the fuzzed bytes
        body = (
            f'--{boundary}\r\nContent-Disposition: form-data; name="f"\r\n\r\n'.encode()
            + body
            + f"\r\n--{boundary}--\r\n".encode()
        )
    try:
        form, files = form_from(
            query.decode("latin-1"), body, content_type, FormLimits(max_fields=50)
        )
    except FormDataError:
        return
    for name, value in form.multi_items():
        for text in (name, value):
            assert isinstance(text, str)
            assert not (_CONTROLS & set(text)), (name, value)
    assert len(form.multi_items()) + len(files.multi_items()) <= 50


def target_quot(data: bytes) -> None:
    text = data.decode("utf-8", "replace")
    template, _, value = text.partition("\x00")
    names = {"a": value, "b": [value, 1], "c": None}
    try:
        q = qq(template, **names)
    except (ValueError, NameError, AttributeError):
        return
    out = q.to_html()
    flat = q.flatten()
    assert isinstance(out, str) and isinstance(flat, str)
    if "<" not in template:
        # any '<' in the page could only come from a value: every value is escaped
        # ("{{a}}" is a literal "{a}", not a hole: the first crash found was this
        # target's own mistake, kept in fuzz/regressions/quot/)
        assert "<" not in out, (template, value, out)
    sql, params = q.to_sql("qmark")
    assert isinstance(sql, str) and isinstance(params, (list, tuple))


def target_arena(data: bytes) -> None:
    arena = pyweb_regions.Arena(max_pages=1 + data[0] % 4 if data else 2)
    model = bytearray()
    views: list[memoryview] = []
    i = 1
    while i < len(data):
        op, i = data[i] % 8, i + 1
        size = data[i] * 97 if i < len(data) else 0
        i += 1
        chunk = bytes(data[i : i + 32]) * (1 + size // 32)
        chunk = chunk[:size]
        try:
            if op == 0:
                arena.write(chunk)
                model += chunk
            elif op == 1:
                pieces = [chunk[: size // 2], chunk[size // 2 :].decode("latin-1")]
                arena.writev(pieces)
                model += pieces[0] + pieces[1].encode("utf-8")
            elif op == 2:
                tail = arena.tail(1 + size % 4096)
                n = min(len(tail), len(chunk))
                tail[:n] = chunk[:n]
                tail.release()
                arena.commit(n)
                model += chunk[:n]
            elif op == 3:
                views.extend(arena.views())
            elif op == 4:
                for view in views:
                    view.release()
                views.clear()
            elif op == 5:
                arena.reset()
                model.clear()
            elif op == 6:
                assert arena.getvalue() == bytes(model)
            else:
                assert len(arena) == len(model)
        except MemoryError:
            assert arena.getvalue() == bytes(model), "a refused write left bytes behind"
        except BufferError:
            assert views and op == 5, "BufferError without a live view"
    assert arena.getvalue() == bytes(model)
    for view in views:
        view.release()
    arena.close()


TARGETS = {
    "parser": target_parser,
    "forms": target_forms,
    "quot": target_quot,
    "arena": target_arena,
}
