"""WebSockets: the traps run before the upgrade, and the handler knows who is there.

Before: under a ``/members/*`` login trap a stranger opened ``/members/ws`` and read the
feed, and a handler could not see the session or the user. Now the handshake is a request
like any other: a stranger gets the trap's answer (a redirect to the login page), never a
socket; a member's handler gets ``ws.session`` and ``ws.user``.
"""

from __future__ import annotations

import socket

import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from .conftest import Served

pytestmark = pytest.mark.loops("trio", "asyncio")


def _ws_url(served: Served, path: str) -> str:
    return served._base.replace("http://", "ws://") + path


def _open(served: Served, path: str) -> str:
    cookie = served._cookie_header(path)
    headers = {"Cookie": cookie} if cookie else {}
    with connect(_ws_url(served, path), additional_headers=headers, open_timeout=10) as ws:
        return str(ws.recv(timeout=10))


def _handshake(served: Served, path: str) -> tuple[int, dict[str, str]]:
    """The answer to a WebSocket opening handshake for ``path``, read off a raw socket (a
    client library would follow a redirect)."""
    host, port = served._base.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(
            f"GET {path} HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\n"
            "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
            "Sec-WebSocket-Version: 13\r\n\r\n".encode()
        )
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = sock.recv(4096)
            if not chunk:
                break
            head += chunk
    lines = head.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
    fields = dict(line.split(": ", 1) for line in lines[1:] if ": " in line)
    return int(lines[0].split()[1]), {k.lower(): v for k, v in fields.items()}


@pytest.mark.parametrize("path", ["/members/ws", "/MEMBERS/ws", "/members//ws"])
def test_a_stranger_gets_no_socket(served: Served, path: str) -> None:
    status, fields = _handshake(served, path)
    assert status in (303, 404), (path, status)
    if status == 303:
        assert fields["location"].startswith("/login")
    with pytest.raises(InvalidStatus):  # a client library: no socket either
        _open(served, path)


def test_the_open_socket_upgrades(served: Served) -> None:
    assert _handshake(served, "/open/ws")[0] == 101


def test_a_member_gets_the_socket_with_session_and_user(served: Served) -> None:
    served.login("carol")
    token = served.get("/csrf").text
    saved = served.post(
        "/account_update", {"email": "carol@example.com"}, headers={"X-CSRF-Token": token}
    )
    assert saved.status == 200, saved.text[:300]
    assert _open(served, "/members/ws") == "user=carol email=carol@example.com"


def test_an_open_socket_tells_a_stranger_from_a_member(served: Served) -> None:
    assert _open(served, "/open/ws") == "user=None"
    served.login("dave")
    assert _open(served, "/open/ws") == "user=dave"
