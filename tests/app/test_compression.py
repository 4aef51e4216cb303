"""Compression, precompressed files, static caching and static_url, over real sockets.

A pyweb server on each loop serves a site; ``http.client`` (which never decodes) asks with
and without ``Accept-Encoding``, and the bodies are decoded with ``gzip`` and ``brotli``
and compared with the file or the page as it is. The rules of
:mod:`pyweb.app.compression` (negotiation, types) are tested as plain functions at the end.
"""

from __future__ import annotations

import gzip
import http.client
import os
import re
from collections.abc import Iterator
from pathlib import Path

import brotli
import pytest

from pyweb.app import compression
from pyweb.app.guards import compress as guard
from pyweb.app.static import IMMUTABLE
from pyweb.testing import serve
from tests.helpers import forged, write_site

pytestmark = pytest.mark.loops("trio", "asyncio")

CSS = ("body { color: #333; margin: 0 auto; }\n" * 200).encode()  # 7.6 KB, shrinks well
PNG = bytes(range(256)) * 20  # 5 KB that a png would be: never compressed

SITE: dict[str, str | bytes] = {
    "style.css": CSS,
    "tiny.css": b"a{}",
    "pic.png": PNG,
    "app.js": ("function f(x) { return x * 2; }\n" * 100).encode(),
    "pre.css": CSS,
    "pre.css.br": b"",  # replaced below (real brotli bytes, newer than the file)
    "pre.css.gz": b"",
    "page.py": "conn.return_('<p>' + 'hello, compressed world ' * 200 + '</p>')",
    "small.py": "conn.return_('hello')",
    "big.py": (
        "conn.return_(''.join(f'<p>row {i} of a long table in a worker thread</p>' "
        "for i in range(5000)))"
    ),
    "quot.py": (
        "from pyweb import qq, static_url\n"
        "conn.return_(qq(f'<link rel=stylesheet href=\"{static_url(\"style.css\")}\">'))"
    ),
    "nocompress.py": (
        "conn.return_('x' * 5000, content_type='text/plain')\n"
        "conn.response.headers.append(('Cache-Control', 'no-transform'))"
    ),
    "templates/tpl.html": '<link rel="stylesheet" href="{{ static_url("style.css") }}">',
    "form.py": "from pyweb import csrf_field, qq\nconn.return_(qq(f'<form>{csrf_field()}</form>'))",
}


@pytest.fixture
def site_dir(tmp_path: Path) -> Path:
    root = write_site(tmp_path / "site", SITE)
    pre = root / "pre.css"
    (root / "pre.css.br").write_bytes(brotli.compress(CSS, quality=11))
    (root / "pre.css.gz").write_bytes(gzip.compress(CSS, 9))
    later = pre.stat().st_mtime_ns + 1_000_000_000
    for twin in ("pre.css.br", "pre.css.gz"):
        os.utime(root / twin, ns=(later, later))  # no older than the file: not stale
    return root


@pytest.fixture
def port(site_dir: Path) -> Iterator[int]:
    with serve(site_dir) as client:
        yield client.server.port  # type: ignore[attr-defined]


def get(
    port: int, path: str, coding: str | None = None, method: str = "GET", **headers: str
) -> tuple[int, dict[str, str], bytes]:
    """One request over a real socket; the body exactly as it came (not decoded)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    fields = {k.replace("_", "-"): v for k, v in headers.items()}
    if coding is not None:
        fields["Accept-Encoding"] = coding
    try:
        conn.request(method, path, headers=fields)
        response = conn.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        conn.close()


def decode(fields: dict[str, str], body: bytes) -> bytes:
    coding = fields.get("content-encoding")
    if coding == "gzip":
        return gzip.decompress(body)
    if coding == "br":
        return brotli.decompress(body)
    assert coding is None, coding
    return body


@pytest.mark.parametrize("coding", ["gzip", "br"])
def test_a_static_file_is_compressed_and_decodes_to_the_file(port: int, coding: str) -> None:
    status, fields, body = get(port, "/style.css", coding)
    assert status == 200 and fields["content-encoding"] == coding
    assert decode(fields, body) == CSS and len(body) < len(CSS) // 5
    assert int(fields["content-length"]) == len(body)
    assert "accept-encoding" in fields["vary"].lower()
    assert "accept-ranges" not in fields  # ranges are the file's, never the coding's
    plain_status, plain, plain_body = get(port, "/style.css")
    assert plain_status == 200 and plain_body == CSS and "content-encoding" not in plain
    assert plain["vary"] == "Accept-Encoding"  # a cache must not hand the coding out
    assert fields["etag"] == plain["etag"][:-1] + f'-{coding}"'  # each coding its own tag
    again = get(port, "/style.css", coding)  # kept: the same bytes from the file's cache
    assert again[2] == body


def test_the_client_chooses_by_q_values(port: int) -> None:
    assert get(port, "/style.css", "br;q=0.5, gzip")[1]["content-encoding"] == "gzip"
    assert get(port, "/style.css", "gzip, deflate, br")[1]["content-encoding"] == "br"
    status, fields, body = get(port, "/style.css", "gzip;q=0, br;q=0")
    assert status == 200 and "content-encoding" not in fields and body == CSS
    assert get(port, "/style.css", "identity")[2] == CSS


def test_what_is_never_compressed(port: int) -> None:
    # an image: compressed already
    status, fields, body = get(port, "/pic.png", "gzip, br")
    assert status == 200 and "content-encoding" not in fields and body == PNG
    assert "vary" not in fields
    # under compress_min_size
    status, fields, body = get(port, "/tiny.css", "gzip, br")
    assert body == b"a{}" and "content-encoding" not in fields
    status, fields, body = get(port, "/small", "gzip, br")
    assert body == b"hello" and "content-encoding" not in fields
    # a range: the file's own bytes, 206
    status, fields, body = get(port, "/style.css", "gzip, br", Range="bytes=0-9")
    assert status == 206 and body == CSS[:10] and "content-encoding" not in fields
    # a page that asks for no-transform
    status, fields, body = get(port, "/nocompress", "gzip, br")
    assert body == b"x" * 5000 and "content-encoding" not in fields


def test_head_says_what_get_says(port: int) -> None:
    _, got, body = get(port, "/style.css", "br")
    status, head, nothing = get(port, "/style.css", "br", method="HEAD")
    assert status == 200 and nothing == b""
    for name in ("content-encoding", "content-length", "etag", "vary", "content-type"):
        assert head[name] == got[name], name


def test_a_304_knows_the_tag_of_a_coding(port: int) -> None:
    _, fields, _ = get(port, "/style.css", "gzip")
    status, again, body = get(port, "/style.css", "gzip", If_None_Match=fields["etag"])
    assert status == 304 and body == b""
    assert again["etag"] == fields["etag"] and "accept-encoding" in again["vary"].lower()
    assert again["cache-control"] == "no-cache"


@pytest.mark.parametrize("coding", ["gzip", "br"])
def test_a_page_is_compressed(port: int, coding: str) -> None:
    status, fields, body = get(port, "/page", coding)
    assert status == 200 and fields["content-encoding"] == coding
    assert get(port, "/page", "gzip, br")[1]["content-encoding"] == "br"  # the smaller
    assert decode(fields, body) == ("<p>" + "hello, compressed world " * 200 + "</p>").encode()
    assert fields["content-type"].startswith("text/html")
    assert fields["x-frame-options"] == "SAMEORIGIN"  # the other guards' headers kept


@pytest.mark.parametrize("coding", ["gzip", "br"])
def test_a_large_page_is_compressed_in_a_worker_thread(port: int, coding: str) -> None:
    expected = "".join(f"<p>row {i} of a long table in a worker thread</p>" for i in range(5000))
    assert len(expected) >= guard.THREAD_AT  # (else this test would not reach the thread)
    status, fields, body = get(port, "/big", coding)
    assert status == 200 and decode(fields, body) == expected.encode()


@pytest.mark.parametrize("coding", ["gzip", "br"])
def test_a_precompressed_file_is_sent_as_it_is(site_dir: Path, port: int, coding: str) -> None:
    twin = site_dir / ("pre.css.br" if coding == "br" else "pre.css.gz")
    status, fields, body = get(port, "/pre.css", coding)
    assert status == 200 and fields["content-encoding"] == coding
    assert body == twin.read_bytes() and decode(fields, body) == CSS  # the file's bytes
    assert "accept-encoding" in fields["vary"].lower()


def test_a_stale_or_linked_precompressed_file_is_not_used(site_dir: Path, port: int) -> None:
    br = site_dir / "pre.css.br"
    older = (site_dir / "pre.css").stat().st_mtime_ns - 1_000_000_000
    os.utime(br, ns=(older, older))  # the file was edited after it was compressed
    _, fields, body = get(port, "/pre.css", "br")
    assert fields["content-encoding"] == "br" and body != br.read_bytes()  # made afresh
    assert brotli.decompress(body) == CSS
    gz = site_dir / "pre.css.gz"
    gz.unlink()
    (site_dir / "elsewhere.gz").write_bytes(gzip.compress(b"not the css"))
    gz.symlink_to(site_dir / "elsewhere.gz")  # a symlink could lead out of the site
    _, fields, body = get(port, "/pre.css", "gzip")
    assert gzip.decompress(body) == CSS


def test_static_cache_control_and_static_url(site_dir: Path, port: int) -> None:
    _, plain, _ = get(port, "/style.css")
    assert plain["cache-control"] == "no-cache"
    status, fields, body = get(port, "/quot", "gzip")
    found = re.search(rb'href="(/style\.css\?v=([0-9a-f]{12}))"', decode(fields, body))
    assert found, body
    address = found.group(1).decode()
    status, hashed, body = get(port, address, "br")
    assert status == 200 and hashed["cache-control"] == IMMUTABLE
    assert brotli.decompress(body) == CSS
    # the template says the same address
    assert address.encode() in get(port, "/tpl")[2]
    # an old hash still serves the file, but never as immutable
    assert get(port, "/style.css?v=000000000000")[1]["cache-control"] == "no-cache"
    (site_dir / "style.css").write_bytes(CSS + b"/* changed */")
    _, fresh, body = get(port, "/quot")
    assert address.encode() not in body  # a new content, a new address
    assert get(port, address)[1]["cache-control"] == "no-cache"


def test_static_url_names_a_file_that_is_not_served(site_dir: Path) -> None:
    (site_dir / "bad.py").write_text(
        "from pyweb import static_url\n"
        "try:\n    static_url('pyweb.toml')\nexcept ValueError as e:\n    conn.return_(str(e))\n"
    )
    with serve(site_dir) as client:
        text = client.get("/bad").text
    assert "static_url('/pyweb.toml')" in text and "no static file" in text


def test_settings_turn_it_off(site_dir: Path) -> None:
    with serve(site_dir, compress=False, static_cache_control=None) as client:
        port = client.server.port  # type: ignore[attr-defined]
        for path in ("/style.css", "/pre.css", "/page"):
            _, fields, _ = get(port, path, "gzip, br")
            assert "content-encoding" not in fields and "vary" not in fields, path
        assert "cache-control" not in get(port, "/style.css")[1]
    with serve(site_dir, compress_min_size=10_000) as client:
        port = client.server.port  # type: ignore[attr-defined]
        assert "content-encoding" not in get(port, "/style.css", "gzip")[1]  # 7.6 KB


def test_csrf_tokens_differ_per_page_and_still_post(site_dir: Path) -> None:
    """BREACH: the token in a compressed page is masked afresh each time."""
    (site_dir / "echo.py").write_text("conn.return_('posted')")
    with serve(site_dir) as client:
        first = re.search(r'value="([^"]+)"', client.get("/form").text).group(1)  # type: ignore[union-attr]
        second = re.search(r'value="([^"]+)"', client.get("/form").text).group(1)  # type: ignore[union-attr]
        assert first != second
        for token in (first, second):
            assert client.post("/echo", {"csrf_token": token}).status == 200
        assert client.post("/echo", {"csrf_token": forged(first)}).status == 403


# ---- the rules, as plain functions -------------------------------------------------------


@pytest.mark.loop_free
def test_accepted_codings() -> None:
    assert compression.accepted(None) == ()
    assert compression.accepted("identity") == ()
    assert compression.accepted("gzip") == ("gzip",)
    assert compression.accepted("x-gzip") == ("gzip",)
    assert compression.accepted("GZIP, BR") == ("br", "gzip")
    assert compression.accepted("*") == ("br", "gzip")
    assert compression.accepted("*;q=0.1, gzip") == ("gzip", "br")
    assert compression.accepted("br;q=0, *") == ("gzip",)
    assert compression.accepted("gzip;q=nonsense") == ("gzip",)  # a bad q counts as 1
    assert compression.accepted("gzip;q=0.000") == ()


@pytest.mark.loop_free
def test_compressible_types() -> None:
    for ctype in ("text/html; charset=utf-8", "text/css", "application/javascript",
                  "application/json", "image/svg+xml; charset=utf-8", "application/wasm"):  # fmt: skip
        assert compression.compressible(ctype), ctype
    for ctype in (None, "", "image/png", "application/zip", "application/gzip", "font/woff2",
                  "video/mp4", "application/pdf", "application/octet-stream"):  # fmt: skip
        assert not compression.compressible(ctype), ctype


@pytest.mark.loop_free
def test_etags_and_vary() -> None:
    assert compression.coded_etag('"abc"', "br") == '"abc-br"'
    assert compression.coded_etag('W/"abc"', "gzip") == 'W/"abc-gzip"'
    assert compression.uncoded_etag('"abc-gzip"') == ('"abc"', "gzip")
    assert compression.uncoded_etag('"abc"') == ('"abc"', None)
    assert compression.add_vary([("Vary", "Cookie")]) == [("Vary", "Cookie, Accept-Encoding")]
    assert compression.add_vary([("Vary", "*")]) == [("Vary", "*")]
    assert compression.add_vary([]) == [("Vary", "Accept-Encoding")]


@pytest.mark.loop_free
def test_encode_is_deterministic_and_names_a_bad_coding() -> None:
    assert compression.encode(CSS, "gzip") == compression.encode(CSS, "gzip")
    with pytest.raises(ValueError, match="'zstd'"):
        compression.encode(CSS, "zstd")
