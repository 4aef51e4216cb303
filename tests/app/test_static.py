"""Unit tests of StaticFiles.respond on a temporary site (RFC 9110 §8.8, §13, §14; safety).

The last tests go through a real server on a real socket with pyweb.testing.
"""

from __future__ import annotations

import os
import socket
import time

import h11
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

import pyweb.testing
from pyweb.app.static import StaticFiles, content_type_for
from pyweb.protocol.messages import Request
from pyweb.protocol.response import FileBody, Response

INDEX = b"<!doctype html><title>home</title>" + b"x" * 950  # 984 bytes, like the benchmark page


@pytest.fixture
def site(tmp_path):
    root = tmp_path / "site"
    root.mkdir()
    (root / "index.html").write_bytes(INDEX)
    (root / "hello.txt").write_bytes(b"0123456789")
    (root / "app.js").write_text("console.log(1)")
    (root / "style.css").write_text("body{}")
    (root / "pic.svg").write_text("<svg/>")
    (root / "data.json").write_text("{}")
    (root / "mod.wasm").write_bytes(b"\0asm")
    (root / "blob.unknownext").write_bytes(b"?")
    (root / "empty.txt").write_bytes(b"")
    (root / "docs").mkdir()
    (root / "docs" / "index.html").write_bytes(b"docs index")
    (root / "noindex").mkdir()
    (root / "noindex" / "a.txt").write_bytes(b"a")
    (root / ".env").write_text("SECRET=1")
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("[core]")
    (root / ".well-known").mkdir()
    (root / ".well-known" / "security.txt").write_text("Contact: x")
    (root / "sp ace.txt").write_bytes(b"space")
    (tmp_path / "secret").write_text("outside")
    return root


@pytest.fixture
def files(site):
    return StaticFiles(site)


def req(
    path: str, method: str = "GET", headers: list[tuple[str, str]] | None = None, query: str = ""
) -> Request:
    target = path + ("?" + query if query else "")
    return Request(
        method, target, "1.1", [(k.lower(), v) for k, v in (headers or [])], path=path, query=query
    )


def header(response: Response, name: str) -> str | None:
    for key, value in response.headers:
        if key.lower() == name.lower():
            return value
    return None


def test_serves_file_with_filebody(files, site):
    r = files.respond(req("/hello.txt"))
    assert r is not None and r.status == 200
    assert r.body == FileBody(str(site / "hello.txt"), 0, 10)
    assert header(r, "Content-Type") == "text/plain; charset=utf-8"
    assert header(r, "Accept-Ranges") == "bytes"
    st = os.stat(site / "hello.txt")
    assert header(r, "ETag") == f'"{st.st_ino:x}-{st.st_size:x}-{st.st_mtime_ns:x}"'
    assert header(r, "Last-Modified") == time.strftime(
        "%a, %d %b %Y %H:%M:%S GMT", time.gmtime(int(st.st_mtime))
    )


def test_head_is_same_head_as_get(files):
    get = files.respond(req("/hello.txt"))
    head = files.respond(req("/hello.txt", "HEAD"))
    assert head.status == 200 and head.headers == get.headers and head.body == get.body


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "OPTIONS", "get"])
def test_other_methods_are_not_ours(files, method):
    assert files.respond(req("/hello.txt", method)) is None


@pytest.mark.parametrize(
    "name,ctype",
    [
        ("index.html", "text/html; charset=utf-8"),
        ("app.js", "application/javascript; charset=utf-8"),
        ("style.css", "text/css; charset=utf-8"),
        ("pic.svg", "image/svg+xml; charset=utf-8"),
        ("data.json", "application/json"),
        ("mod.wasm", "application/wasm"),
        ("blob.unknownext", "application/octet-stream"),
        ("PIC.PNG", "image/png"),
        ("README", "application/octet-stream"),
    ],
)
def test_content_types(name, ctype):
    assert content_type_for(name) == ctype


def test_missing_file_is_none(files):
    assert files.respond(req("/nope.txt")) is None
    assert files.respond(req("/nope/deeper.txt")) is None
    assert files.respond(req("/hello.txt/")) is None  # a file is not a directory


def test_query_string_is_ignored(files):
    r = files.respond(req("/hello.txt", query="v=3"))
    assert r.status == 200 and r.body.length == 10


def test_percent_encoded_name(files):
    r = files.respond(req("/sp%20ace.txt"))
    assert r.status == 200 and r.body.length == 5


# --- validators and 304 --------------------------------------------------------------------


def test_if_none_match_304_and_200(files):
    etag = header(files.respond(req("/hello.txt")), "ETag")
    r = files.respond(req("/hello.txt", headers=[("If-None-Match", etag)]))
    assert r.status == 304 and r.body == b"" and header(r, "ETag") == etag
    assert files.respond(req("/hello.txt", headers=[("If-None-Match", '"other"')])).status == 200


def test_if_none_match_list_star_and_weak(files):
    etag = header(files.respond(req("/hello.txt")), "ETag")
    assert (
        files.respond(req("/hello.txt", headers=[("If-None-Match", f'"a", {etag} , "b"')])).status
        == 304
    )
    assert files.respond(req("/hello.txt", headers=[("If-None-Match", "*")])).status == 304
    # weak comparison (RFC 9110 §13.1.2): W/"x" matches "x"
    assert files.respond(req("/hello.txt", headers=[("If-None-Match", "W/" + etag)])).status == 304
    assert files.respond(req("/hello.txt", "HEAD", headers=[("If-None-Match", etag)])).status == 304


def test_etag_changes_when_file_changes(files, site):
    etag = header(files.respond(req("/hello.txt")), "ETag")
    (site / "hello.txt").write_bytes(b"01234567890")
    r = files.respond(req("/hello.txt", headers=[("If-None-Match", etag)]))
    assert r.status == 200 and header(r, "ETag") != etag


def test_if_modified_since(files):
    last_modified = header(files.respond(req("/hello.txt")), "Last-Modified")
    assert (
        files.respond(req("/hello.txt", headers=[("If-Modified-Since", last_modified)])).status
        == 304
    )
    old = "Mon, 01 Jan 1990 00:00:00 GMT"
    assert files.respond(req("/hello.txt", headers=[("If-Modified-Since", old)])).status == 200
    assert (
        files.respond(req("/hello.txt", headers=[("If-Modified-Since", "garbage")])).status == 200
    )


def test_if_none_match_takes_precedence_over_if_modified_since(files):
    last_modified = header(files.respond(req("/hello.txt")), "Last-Modified")
    r = files.respond(
        req(
            "/hello.txt",
            headers=[("If-None-Match", '"nope"'), ("If-Modified-Since", last_modified)],
        )
    )
    assert r.status == 200


# --- ranges --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "spec,first,last",
    [
        ("bytes=0-3", 0, 3),
        ("bytes=2-", 2, 9),
        ("bytes=-3", 7, 9),
        ("bytes=-100", 0, 9),
        ("bytes=5-100", 5, 9),
        ("bytes=9-9", 9, 9),
        ("BYTES=1-1", 1, 1),
    ],
)
def test_single_range_206(files, site, spec, first, last):
    r = files.respond(req("/hello.txt", headers=[("Range", spec)]))
    assert r.status == 206
    assert header(r, "Content-Range") == f"bytes {first}-{last}/10"
    assert r.body == FileBody(str(site / "hello.txt"), first, last - first + 1)


@pytest.mark.parametrize("spec", ["bytes=10-", "bytes=10-20", "bytes=-0"])
def test_unsatisfiable_range_416(files, spec):
    r = files.respond(req("/hello.txt", headers=[("Range", spec)]))
    assert r.status == 416 and header(r, "Content-Range") == "bytes */10" and r.body == b""


@pytest.mark.parametrize(
    "spec",
    ["bytes=0-1,3-4", "items=0-1", "bytes=5-2", "bytes=a-b", "bytes=", "bytes=--1", "bytes=+1-2"],
)
def test_ignored_ranges_give_200(files, spec):
    r = files.respond(req("/hello.txt", headers=[("Range", spec)]))
    assert r.status == 200 and r.body.length == 10 and header(r, "Content-Range") is None


def test_range_ignored_for_head_and_empty_file(files):
    assert files.respond(req("/hello.txt", "HEAD", headers=[("Range", "bytes=0-1")])).status == 200
    assert files.respond(req("/empty.txt", headers=[("Range", "bytes=0-")])).status == 200


def test_if_range(files):
    full = files.respond(req("/hello.txt"))
    etag, last_modified = header(full, "ETag"), header(full, "Last-Modified")
    assert (
        files.respond(
            req("/hello.txt", headers=[("Range", "bytes=0-1"), ("If-Range", etag)])
        ).status
        == 206
    )
    assert (
        files.respond(
            req("/hello.txt", headers=[("Range", "bytes=0-1"), ("If-Range", '"old"')])
        ).status
        == 200
    )
    # a weak tag never matches in If-Range (strong comparison)
    assert (
        files.respond(
            req("/hello.txt", headers=[("Range", "bytes=0-1"), ("If-Range", "W/" + etag)])
        ).status
        == 200
    )
    assert (
        files.respond(
            req("/hello.txt", headers=[("Range", "bytes=0-1"), ("If-Range", last_modified)])
        ).status
        == 206
    )
    old = "Mon, 01 Jan 1990 00:00:00 GMT"
    assert (
        files.respond(req("/hello.txt", headers=[("Range", "bytes=0-1"), ("If-Range", old)])).status
        == 200
    )


# --- directories ---------------------------------------------------------------------------


def test_root_and_directory_index(files, site):
    r = files.respond(req("/"))
    assert r.status == 200 and r.body == FileBody(str(site / "index.html"), 0, len(INDEX))
    assert header(r, "Content-Type") == "text/html; charset=utf-8"
    r = files.respond(req("/docs/"))
    assert r.status == 200 and r.body.path == str(site / "docs" / "index.html")


def test_directory_without_slash_redirects(files):
    r = files.respond(req("/docs"))
    assert r.status == 301 and header(r, "Location") == "/docs/"
    r = files.respond(req("/docs", query="a=1"))
    assert header(r, "Location") == "/docs/?a=1"


def test_directory_without_index_is_none(files):
    assert files.respond(req("/noindex/")) is None


def test_custom_index_files(site):
    (site / "noindex" / "default.htm").write_text("d")
    files = StaticFiles(site, index_files=("index.html", "default.htm"))
    assert files.respond(req("/noindex/")).body.path.endswith("default.htm")


def test_root_must_be_a_directory(tmp_path):
    with pytest.raises(NotADirectoryError):
        StaticFiles(tmp_path / "missing")


# --- safety --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "/../etc/passwd",
        "/%2e%2e/%2e%2e/etc/passwd",
        "/..%2fsecret",
        "/a%00b",
        "/a\\b",
        "/%5c..%5c",
        "/docs/../../secret",
        "/%2E%2E/secret",
        "/./hello.txt",
        "//etc/passwd",
        "/%2fetc/passwd",
        "/docs//index.html",
    ],
)
def test_traversal_is_refused_with_400(files, path):
    r = files.respond(req(path))
    assert r is not None and r.status == 400
    assert not isinstance(r.body, FileBody)


def test_symlink_outside_root_is_refused(files, site, tmp_path):
    os.symlink(tmp_path / "secret", site / "link-out")
    os.symlink(tmp_path, site / "dir-out")
    for path in ("/link-out", "/dir-out/secret", "/dir-out/"):
        r = files.respond(req(path))
        assert r is not None and r.status == 404 and not isinstance(r.body, FileBody)


def test_symlink_inside_root_is_served(files, site):
    os.symlink(site / "hello.txt", site / "alias.txt")
    r = files.respond(req("/alias.txt"))
    assert r.status == 200 and r.body.path == str(site / "hello.txt")


def test_index_symlink_outside_root_is_not_served(files, site, tmp_path):
    os.symlink(tmp_path / "secret", site / "noindex" / "index.html")
    assert files.respond(req("/noindex/")) is None


@pytest.mark.parametrize("path", ["/.env", "/.git/config", "/.git/", "/docs/.hidden", "/%2eenv"])
def test_dotfiles_are_refused(files, path):
    r = files.respond(req(path))
    assert r is not None and r.status == 404 and not isinstance(r.body, FileBody)


def test_well_known_is_served(files):
    assert files.respond(req("/.well-known/security.txt")).status == 200


def test_fifo_is_refused(files, site):
    os.mkfifo(site / "pipe")
    r = files.respond(req("/pipe"))
    assert r.status == 404


def test_device_is_refused(files, site):
    os.symlink("/dev/null", site / "null")  # outside the root anyway
    assert files.respond(req("/null")).status == 404


def test_not_a_path_target(files):
    r = files.respond(Request("GET", "*", "1.1", [], path="*"))
    assert r is None


# --- the resolved-path cache must never outlive a change on disk ---------------------------


def test_cache_symlink_swapped_to_outside_is_refused(files, site, tmp_path):
    os.symlink(site / "hello.txt", site / "alias.txt")
    assert files.respond(req("/alias.txt")).status == 200  # now cached
    os.remove(site / "alias.txt")
    os.symlink(tmp_path / "secret", site / "alias.txt")
    assert files.respond(req("/alias.txt")).status == 404


def test_cache_directory_swapped_to_outside_is_refused(files, site, tmp_path):
    (site / "sub").mkdir()
    (site / "sub" / "index.html").write_text("in")
    (site / "sub" / "secret.txt").write_text("in")
    assert files.respond(req("/sub/")).status == 200
    assert files.respond(req("/sub/secret.txt")).status == 200
    os.rename(site / "sub", tmp_path / "moved")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "index.html").write_text("out")
    (tmp_path / "outside" / "secret.txt").write_text("out")
    os.symlink(tmp_path / "outside", site / "sub")
    assert files.respond(req("/sub/")).status == 404  # the directory now lies outside
    assert files.respond(req("/sub/secret.txt")).status == 404


def test_cache_replaced_and_removed_file(files, site):
    first = files.respond(req("/hello.txt"))
    (site / "new.txt").write_bytes(b"new content")
    os.replace(site / "new.txt", site / "hello.txt")
    second = files.respond(req("/hello.txt"))
    assert second.body.length == 11 and header(second, "ETag") != header(first, "ETag")
    os.remove(site / "hello.txt")
    assert files.respond(req("/hello.txt")) is None


def test_cache_index_removed(files, site):
    assert files.respond(req("/docs/")).status == 200
    os.remove(site / "docs" / "index.html")
    assert files.respond(req("/docs/")) is None


# --- over a real socket: pyweb.testing, and raw bytes checked with h11 ---------------------


@pytest.fixture
def served(site):
    with pyweb.testing.serve(site, error_log=None) as client:
        yield client


def raw_exchange(port: int, requests: list[bytes]) -> list[tuple[h11.Response, bytes]]:
    """Send pipelined requests on one connection; parse the replies with h11 (the oracle)."""
    conn = h11.Connection(h11.CLIENT)

    def tell_h11(raw: bytes) -> None:
        # h11 must know what was asked (a HEAD reply has no body) to read the reply.
        conn.send(h11.Request(method=raw.split(b" ", 1)[0], target=b"/", headers=[("Host", "x")]))
        conn.send(h11.EndOfMessage())

    results: list[tuple[h11.Response, bytes]] = []
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(b"".join(requests))
        tell_h11(requests[0])
        head, body = None, b""
        while len(results) < len(requests):
            event = conn.next_event()
            if event is h11.NEED_DATA:
                data = sock.recv(65536)
                conn.receive_data(data)
                if not data:
                    break
            elif isinstance(event, h11.Response):
                head, body = event, b""
            elif isinstance(event, h11.Data):
                body += event.data
            elif isinstance(event, h11.EndOfMessage):
                results.append((head, body))
                if len(results) < len(requests):
                    conn.start_next_cycle()
                    tell_h11(requests[len(results)])
    return results


@pytest.mark.loops("trio", "asyncio")
def test_integration_file_byte_exact(served, site):
    r = served.get("/index.html")
    assert r.status == 200 and r.body == INDEX and r.headers["content-length"] == str(len(INDEX))
    assert (
        r.headers["content-type"] == "text/html; charset=utf-8"
        and r.headers["accept-ranges"] == "bytes"
    )
    big = os.urandom(300_000)
    (site / "big.mp4").write_bytes(big)
    assert served.get("/big.mp4").body == big
    assert served.get("/").body == INDEX


@pytest.mark.loops("trio", "asyncio")
def test_integration_head(served):
    r = served.head("/hello.txt")
    assert r.status == 200 and r.body == b"" and r.headers["content-length"] == "10"
    assert served.get("/hello.txt").body == b"0123456789"  # the connection is still in step


@pytest.mark.loops("trio", "asyncio")
def test_integration_range(served, site):
    big = bytes(range(256)) * 100
    (site / "big.mp4").write_bytes(big)
    r = served.get("/big.mp4", headers={"Range": "bytes=1000-1999"})
    assert (
        r.status == 206
        and r.body == big[1000:2000]
        and r.headers["content-range"] == f"bytes 1000-1999/{len(big)}"
    )
    assert served.get("/big.mp4", headers={"Range": "bytes=-10"}).body == big[-10:]
    assert served.get("/big.mp4", headers={"Range": "bytes=25590-"}).body == big[25590:]
    r = served.get("/big.mp4", headers={"Range": "bytes=99999-"})
    assert r.status == 416 and r.headers["content-range"] == f"bytes */{len(big)}"


@pytest.mark.loops("trio", "asyncio")
def test_integration_304_has_no_body(served):
    etag = served.get("/hello.txt").headers["etag"]
    port = served.server.port
    replies = raw_exchange(
        port,
        [
            f"GET /hello.txt HTTP/1.1\r\nHost: x\r\nIf-None-Match: {etag}\r\n\r\n".encode(),
            b"GET /hello.txt HTTP/1.1\r\nHost: x\r\n\r\n",
        ],
    )
    assert [(head.status_code, body) for head, body in replies] == [
        (304, b""),
        (200, b"0123456789"),
    ]
    replies = raw_exchange(
        port,
        [
            b"HEAD /hello.txt HTTP/1.1\r\nHost: x\r\n\r\n",
            b"GET /hello.txt HTTP/1.1\r\nHost: x\r\nRange: bytes=2-4\r\n\r\n",
            b"GET /hello.txt HTTP/1.1\r\nHost: x\r\n\r\n",
        ],
    )
    assert [(head.status_code, body) for head, body in replies] == [
        (200, b""),
        (206, b"234"),
        (200, b"0123456789"),
    ]


@pytest.mark.loops("trio", "asyncio")
def test_integration_redirect_and_traversal(served):
    r = served.get("/docs")
    assert r.status == 301 and r.headers["location"] == "/docs/"
    assert served.get("/docs/").body == b"docs index"
    for path in ("/../secret", "/%2e%2e/secret", "/..%2fsecret", "/%5c..%5csecret"):
        r = served.get(path)
        assert r.status in (400, 404) and b"outside" not in r.body
    assert served.get("/.env").status == 404
    assert served.get("/nope").status == 404


def test_refusal_looks_like_a_missing_file(site):
    from pyweb.protocol.errorpage import error_response

    files = StaticFiles(site)
    refused = files.respond(req("/.env"))
    assert refused.status == 404 and refused.body == error_response(404).body  # no hint
    dev = StaticFiles(site, dev=True).respond(req("/.env"))
    assert b"hidden files" in dev.body
    assert b"dot segment" not in files.respond(req("/../x")).body


# --- property: whatever the path, nothing outside the root, nothing hidden -----------------


_PIECES = [
    "/",
    ".",
    "..",
    "%2e",
    "%2E",
    "%2f",
    "%2F",
    "%5c",
    "%00",
    "%",
    "\\",
    "a",
    "docs",
    "hello.txt",
    "link-out",
    "dir-out",
    ".env",
    ".well-known",
    "secret",
    "%25",
    "index.html",
]


@pytest.fixture(scope="module")
def prop_files(tmp_path_factory):
    base = tmp_path_factory.mktemp("prop")
    root = base / "site"
    root.mkdir()
    (root / "hello.txt").write_text("hi")
    (root / "docs").mkdir()
    (root / "docs" / "index.html").write_text("d")
    (root / ".env").write_text("x")
    (base / "secret").write_text("s")
    os.symlink(base / "secret", root / "link-out")
    os.symlink(base, root / "dir-out")
    return StaticFiles(root)


def test_no_path_escapes_or_reveals_hidden_files(prop_files):
    served: list[str] = []

    @settings(max_examples=500, deadline=None)
    @given(pieces=st.lists(st.sampled_from(_PIECES), max_size=8))
    def no_escape(pieces):
        r = prop_files.respond(req("/" + "".join(pieces)))
        if r is not None and isinstance(r.body, FileBody):
            event("a file was served")
            served.append(r.body.path)
            real = os.path.realpath(r.body.path)
            assert real.startswith(prop_files.root + os.sep)
            relative = os.path.relpath(real, prop_files.root)
            assert not any(part.startswith(".") for part in relative.split(os.sep))
        else:
            event("no file")

    no_escape()
    # The asserts above sit under an `if`: the property proves something only if the
    # generated paths reached files, so check that they did.
    assert served, "no generated path was served: the property checked nothing"


def test_a_sites_files_get_its_security_headers_once(site):
    """The site's security headers come with each answer for a file (HTML-only ones on
    HTML), in the same order as on a page's answer, each once: 200, 206, 304 and 416."""
    from pyweb.app.site import Site

    with pyweb.testing.serve(Site(site, hsts=60), error_log=None) as client:
        https = {"X-Forwarded-Proto": "https"}  # (HSTS over https only; 127.0.0.1 is trusted)
        html = client.get("/index.html", headers=https)
        names = [name.lower() for name, _ in html.headers.items()]
        for name in ("x-content-type-options", "x-frame-options", "referrer-policy",
                     "strict-transport-security"):  # fmt: skip
            assert names.count(name) == 1, name
        css = client.get("/style.css", headers=https)
        assert css.headers["x-content-type-options"] == "nosniff"
        assert css.headers["strict-transport-security"] == "max-age=60"
        assert "x-frame-options" not in css.headers and "referrer-policy" not in css.headers
        etag = html.headers["etag"]
        not_modified = client.get("/index.html", headers={"If-None-Match": etag})
        assert not_modified.status == 304
        assert not_modified.headers["x-content-type-options"] == "nosniff"
        assert "x-frame-options" not in not_modified.headers  # (no type said: not HTML)
        part = client.get("/hello.txt", headers={"Range": "bytes=0-1"})
        assert (part.status, part.body) == (206, b"01")
        assert part.headers.get_all("x-content-type-options") == ["nosniff"]
        beyond = client.get("/hello.txt", headers={"Range": "bytes=99-"})
        assert beyond.status == 416
        assert beyond.headers.get_all("x-content-type-options") == ["nosniff"]
