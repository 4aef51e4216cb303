"""The server's own use of pyweb.events, over real sockets: ``ctx.client_gone_evt()``,
``ctx.log_error``, Python ``logging`` records in the error log, and the control broadcast
(RELOAD is ignored by open connections, SHUTDOWN closes idle ones)."""

from __future__ import annotations

import logging
import socket
import struct
import threading

import pytest

from pyweb import runtime
from pyweb.events import select, timeout, wrap
from pyweb.protocol.response import Response
from pyweb.server.control import RELOAD, SHUTDOWN
from tests.helpers import until

pytestmark = [pytest.mark.timeout(30), pytest.mark.loops("trio", "asyncio")]

TEXT = [("Content-Type", "text/plain")]


class Waits:
    """What the long-waiting handler saw: how many are waiting, how each wait ended."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.waiting = 0
        self.started = threading.Event()
        self.outcomes: list[str] = []
        self.finished = threading.Event()


def long_wait_handler(waits: Waits):
    async def handler(ctx):
        if ctx.request.target == "/hello":
            return Response(200, TEXT, b"hello")
        seconds = float(ctx.request.target.partition("?")[2] or 20)
        with waits.lock:
            waits.waiting += 1
        waits.started.set()
        try:
            outcome = await select(
                wrap(ctx.client_gone_evt(), lambda _: "gone"),
                wrap(timeout(seconds), lambda _: "timeout"),
            )
        finally:
            with waits.lock:
                waits.waiting -= 1
        waits.outcomes.append(outcome)
        waits.finished.set()
        return Response(200, TEXT, outcome.encode())

    return handler


def test_closing_the_socket_frees_the_waiting_handler_at_once(kit):
    waits = Waits()
    with kit.running(long_wait_handler(waits)) as srv:
        c = srv.connect()
        c.send(kit.build("GET", "/wait?20"))
        assert waits.started.wait(5) and waits.waiting == 1
        c.close()
        # Observable, not timed: the waiter count drops long before the 20 s timeout.
        assert waits.finished.wait(5)
        assert waits.outcomes == ["gone"] and waits.waiting == 0
        until(lambda: not srv.server.connections, "the connection to close")


def test_a_reset_counts_as_gone(kit):
    waits = Waits()
    with kit.running(long_wait_handler(waits)) as srv:
        c = srv.connect()
        c.send(kit.build("GET", "/wait?20"))
        assert waits.started.wait(5)
        # SO_LINGER with a zero timeout: close() sends RST instead of FIN.
        c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        c.close()
        assert waits.finished.wait(5) and waits.outcomes == ["gone"]


def test_a_client_that_stays_is_not_gone_and_the_connection_goes_on(kit):
    waits = Waits()
    with kit.running(long_wait_handler(waits)) as srv, srv.connect() as c:
        assert c.request("GET", "/wait?0.3").body == b"timeout"
        # The watch let go of the socket: the next request on the connection works.
        assert c.request("GET", "/hello").body == b"hello"
        assert c.request("GET", "/wait?0.2").body == b"timeout"
        assert waits.outcomes == ["timeout", "timeout"]


def test_a_pipelined_request_is_not_mistaken_for_a_hang_up(kit):
    waits = Waits()
    with kit.running(long_wait_handler(waits)) as srv, srv.connect() as c:
        # The second request sits unread in the socket while the first handler waits.
        c.send(kit.build("GET", "/wait?0.5") + kit.build("GET", "/hello"))
        assert c.read_response().body == b"timeout"
        assert c.read_response().body == b"hello"


def test_hang_up_behind_a_pipelined_request_is_still_noticed(kit):
    waits = Waits()
    with kit.running(long_wait_handler(waits)) as srv:
        c = srv.connect()
        c.send(kit.build("GET", "/wait?20") + kit.build("GET", "/hello"))
        assert waits.started.wait(5)
        c.close()
        assert waits.finished.wait(5) and waits.outcomes == ["gone"]


def test_log_error_writes_the_message_the_request_and_the_traceback(kit):
    async def handler(ctx):
        try:
            {}["missing"]
        except KeyError as exc:
            ctx.log_error("the cache lost a key", exc)
        return Response(200, TEXT, b"ok")

    with kit.running(handler) as srv, srv.connect() as c:
        assert c.request("GET", "/page?x=1").body == b"ok"
        until(lambda: "the cache lost a key" in srv.error_log.getvalue(), "the log line")
    text = srv.error_log.getvalue()
    assert "(request: GET /page?x=1 HTTP/1.1)" in text
    assert "KeyError: 'missing'" in text and "Traceback" in text


def test_python_logging_records_reach_the_error_log_while_the_server_runs(kit):
    lib = logging.getLogger("pyweb.testlib")

    async def handler(ctx):
        lib.info("not shown: below WARNING")
        lib.warning("redis unreachable at %s", "127.0.0.1:1")
        await runtime.to_thread(lambda: lib.error("from a worker thread"))
        return Response(200, TEXT, b"ok")

    with kit.running(handler) as srv, srv.connect() as c:
        assert c.request().body == b"ok"
        until(lambda: "from a worker thread" in srv.error_log.getvalue(), "the records")
    text = srv.error_log.getvalue()
    assert "[warning] pyweb.testlib: redis unreachable at 127.0.0.1:1" in text
    assert "[error] pyweb.testlib: from a worker thread" in text
    assert "not shown" not in text
    # The bridge is gone with the server.
    assert not any(type(h).__name__ == "PythonLogBridge" for h in logging.getLogger().handlers)


def test_a_sites_own_logger_reaches_the_error_log_in_its_format(kit):
    # Before: only the "pyweb" logger was bridged; getLogger("mysite") went to raw stderr
    # (through Python's last-resort handler), outside the error log and its format.
    site = logging.getLogger("mysite")

    async def handler(ctx):
        site.warning("the rate service is down")
        return Response(200, TEXT, b"ok")

    with kit.running(handler) as srv, srv.connect() as c:
        assert c.request().body == b"ok"
        until(lambda: "the rate service is down" in srv.error_log.getvalue(), "the record")
    assert "[warning] mysite: the rate service is down" in srv.error_log.getvalue()


def test_reload_message_leaves_idle_connections_open_and_shutdown_closes_them(kit):
    with kit.running(None, keepalive_timeout=60.0) as srv, srv.connect() as c:
        assert c.request().body == b"hello"
        srv.call(srv.server.broadcast.send, RELOAD)
        assert not c.closed_by_server(timeout=0.3)
        assert c.request().body == b"hello"
        srv.shutdown()
        assert c.closed_by_server(timeout=3)
        assert srv.returned.wait(5)


def test_shutdown_is_one_message_on_the_broadcast_on_both_loops(kit):
    """A handler listening on the server's broadcast hears SHUTDOWN when shutdown begins
    (the asyncio server sent RELOAD but not SHUTDOWN before its shutdown was base.py's)."""
    listening = threading.Event()
    servers: list = []

    async def handler(ctx):
        port = servers[0].broadcast.port()  # sees every message from now on
        listening.set()
        heard = []
        while not heard or heard[-1] != SHUTDOWN:
            heard.append(await select(port.recv_evt(), wrap(timeout(20), lambda _: "timeout")))
            if heard[-1] == "timeout":
                break
        return Response(200, TEXT, " ".join(heard).encode())

    with kit.running(handler) as srv, srv.connect() as c:
        servers.append(srv.server)
        c.send(kit.build("GET", "/listen"))
        assert listening.wait(5)
        srv.call(srv.server.broadcast.send, RELOAD)
        srv.shutdown()
        r = c.read_response()
        assert r.body == f"{RELOAD} {SHUTDOWN}".encode()
        assert r.headers["connection"] == "close"


def test_a_fresh_connection_is_served_even_if_shutdown_comes_first(kit):
    """A client that has connected but not yet sent its request is not an idle keep-alive
    connection: graceful shutdown waits for its request and answers it (Connection: close)."""
    srv = kit.RunningServer(kit.app).start()
    try:
        c = srv.connect()
        until(lambda: srv.server.connections, "the connection to be accepted")
        until(lambda: srv.server.slots.fresh, "its first wait for bytes")
        srv.shutdown()
        c.send(kit.build("GET", "/hello"))
        r = c.read_response()
        assert r.status == 200 and r.headers["connection"] == "close"
        assert c.closed_by_server()
        c.close()
        assert srv.returned.wait(5)
    finally:
        srv.stop()
