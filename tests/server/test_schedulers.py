"""Hop's schedulers (§2.4): each serves concurrent clients correctly; nothread serves them
one after the other, one-to-one all at once, pool as many at once as it has tasks."""

from __future__ import annotations

import errno
import socket
import threading

import pytest

from tests.helpers import until

pytestmark = [pytest.mark.timeout(30), pytest.mark.loops("trio", "asyncio")]


def _clients_in_parallel(kit, srv, n: int, target: str) -> list[bytes]:
    results: list[bytes | BaseException] = [b""] * n

    def client(i: int) -> None:
        try:
            with srv.connect(timeout=10) as c:
                results[i] = c.request("GET", target, [("Connection", "close")]).body
        except BaseException as exc:  # reported by the assertion below
            results[i] = exc

    threads = [threading.Thread(target=client, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    return results  # type: ignore[return-value]


@pytest.mark.parametrize("scheduler", ["one-to-one", "pool", "nothread"])
def test_each_scheduler_serves_concurrent_clients(kit, scheduler):
    with kit.running(scheduler=scheduler, pool_size=3) as srv:
        results = _clients_in_parallel(kit, srv, 12, "/echo-path/x")
        assert results == [b"/echo-path/x"] * 12


@pytest.mark.parametrize(
    ("scheduler", "expected"),
    [
        ("one-to-one", 4),
        ("pool", 2),
        ("nothread", 1),
    ],
)
def test_how_many_requests_run_at_once(kit, scheduler, expected):
    with kit.running(scheduler=scheduler, pool_size=2) as srv:
        results = _clients_in_parallel(kit, srv, 4, "/sleep?0.5")
        assert results == [b"slept"] * 4
    assert kit.state.max_active == expected


@pytest.mark.parametrize("scheduler", ["one-to-one", "pool", "nothread"])
def test_each_scheduler_keeps_connections_alive(kit, scheduler):
    with kit.running(scheduler=scheduler) as srv, srv.connect() as c:
        for i in range(5):
            assert c.request("GET", f"/echo-path/{i}").body == f"/echo-path/{i}".encode()


def test_unknown_scheduler_is_refused():
    from pyweb.server import ServerConfig

    with pytest.raises(ValueError, match="unknown scheduler"):
        ServerConfig(scheduler="cohort")


def test_a_connection_never_sees_the_context_of_the_one_before(kit):
    """One-to-one reuses the task of a finished connection for the next one: a ContextVar a
    page set must not carry over (each connection starts as a new task would), whether the
    page's first step is the whole request or it waits and resumes."""
    import contextvars

    from pyweb import runtime
    from pyweb.protocol import Response

    seen = contextvars.ContextVar("seen", default="nothing")

    async def handler(ctx):
        before = seen.get()
        seen.set(ctx.request.target)
        if ctx.request.target.endswith("/wait"):
            await runtime.sleep(0.01)  # the rest of the page runs in a later step of its task
        return Response(200, [], f"{before} {seen.get()}".encode())

    with kit.running(handler) as srv:
        for target in ["/1", "/2/wait", "/3", "/4/wait", "/5"]:
            with srv.connect(timeout=10) as c:  # one at a time: the same task serves each
                body = c.request("GET", target, [("Connection", "close")]).body
            assert body == f"nothing {target}".encode()


@pytest.mark.parametrize(
    ("error", "pauses"),
    [
        (OSError(errno.EMFILE, "Too many open files"), True),
        (OSError(errno.ENFILE, "Too many open files in system"), True),
        (OSError(errno.ENOBUFS, "No buffer space available"), True),
        (ConnectionAbortedError(errno.ECONNABORTED, "Software caused connection abort"), False),
        (OSError(errno.EPROTO, "Protocol error"), False),
    ],
)
def test_only_running_out_of_resources_pauses_accepting(error: OSError, pauses: bool) -> None:
    """Both loops' schedulers stop accepting for a moment when accept() runs out of
    descriptors (connections must finish first), but a connection that failed before it
    was accepted costs only itself: the next one is accepted at once."""
    from pyweb.server.accepting import pauses_accepting

    assert pauses_accepting(error) is pauses


def _refused(port: int) -> bool:
    """Does a new client find the port closed?"""
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    except ConnectionRefusedError:
        return True
    return False


@pytest.mark.parametrize("scheduler", ["one-to-one", "pool", "nothread"])
def test_shutdown_stops_accepting_while_a_request_runs(kit, scheduler):
    """Stopping a scheduler ends the wait at accept and closes the listener at once (new
    clients are refused), while the connection being served finishes its request: for
    pool the task waiting at accept is stopped, for nothread nobody waits there."""
    from pyweb import runtime
    from pyweb.protocol import Response

    started, release = threading.Event(), threading.Event()

    async def handler(ctx):
        started.set()
        await runtime.to_thread(release.wait, 20)
        return Response(200, [], b"done")

    with kit.running(handler, scheduler=scheduler, pool_size=2) as srv:
        try:
            with srv.connect(timeout=10) as c:
                c.send(kit.build("GET", "/"))
                assert started.wait(10)
                srv.shutdown()
                until(lambda: _refused(srv.port), "the listener to close")
                release.set()
                reply = c.read_response()
                assert reply.body == b"done" and reply.headers["connection"] == "close"
            assert srv.returned.wait(10)
        finally:
            release.set()
