"""The listening socket (listener.py) and the client-gone watch (gone.py) on both loops.

Neither is trio's own: they wait through :mod:`pyweb.runtime`. So each test runs one
coroutine on trio and on asyncio, over real sockets on 127.0.0.1: accept hands over a
non-blocking socket with Nagle off and the peer as text; closing the listener with
``close_socket`` wakes the task blocked in accept with the runtime's
``ClosedResourceError`` (how shutdown stops an accept loop); a watch sees the client hang
up, and does not mistake a client that stays for one that left.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Awaitable, Callable

import pytest
import trio

from pyweb import runtime
from pyweb.events import select, timeout, wrap
from pyweb.server.listener import accept, close_socket, open_listener
from pyweb.server.trio.gone import ClientWatch

pytestmark = [pytest.mark.timeout(30), pytest.mark.loops("trio", "asyncio")]


def run_on(loop: str, main: Callable[[], Awaitable[None]]) -> None:
    if loop == "trio":
        trio.run(main)
    else:
        asyncio.run(main())  # type: ignore[arg-type]


def connect(port: int) -> socket.socket:
    """A blocking client; connect() returns once the kernel queued it (no accept needed)."""
    return socket.create_connection(("127.0.0.1", port), timeout=5)


def test_accept_hands_over_a_nonblocking_socket_without_nagle(loop):
    async def main() -> None:
        listener = await open_listener("127.0.0.1", 0)
        try:
            client = connect(listener.getsockname()[1])
            sock, peer = await accept(listener)
            with client, sock:
                host, port = client.getsockname()
                assert peer == f"{host}:{port}"
                assert not sock.getblocking()
                assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
                client.sendall(b"ping")
                await runtime.current().wait_readable(sock)
                assert sock.recv(4) == b"ping"
        finally:
            close_socket(listener)

    run_on(loop, main)


def test_close_socket_wakes_the_task_blocked_in_accept(loop):
    async def main() -> None:
        rt = runtime.current()
        listener = await open_listener("127.0.0.1", 0)
        outcome: list[str] = []
        done = rt.Event()

        async def accept_one() -> None:
            try:
                await accept(listener)
                outcome.append("accepted")
            except rt.ClosedResourceError:
                outcome.append("closed")
            done.set()

        rt.spawn_background(accept_one)
        # Let it reach its wait: nothing to accept, so it parks on the listener.
        for _ in range(10):
            await rt.sleep(0)
        assert outcome == []
        close_socket(listener)
        with rt.move_on_after(10):
            await done.wait()
        assert outcome == ["closed"]
        assert listener.fileno() == -1

    run_on(loop, main)


async def _gone_or_timeout(watch: ClientWatch, seconds: float) -> str:
    return await select(
        wrap(watch.evt(), lambda _: "gone"), wrap(timeout(seconds), lambda _: "timeout")
    )


def test_a_watch_sees_the_client_hang_up(loop):
    async def main() -> None:
        rt = runtime.current()
        listener = await open_listener("127.0.0.1", 0)
        client = connect(listener.getsockname()[1])
        sock, _ = await accept(listener)
        watch = ClientWatch(sock)
        # Still there: the wait ends by its timeout, and the watch lets go of the socket.
        assert await _gone_or_timeout(watch, 0.05) == "timeout"
        assert not watch.gone

        async def hang_up_soon() -> None:  # once the watch waits on the socket
            client.close()

        rt.spawn_background(hang_up_soon)
        assert await _gone_or_timeout(watch, 20) == "gone"
        assert watch.gone
        watch.stop()
        sock.close()
        close_socket(listener)

    run_on(loop, main)


def test_unread_bytes_are_not_a_hang_up(loop):
    async def main() -> None:
        listener = await open_listener("127.0.0.1", 0)
        client = connect(listener.getsockname()[1])
        sock, _ = await accept(listener)
        client.sendall(b"GET / HTTP/1.1\r\n\r\n")  # a pipelined request, left unread
        await runtime.current().wait_readable(sock)
        watch = ClientWatch(sock)
        assert await _gone_or_timeout(watch, 0.3) == "timeout"
        assert not watch.gone
        watch.stop()
        assert sock.recv(100).startswith(b"GET /")  # nothing was consumed
        client.close()
        sock.close()
        close_socket(listener)

    run_on(loop, main)


def _ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as probe:
            probe.bind(("::1", 0))
    except OSError:
        return False
    return True


@pytest.mark.skipif(not _ipv6_loopback(), reason="no IPv6 loopback on this machine")
def test_both_servers_listen_on_an_ipv6_host(kit):
    """Both servers open their socket with open_listener, which takes the address family
    from the host (the asyncio server could not bind ``::1`` before it did)."""
    with kit.running(None, host="::1") as srv:
        assert srv.server.url.startswith("http://[::1]:")
        with socket.create_connection(("::1", srv.port), timeout=5) as client:
            client.sendall(b"GET /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            data = b""
            while chunk := client.recv(65536):
                data += chunk
        assert data.startswith(b"HTTP/1.1 200") and data.endswith(b"hello")
