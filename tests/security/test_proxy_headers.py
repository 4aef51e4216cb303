"""Who the client is behind a trusted proxy: RFC 7239 ``Forwarded`` and ``X-Forwarded-For``
with ports, ``unknown`` and obfuscated names; an entry that does not parse names an
unknown client, never the (loopback) proxy.

Before, ``X-Forwarded-For: 203.0.113.9:5555`` or ``unknown`` from the trusted loopback
proxy left the client as 127.0.0.1: the operator pages opened and every visitor shared
one rate-limit bucket. Unit tests of the grammar (with hypothesis), then real sockets on
both loops.
"""

from __future__ import annotations

import ipaddress
import socket

import pytest
from hypothesis import given
from hypothesis import strategies as st

import pyweb.testing
from pyweb.app.site import Site
from pyweb.server.proxy import TrustedProxies, forwarded, parse_node

PROXY = "127.0.0.1:40000"
LOOPBACK = TrustedProxies("127.0.0.1").trusts


def client_of(*headers: tuple[str, str], trusts=LOOPBACK) -> tuple[str, str]:
    return forwarded(list(headers), PROXY, trusts)


# ---------------------------------------------------------------- the grammar, by example


@pytest.mark.parametrize(
    ("value", "client"),
    [
        ("203.0.113.9", "203.0.113.9:0"),
        ("203.0.113.9:5555", "203.0.113.9:0"),
        ("[2001:db8::1]:443", "[2001:db8::1]:0"),
        ("[2001:db8::1]", "[2001:db8::1]:0"),
        ("2001:db8::1", "[2001:db8::1]:0"),
        ("unknown", "unknown:0"),
        ("UNKNOWN", "unknown:0"),
        ("_hidden", "_hidden:0"),
        ("not an address", "unknown:0"),
        ("", "unknown:0"),
        ("1.2.3.4, 203.0.113.9:80", "203.0.113.9:0"),  # the right-most untrusted one
        ("garbage, 127.0.0.1", "unknown:0"),  # trusted hop, then an entry that is no node
        ("198.51.100.7, unknown", "unknown:0"),  # the walk stops at the unknown
        ("[::1]:8080", "[::1]:0"),  # a trusted proxy named loopback: believed
    ],
)
def test_x_forwarded_for(value, client):
    assert client_of(("x-forwarded-for", value))[0] == client


@pytest.mark.parametrize(
    ("value", "client", "scheme"),
    [
        ("for=192.0.2.60;proto=https;by=203.0.113.43", "192.0.2.60:0", "https"),
        ('for="[2001:db8:cafe::17]:4711"', "[2001:db8:cafe::17]:0", "http"),
        ('For="192.0.2.43:47011";Proto=HTTPS, for=127.0.0.1', "192.0.2.43:0", "https"),
        ("for=unknown", "unknown:0", "http"),
        ("for=_gazonk", "_gazonk:0", "http"),
        ("for=192.0.2.43, for=198.51.100.17", "198.51.100.17:0", "http"),
        ("for=192.0.2.43,, ", "192.0.2.43:0", "http"),  # empty list elements are skipped
        ("for=1.2.3.4;for=5.6.7.8", "unknown:0", "http"),  # a parameter twice
        ("for=", "unknown:0", "http"),
        ('for="1.2.3.4', "unknown:0", "http"),  # an open quote
        ("proto=https", "unknown:0", "https"),  # no for=: the client is not named
        ("garbage", "unknown:0", "http"),
    ],
)
def test_forwarded_rfc7239(value, client, scheme):
    assert client_of(("forwarded", value)) == (client, scheme)


def test_forwarded_is_preferred_to_x_forwarded_for():
    found = client_of(("x-forwarded-for", "198.51.100.1"), ("forwarded", "for=192.0.2.1"))
    assert found[0] == "192.0.2.1:0"


def test_several_fields_make_one_list():
    found = client_of(("forwarded", "for=192.0.2.1"), ("forwarded", "for=127.0.0.1"))
    assert found[0] == "192.0.2.1:0"


# ----------------------------------------------------------------- the grammar, by property

ipv4 = st.ip_addresses(v=4).map(str)
ipv6 = st.ip_addresses(v=6).map(str)
port = st.integers(0, 65535).map(str)
obfuscated = st.from_regex(r"_[A-Za-z0-9._-]{1,20}", fullmatch=True)


@st.composite
def nodes(draw):
    """A node as RFC 7239 §6 writes it (XFF entries are written the same ways), and the
    name the client should get from it."""
    kind = draw(st.sampled_from(["v4", "v4port", "v6", "v6port", "unknown", "obf"]))
    if kind.startswith("v4"):
        host = draw(ipv4)
        text = host + (":" + draw(port) if kind == "v4port" else "")
        return text, host
    if kind.startswith("v6"):
        host = draw(ipv6)
        text = f"[{host}]" + (":" + draw(port) if kind == "v6port" else "")
        return text, str(ipaddress.ip_address(host))
    if kind == "unknown":
        return "unknown", "unknown"
    name = draw(obfuscated)
    return name, name


@given(nodes())
def test_every_node_form_parses(node):
    text, name = node
    address, found = parse_node(text)
    assert found == name
    assert (address is None) == (name == "unknown" or name.startswith("_"))


@given(st.lists(nodes(), min_size=1, max_size=5), st.booleans())
def test_the_walk_from_the_right(chain, as_rfc7239):
    """The client is the right-most node that is not a trusted proxy (loopback here), or
    the first that is no address; a header from the proxy never leaves the proxy itself
    as the client unless a node names it."""
    if as_rfc7239:
        value = ", ".join(f'for="{text}"' for text, _ in chain)
        client, _ = client_of(("forwarded", value))
    else:
        client, _ = client_of(("x-forwarded-for", ", ".join(text for text, _ in chain)))
    expected = None
    for _text, name in reversed(chain):
        expected = name
        if name == "unknown" or name.startswith("_") or not LOOPBACK(name):
            break
    assert client.rsplit(":", 1)[0].strip("[]") == expected


@given(st.text(max_size=60), st.sampled_from(["forwarded", "x-forwarded-for"]))
def test_any_text_never_falls_back_to_the_proxy(value, field):
    """Whatever a trusted proxy sends, the client is a node of it or 'unknown': never the
    proxy's own loopback address, unless the text names loopback itself."""
    client, scheme = client_of((field, value))
    assert scheme in ("http", "https")
    if client != PROXY:
        return
    assert "127.0.0.1" in value  # the only way to get the proxy's address back


# -------------------------------------------------------------------------- over sockets

pytestmark = pytest.mark.loops("trio", "asyncio")


def raw_get(port: int, path: str, headers: str = "") -> tuple[int, bytes]:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
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
    (root / "who.py").write_text('conn.return_(f"{conn.peer} {conn.scheme}", content_type="text/plain")\n')
    return root


@pytest.mark.parametrize(
    ("header", "peer"),
    [
        ("X-Forwarded-For: 203.0.113.9:5555", "203.0.113.9:0 http"),
        ("X-Forwarded-For: [2001:db8::1]:443", "[2001:db8::1]:0 http"),
        ("X-Forwarded-For: unknown", "unknown:0 http"),
        ("X-Forwarded-For: %%%", "unknown:0 http"),
        ("Forwarded: for=192.0.2.60;proto=https", "192.0.2.60:0 https"),
        ('Forwarded: for="[2001:db8:cafe::17]:4711"', "[2001:db8:cafe::17]:0 http"),
        ("Forwarded: for=unknown", "unknown:0 http"),
        ("Forwarded: nonsense", "unknown:0 http"),
    ],
)
def test_the_page_sees_the_client(site_dir, header, peer):
    with pyweb.testing.serve(Site(site_dir)) as client:
        status, body = raw_get(client.server.port, "/who", header + "\r\n")
        assert status == 200
        assert body.decode() == peer


@pytest.mark.parametrize(
    "header",
    [
        "X-Forwarded-For: 203.0.113.9:5555",
        "X-Forwarded-For: [2001:db8::1]:443",
        "X-Forwarded-For: unknown",
        "X-Forwarded-For: not-an-address",
        "Forwarded: for=unknown",
        "Forwarded: for=_hidden",
        "Forwarded: for=203.0.113.9",
        "Forwarded: ;;;",
    ],
)
def test_operator_pages_stay_closed(site_dir, header):
    """From the trusted loopback proxy, a visitor it names in any form is not the operator."""
    with pyweb.testing.serve(Site(site_dir), status=True) as client:
        port = client.server.port
        assert raw_get(port, "/_pyweb/status")[0] == 200  # the operator, directly
        assert raw_get(port, "/_pyweb/status", header + "\r\n")[0] == 403
