"""Timeouts (Marlow §4) with short configured values, and the connection limit: a client
that stops half-way is disconnected (408 when it had sent part of a request), an idle
persistent connection is closed, a client that doesn't read is dropped, and none of them
holds up another client."""

from __future__ import annotations

import socket
import struct
import time

import pytest

pytestmark = [pytest.mark.timeout(30), pytest.mark.loops("trio", "asyncio")]

SHORT = dict(
    header_timeout=0.3, keepalive_timeout=0.3, body_timeout=0.3, send_timeout=0.3,
    first_byte_timeout=0.3,
)  # fmt: skip


def test_half_a_header_then_silence_gets_408_and_close(kit):
    with kit.running(**SHORT) as srv, srv.connect() as c:
        c.send(b"GET /hello HTTP/1.1\r\nHost: te")
        r = c.read_response()
        assert r.status == 408 and r.headers["connection"] == "close"
        assert c.closed_by_server()


def test_connecting_and_sending_nothing_is_closed_silently(kit):
    with kit.running(**SHORT) as srv, srv.connect() as c:
        assert c.closed_by_server(timeout=3)


def test_idle_keep_alive_connection_is_closed_silently(kit):
    with kit.running(**SHORT) as srv, srv.connect() as c:
        assert c.request("GET", "/hello").body == b"hello"
        assert c.closed_by_server(timeout=3)


def test_keep_alive_connection_survives_within_the_timeout(kit):
    with kit.running(keepalive_timeout=5.0) as srv, srv.connect() as c:
        assert c.request("GET", "/hello").body == b"hello"
        assert not c.closed_by_server(timeout=0.3)
        assert c.request("GET", "/hello").body == b"hello"


def test_body_that_stops_arriving_gets_408(kit):
    with kit.running(**SHORT) as srv, srv.connect() as c:
        c.send(kit.build("POST", "/echo", [("Content-Length", "10")]) + b"abc")
        r = c.read_response()
        assert r.status == 408 and r.headers["connection"] == "close"
        assert c.closed_by_server()


def test_a_client_that_does_not_read_is_dropped(kit):
    with kit.running(**SHORT) as srv:
        stuck = socket.create_connection(("127.0.0.1", srv.port))
        stuck.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        stuck.sendall(kit.build("GET", "/big"))  # 8 MiB that this client never reads
        with srv.connect() as other:  # meanwhile others are served
            assert other.request("GET", "/hello").body == b"hello"
        # After send_timeout the server gives up on it: the connection is gone from the
        # server (what the kernel had already buffered may still trickle to the client).
        deadline = time.monotonic() + 5
        while srv.server.connections and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not srv.server.connections
        stuck.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        stuck.close()


def test_a_stuck_client_does_not_block_others(kit):
    with kit.running(header_timeout=10.0) as srv, srv.connect() as stuck:
        stuck.send(b"GET /hello HTTP/1.1\r\nHo")  # and never more
        for _ in range(3):
            with srv.connect(timeout=2.0) as c:
                assert c.request("GET", "/hello").body == b"hello"
        assert not stuck.closed_by_server(timeout=0.1)  # still waiting, not dropped


def test_with_the_pool_an_idle_connection_gives_way_to_one_in_the_backlog(kit):
    # The pool scheduler's limit is its number of tasks (Hop §2.4.5); a newcomer in the
    # backlog no longer waits for the idle connection's keep-alive timeout (scheduling.py).
    with kit.running(max_connections=1, scheduler="pool", pool_size=1,
                     keepalive_timeout=60.0) as srv:  # fmt: skip
        first = srv.connect()
        assert first.request("GET", "/hello").body == b"hello"  # connection 1 idles in service
        second = srv.connect()  # completes in the kernel backlog
        second.send(kit.build("GET", "/echo-path/second"))
        second.sock.settimeout(5)
        assert second.read_response().body == b"/echo-path/second"
        assert first.closed_by_server(timeout=3)
        second.close()


@pytest.mark.parametrize(
    ("config", "sleep"),
    [
        # one-to-one (slots.py): every slot busy with a request, the 503 at once
        pytest.param({}, 1.0, id="one-to-one"),
        # the pool's one task in a request, nothing for the door to close: the 503 after
        # the door's patience (a second: scheduling.py), not a wait in the backlog
        pytest.param({"scheduler": "pool", "pool_size": 1}, 2.5, id="pool"),
    ],
)
def test_with_every_slot_busy_a_newcomer_gets_the_fast_503(kit, config, sleep):
    with kit.running(max_connections=1, **config) as srv:
        busy = srv.connect()
        busy.send(kit.build("GET", f"/sleep?{sleep}"))
        assert kit.state.started.wait(5)
        second = srv.connect()
        second.sock.settimeout(5)
        r = second.request("GET", "/hello")
        assert r.status == 503 and r.headers["retry-after"] == "1"
        assert busy.read_response().body == b"slept"  # the request in progress is untouched
        busy.close()
        second.close()


def test_at_the_limit_an_idle_connection_makes_room_for_a_newcomer(kit):
    # one-to-one (slots.py): the idle keep-alive connection is closed, the newcomer served
    with kit.running(max_connections=1, keepalive_timeout=60.0) as srv:
        first = srv.connect()
        assert first.request("GET", "/hello").body == b"hello"  # now idle, keep-alive
        spare = srv.connect()  # (idle connections have room for as many again as slots)
        assert spare.request("GET", "/hello").body == b"hello"
        second = srv.connect()
        second.sock.settimeout(5)
        assert second.request("GET", "/echo-path/second").body == b"/echo-path/second"
        assert first.closed_by_server(timeout=3)
        second.close()
        spare.close()


def test_a_stalled_unread_body_after_the_reply_is_closed_without_a_second_reply(kit):
    with kit.running(**SHORT) as srv, srv.connect() as c:
        c.send(kit.build("POST", "/ignore", [("Content-Length", "10")]) + b"abc")
        r = c.read_response()
        assert r.status == 200 and "connection" not in r.headers  # it will be drained...
        assert c.closed_by_server()  # ...but the rest never comes: closed, no 408 after a 200
