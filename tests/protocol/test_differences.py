"""Every place where pyweb deliberately differs from h11, one named test each.

Each test shows both sides (what h11 does and what pyweb does) and names the RFC section
that allows pyweb's choice, so a change in either library shows up here. The reasons are
written up in docs/protocol.md.
"""

from __future__ import annotations

import pytest

from pyweb.protocol import (
    BadRequest,
    NotImplementedByServer,
    ProtocolError,
    VersionNotSupported,
)

from .helpers import run_h11, run_pyweb

H = b"Host: example.org\r\n"


def h11_accepts(data: bytes):
    reqs, err, _ = run_h11([data], eof=True)
    assert err is None, err
    return reqs


def h11_rejects(data: bytes) -> None:
    _, err, _ = run_h11([data], eof=True)
    assert err is not None


def pyweb_rejects(data: bytes, exc: type[ProtocolError] = BadRequest) -> ProtocolError:
    _, err, _ = run_pyweb([data], eof=True)
    assert type(err) is exc, err
    return err


def pyweb_accepts(data: bytes):
    reqs, err, _ = run_pyweb([data], eof=True)
    assert err is None, err
    return reqs


@pytest.mark.parametrize("data", [
    b"GET / HTTP/1.1\nHost: a\n\n",
    b"GET / HTTP/1.1\r\nHost: a\nAccept: */*\r\n\r\n",
    b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nT: 1\n\n",
])
def test_differs_from_h11_rejects_bare_lf_line_endings_rfc9112_s2_2(data: bytes) -> None:
    # RFC 9112 §2.2: a recipient MAY recognise a single LF as a line terminator. pyweb
    # does not: disagreement between hops about line endings enables request smuggling.
    h11_accepts(data)
    pyweb_rejects(data)


def test_differs_from_h11_ignores_leading_empty_lines_rfc9112_s2_2() -> None:
    # RFC 9112 §2.2: a server SHOULD ignore at least one empty line before the
    # request-line (some clients send an extra CRLF after a POST body).
    data = b"GET /1 HTTP/1.1\r\n" + H + b"\r\n\r\nGET /2 HTTP/1.1\r\n" + H + b"\r\n"
    assert len(pyweb_accepts(data)) == 2
    h11_rejects(data)
    h11_rejects(b"\r\nGET / HTTP/1.1\r\n" + H + b"\r\n")


def test_differs_from_h11_rejects_obs_fold_rfc9112_s5_2() -> None:
    # RFC 9112 §5.2: a server that receives obs-fold MUST either reject it with 400 or
    # replace it with SP. h11 unfolds; pyweb rejects (obs-fold is a smuggling vector
    # and no current client generates it).
    data = b"GET / HTTP/1.1\r\n" + H + b"X: a\r\n b\r\n\r\n"
    assert h11_accepts(data)[0].headers[-1] == ("x", "a b")
    pyweb_rejects(data)


def test_differs_from_h11_rejects_content_length_with_transfer_encoding_rfc9112_s6_1() -> None:
    # RFC 9112 §6.1: a server MAY reject a request with both; §6.3 says such a message
    # "ought to be handled as an error". h11 silently uses chunked framing.
    data = (b"POST / HTTP/1.1\r\n" + H + b"Content-Length: 4\r\nTransfer-Encoding: chunked\r\n"
            b"\r\n0\r\n\r\n")
    h11_accepts(data)
    pyweb_rejects(data)


def test_differs_from_h11_rejects_transfer_encoding_in_http_1_0_rfc9112_s6_1() -> None:
    # RFC 9112 §6.1: an HTTP/1.0 message with Transfer-Encoding MUST be treated as having
    # faulty framing. h11 reads it as chunked.
    data = b"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
    h11_accepts(data)
    pyweb_rejects(data)


@pytest.mark.parametrize("host", [b"a b", b"a/b", b"user@a", b"a?b"])
def test_differs_from_h11_validates_host_syntax_rfc9112_s3_2(host: bytes) -> None:
    # RFC 9112 §3.2: a server MUST respond 400 to a Host field with an invalid value
    # (RFC 9110 §7.2: Host = uri-host [ ":" port ]). h11 only checks field syntax.
    data = b"GET / HTTP/1.1\r\nHost: " + host + b"\r\n\r\n"
    h11_accepts(data)
    pyweb_rejects(data)


@pytest.mark.parametrize("version", [b"HTTP/2.0", b"HTTP/3.0", b"HTTP/0.9"])
def test_differs_from_h11_other_major_versions_are_505_rfc9110_s15_6_6(version: bytes) -> None:
    # RFC 9110 §15.6.6: 505 when the server does not support the major version. h11
    # parses any HTTP/d.d as if it were HTTP/1.x.
    data = b"GET / " + version + b"\r\n" + H + b"\r\n"
    h11_accepts(data)
    pyweb_rejects(data, VersionNotSupported)


def test_differs_from_h11_higher_minor_version_reported_as_1_1_rfc9110_s6_2() -> None:
    # RFC 9110 §6.2: process a higher minor version as the highest one implemented.
    data = b"GET / HTTP/1.5\r\n" + H + b"\r\n"
    assert h11_accepts(data)[0].version == "1.5"
    assert pyweb_accepts(data)[0].version == "1.1"


def test_differs_from_h11_connect_is_501_rfc9110_s9_3_6() -> None:
    # pyweb is an origin server, not a tunnel: CONNECT is a method it does not implement
    # (RFC 9110 §15.6.2). h11 hands CONNECT to the application.
    data = b"CONNECT example.org:443 HTTP/1.1\r\nHost: example.org:443\r\n\r\n"
    h11_accepts(data)
    pyweb_rejects(data, NotImplementedByServer)


@pytest.mark.parametrize("line", [
    b"GET * HTTP/1.1", b"GET example.org:80 HTTP/1.1", b"GET index.html HTTP/1.1",
    b"GET http://user@example.org/ HTTP/1.1",
])
def test_differs_from_h11_checks_the_request_target_form_rfc9112_s3_2(line: bytes) -> None:
    # RFC 9112 §3.2: origin-form starts with "/", asterisk-form is only for OPTIONS,
    # authority-form only for CONNECT, absolute-form has no userinfo (RFC 9110 §4.2.4).
    # h11 accepts any run of visible characters as a target.
    data = line + b"\r\n" + H + b"\r\n"
    h11_accepts(data)
    pyweb_rejects(data)


def test_differs_from_h11_http_1_0_keep_alive_rfc9112_s9_3() -> None:
    # RFC 9112 §9.3 / Appendix C.2.2: an HTTP/1.0 client may ask for a persistent
    # connection with "Connection: keep-alive". h11 always closes HTTP/1.0 connections.
    data = b"GET /1 HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET /2 HTTP/1.0\r\n\r\n"
    theirs = h11_accepts(data)
    assert len(theirs) == 1 and not theirs[0].keep_alive
    ours = pyweb_accepts(data)
    assert len(ours) == 2 and ours[0].keep_alive and not ours[1].keep_alive


def test_differs_from_h11_rejects_cr_in_chunk_extension_rfc9112_s7_1_1() -> None:
    # RFC 9112 §7.1.1: chunk-ext is made of tokens and quoted strings, never CR; h11
    # ignores everything after ";" up to CRLF, including a bare CR.
    data = (b"POST / HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\n\r\n"
            b"1;a\rb\r\nx\r\n0\r\n\r\n")
    h11_accepts(data)
    pyweb_rejects(data)


def test_same_as_h11_status_for_chunked_not_last_is_400_rfc9112_s6_3() -> None:
    # Both reject; h11 hints 501 for every coding but chunked, pyweb follows RFC 9112
    # §6.3 (chunked not final → 400) and §6.1 (unknown coding → 501).
    data = b"POST / HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked, gzip\r\n\r\n"
    h11_rejects(data)
    pyweb_rejects(data, BadRequest)
    data = b"POST / HTTP/1.1\r\n" + H + b"Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n"
    h11_rejects(data)
    pyweb_rejects(data, NotImplementedByServer)


@pytest.mark.parametrize("ctl", [b"\x01", b"\x07", b"\x1b", b"\x1f", b"\x7f"])
def test_differs_from_h11_refuses_ctls_in_field_values_rfc9110_s5_5(ctl: bytes) -> None:
    # RFC 9110 §5.5: field-vchar is VCHAR or obs-text, and a recipient may reject a field
    # value holding other CTLs than HTAB. h11 admits them (clients put \\x01 in cookies); pyweb refuses
    # them with 400, naming the character (a hardening probe found \x01 accepted).
    data = b"GET / HTTP/1.1\r\n" + H + b"Cookie: a" + ctl + b"b\r\n\r\n"
    h11_accepts(data)
    err = pyweb_rejects(data)
    assert f"U+{ctl[0]:04X}" in err.message and "RFC 9110 §5.5" in err.message
    # in a trailer too
    body = b"POST / HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\n\r\n"
    pyweb_rejects(body + b"0\r\nT: a" + ctl + b"\r\n\r\n")
    pyweb_accepts(body + b"0\r\nT: a\tb\r\n\r\n")  # HTAB is fine


CHUNKED = b"POST / HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\n\r\n"


@pytest.mark.parametrize("line", [b"5 ;ext", b"5\t;ext=v", b"5  ; a=b ; c"])
def test_differs_from_h11_accepts_bws_before_chunk_extension_rfc9112_s7_1_1(line: bytes) -> None:
    # RFC 9112 §7.1.1: chunk-ext = *( BWS ";" BWS chunk-ext-name [ BWS "=" BWS chunk-ext-val
    # ] ), and BWS (RFC 9110 §5.6.3) must be accepted by a recipient. h11 refuses it.
    data = CHUNKED + line + b"\r\nhello\r\n0\r\n\r\n"
    h11_rejects(data)
    [req] = pyweb_accepts(data)
    assert req.body == b"hello"


@pytest.mark.parametrize("line", [b"5 ", b"5\t", b"0 "])
def test_differs_from_h11_refuses_trailing_whitespace_without_extension_rfc9112_s7_1(
    line: bytes,
) -> None:
    # RFC 9112 §7.1: chunk = chunk-size [ chunk-ext ] CRLF: whitespace after the size is
    # allowed only as the BWS of an extension. h11 accepts "5 "; pyweb refuses it (400).
    data = CHUNKED + line + b"\r\nhello\r\n0\r\n\r\n"
    if line != b"0 ":
        h11_accepts(data)
    err = pyweb_rejects(data)
    assert "chunk-size line" in err.message
