"""Operators and proxies, over real sockets: ``/_pyweb/stats`` is guarded like
``/_pyweb/status``; ``X-Forwarded-For``/``-Proto`` are believed from trusted proxies only
(``conn.peer``, ``conn.scheme``, the access log); the exchange page never takes a port from
the ``Host`` header.

The non-loopback client is real: the test connects from the machine's own non-loopback
address when it has one (skipped otherwise), so the peer the server sees is not 127.0.0.1.
"""

from __future__ import annotations

import io
import socket

import pytest

import pyweb.testing
from pyweb.app.site import Site
from pyweb.server.proxy import TrustedProxies, forwarded

pytestmark = pytest.mark.loops("trio", "asyncio")


def _outside_address() -> str | None:
    """An address of this machine that is not loopback (what a remote client looks like)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.connect(("192.0.2.1", 9))  # no packet is sent: only the route is looked up
        address = s.getsockname()[0]
    except OSError:
        return None
    finally:
        s.close()
    return None if address.startswith("127.") else address


OUTSIDE = _outside_address()


def raw_get(
    port: int, path: str, headers: str = "", source: str | None = None
) -> tuple[int, bytes]:
    with socket.create_connection(
        (source or "127.0.0.1", port), timeout=10, source_address=(source, 0) if source else None
    ) as s:
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n{headers}\r\n".encode())
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), body


@pytest.fixture(scope="module")
def site_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("proxied") / "pages"
    root.mkdir()
    (root / "who.py").write_text('conn.return_(f"{conn.peer} {conn.scheme}")\n')
    return root


def test_stats_page_is_guarded_like_status(site_dir):
    site = Site(site_dir, profile_alloc=True)
    with pyweb.testing.serve(site, host="0.0.0.0") as client:
        port = client.server.port
        assert raw_get(port, "/_pyweb/stats")[0] == 200  # loopback: the operator
        assert raw_get(port, "/_pyweb/stats.json")[0] == 200
        # a visitor behind the (trusted, loopback) proxy is not the operator
        forwarded_hdr = "X-Forwarded-For: 203.0.113.9\r\n"
        assert raw_get(port, "/_pyweb/stats", forwarded_hdr)[0] == 403
        assert raw_get(port, "/%5Fpyweb/stats", forwarded_hdr)[0] == 403  # encoded: the same
        if OUTSIDE is not None:  # a real non-loopback client
            assert raw_get(port, "/_pyweb/stats", source=OUTSIDE)[0] == 403
            assert raw_get(port, "/_pyweb/stats.json", source=OUTSIDE)[0] == 403


def test_stats_page_opens_to_the_token(site_dir):
    if OUTSIDE is None:
        pytest.skip("no non-loopback address on this machine")
    site = Site(site_dir, profile_alloc=True)
    with pyweb.testing.serve(site, host="0.0.0.0", status_token="s3cret") as client:
        port = client.server.port
        assert raw_get(port, "/_pyweb/stats", source=OUTSIDE)[0] == 403
        auth = "Authorization: Bearer s3cret\r\n"
        assert raw_get(port, "/_pyweb/stats", auth, source=OUTSIDE)[0] == 200
        assert raw_get(port, "/_pyweb/stats", "Authorization: Bearer no\r\n", OUTSIDE)[0] == 403


def test_status_page_behind_a_proxy_sees_the_visitor(site_dir):
    with pyweb.testing.serve(site_dir, status=True) as client:
        port = client.server.port
        assert raw_get(port, "/_pyweb/status")[0] == 200
        assert raw_get(port, "/_pyweb/status", "X-Forwarded-For: 198.51.100.4\r\n")[0] == 403


def test_forwarded_fields_name_the_client_and_scheme(site_dir):
    log = io.StringIO()
    with pyweb.testing.serve(site_dir, access_log=log) as client:
        port = client.server.port
        status, body = raw_get(
            port, "/who", "X-Forwarded-For: 203.0.113.9\r\nX-Forwarded-Proto: https\r\n"
        )
        assert (status, body) == (200, b"203.0.113.9:0 https")
        # a client that claims to be another in front of the trusted proxy: the proxy
        # appended what it saw (198.51.100.7); that one is believed, the forged one not
        status, body = raw_get(port, "/who", "X-Forwarded-For: 10.9.9.9, 198.51.100.7\r\n")
        assert body == b"198.51.100.7:0 http"
        assert raw_get(port, "/who")[1].startswith(b"127.0.0.1:")  # no field: the peer
    lines = log.getvalue().splitlines()
    assert lines[0].startswith("203.0.113.9 ") and lines[1].startswith("198.51.100.7 ")


def test_untrusted_peers_cannot_forge_forwarding(site_dir):
    # The proxy trusted is elsewhere: the loopback client is not a proxy, its fields are lies.
    with pyweb.testing.serve(site_dir, forwarded_allow_ips="10.0.0.1") as client:
        status, body = raw_get(
            client.server.port, "/who", "X-Forwarded-For: 1.2.3.4\r\nX-Forwarded-Proto: https\r\n"
        )
        assert body.startswith(b"127.0.0.1:") and body.endswith(b" http")
    with pyweb.testing.serve(site_dir, proxy_headers=False) as client:
        body = raw_get(client.server.port, "/who", "X-Forwarded-For: 1.2.3.4\r\n")[1]
        assert body.startswith(b"127.0.0.1:")
    if OUTSIDE is not None:  # a real outside client sending the fields is not believed
        with pyweb.testing.serve(site_dir, host="0.0.0.0") as client:
            body = raw_get(
                client.server.port, "/who", "X-Forwarded-For: 127.0.0.1\r\n", source=OUTSIDE
            )[1]
            assert body.startswith(OUTSIDE.encode() + b":")


def test_forwarded_parsing():
    trusts = TrustedProxies("127.0.0.1, 10.0.0.0/8").trusts
    hdrs = [("x-forwarded-for", "203.0.113.9, 10.1.2.3")]
    assert forwarded(hdrs, "127.0.0.1:5", trusts) == ("203.0.113.9:0", "http")
    assert forwarded([("x-forwarded-for", "10.1.1.1")], "127.0.0.1:5", trusts)[0] == "10.1.1.1:0"
    assert forwarded([("x-forwarded-for", "junk, 1.1.1.1")], "p:1", trusts)[0] == "1.1.1.1:0"
    assert forwarded([("x-forwarded-for", "2001:db8::1")], "p:1", trusts)[0] == "[2001:db8::1]:0"
    assert forwarded([("x-forwarded-proto", "gopher")], "p:1", trusts) == ("p:1", "http")
    assert TrustedProxies("*").trusts("8.8.8.8")
    with pytest.raises(ValueError, match="not-an-ip"):
        TrustedProxies("not-an-ip")


def _two_on_one_connection(port: int, first: str, second: str) -> list[bytes]:
    """Two requests on one keep-alive connection, each with its own fields; their bodies."""
    bodies = []
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        for headers, close in ((first, ""), (second, "Connection: close\r\n")):
            s.sendall(f"GET /who HTTP/1.1\r\nHost: x\r\n{close}{headers}\r\n".encode())
            data = b""
            while b"\r\n\r\n" not in data:
                data += s.recv(65536)
            head, _, body = data.partition(b"\r\n\r\n")
            length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
            while len(body) < length:
                body += s.recv(65536)
            bodies.append(body)
    return bodies


def test_each_request_of_a_connection_is_judged_by_its_own_fields(site_dir):
    # The connection asks whether its peer is a trusted proxy once (at the first request
    # with forwarding fields) and remembers the answer for the requests after it.
    fields = "X-Forwarded-For: 203.0.113.9\r\n"
    with pyweb.testing.serve(site_dir) as client:
        first, second = _two_on_one_connection(client.server.port, fields, "")
        assert first == b"203.0.113.9:0 http" and second.startswith(b"127.0.0.1:")
        first, second = _two_on_one_connection(client.server.port, "", fields)
        assert first.startswith(b"127.0.0.1:") and second == b"203.0.113.9:0 http"
        bodies = _two_on_one_connection(client.server.port, fields, fields)
        assert bodies == [b"203.0.113.9:0 http"] * 2
    with pyweb.testing.serve(site_dir, forwarded_allow_ips="10.0.0.1") as client:
        bodies = _two_on_one_connection(client.server.port, fields, fields)
        assert all(body.startswith(b"127.0.0.1:") for body in bodies)
