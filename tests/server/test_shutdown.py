"""Graceful shutdown: stop accepting, finish requests in flight (their replies say
``Connection: close``), close idle persistent connections at once, then serve() returns."""

from __future__ import annotations

import socket
import threading

import pytest

pytestmark = [pytest.mark.timeout(30), pytest.mark.loops("trio", "asyncio")]


@pytest.mark.parametrize("scheduler", ["one-to-one", "pool", "nothread"])
def test_request_in_flight_is_finished_with_connection_close(kit, scheduler):
    srv = kit.RunningServer(kit.app, scheduler=scheduler, pool_size=2).start()
    try:
        with srv.connect() as c:
            c.send(kit.build("GET", "/sleep?0.5"))
            assert kit.state.started.wait(5)  # the handler is running now
            srv.shutdown()
            r = c.read_response()
            assert r.status == 200 and r.body == b"slept"
            assert r.headers["connection"] == "close"
            assert c.closed_by_server()
        assert srv.returned.wait(5)  # serve() returned
    finally:
        srv.stop()


def test_idle_keep_alive_connections_are_closed_at_once(kit):
    srv = kit.RunningServer(kit.app, keepalive_timeout=60.0).start()
    try:
        with srv.connect() as a, srv.connect() as b:
            assert a.request("GET", "/hello").body == b"hello"
            assert b.request("GET", "/hello").body == b"hello"
            srv.shutdown()
            assert a.closed_by_server(timeout=3) and b.closed_by_server(timeout=3)
        assert srv.returned.wait(5)
    finally:
        srv.stop()


def test_no_new_connections_after_shutdown(kit):
    srv = kit.RunningServer(kit.app).start()
    port = srv.port
    srv.stop()
    assert srv.returned.is_set()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=2).recv(1)


def test_shutdown_waits_for_a_busy_connection_but_not_an_idle_one(kit):
    # (an idle connection is still watched for close_grace: a request may be on its way)
    srv = kit.RunningServer(kit.app, keepalive_timeout=60.0, close_grace=0.1).start()
    try:
        idle = srv.connect()
        assert idle.request("GET", "/hello").status == 200
        busy = srv.connect()
        busy.send(kit.build("GET", "/sleep?0.5"))
        assert kit.state.started.wait(5)
        srv.shutdown()
        assert idle.closed_by_server(timeout=3)
        assert not srv.returned.is_set()  # the sleeping request is still in flight
        done = threading.Event()
        assert busy.read_response().body == b"slept"
        done.set()
        assert srv.returned.wait(5)
        idle.close()
        busy.close()
    finally:
        srv.stop()
