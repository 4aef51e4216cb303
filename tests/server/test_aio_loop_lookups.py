"""A keep-alive request on the asyncio server asks asyncio for no loop.

On Python 3.11, ``asyncio.get_running_loop()`` and ``asyncio._get_running_loop()`` make a
``getpid`` system call each time (their check that the loop was not inherited through a
fork). A keep-alive request used to ask three times: for the future its connection's task
waits on, for the deadline's clock, and for the page's watchdog; the three system calls
took about 0.6 µs of an 18 µs request, measured. Now the server keeps its loop
(``AsyncioServer.loop``) and a page's task remembers its watchdog (``blocking.current``).
Counted here by wrapping asyncio's functions while 50 keep-alive requests for a script page
are answered (``docs/performance.md``).
"""

from __future__ import annotations

import asyncio
import asyncio.events
import socket
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import h11
import pytest

import pyweb.testing

pytestmark = pytest.mark.timeout(60)

LOOKUPS = ("get_running_loop", "_get_running_loop", "get_event_loop")
REQUESTS = 50


def _get(sock: socket.socket, client: h11.Connection) -> bytes:
    """One keep-alive GET /hello on ``sock``: the body."""
    sock.sendall(client.send(h11.Request(method="GET", target="/hello", headers=[("Host", "t")])))
    sock.sendall(client.send(h11.EndOfMessage()))
    body = b""
    while True:
        event = client.next_event()
        if event is h11.NEED_DATA:
            client.receive_data(sock.recv(65536))
        elif isinstance(event, h11.Data):
            body += event.data
        elif isinstance(event, h11.EndOfMessage):
            client.start_next_cycle()
            return body


def _counting(calls: list[str], name: str, real: Callable[..., Any]) -> Callable[..., Any]:
    def lookup(*args: Any) -> Any:
        caller = sys._getframe(1).f_code
        calls.append(f"{name} from {caller.co_name} ({caller.co_filename})")
        return real(*args)

    return lookup


def test_keep_alive_requests_ask_asyncio_for_no_loop(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "hello.py").write_text('conn.return_(b"Hello", content_type="text/plain")\n')
    with pyweb.testing.serve(tmp_path, loop="asyncio", access_log=None) as http:
        with socket.create_connection((http.host, http.port)) as sock:
            client = h11.Connection(h11.CLIENT)
            assert _get(sock, client) == b"Hello"  # the first: the script compiled, and so on
            calls: list[str] = []
            for module in (asyncio, asyncio.events):
                for name in LOOKUPS:
                    real = getattr(module, name)
                    monkeypatch.setattr(module, name, _counting(calls, name, real))
            for _ in range(REQUESTS):
                assert _get(sock, client) == b"Hello"
            monkeypatch.undo()
    # A lookup per request would make REQUESTS of them or more; the few left are the loop's
    # own clocks (the watchdog's heartbeat sleeps, the deadlines' timer), not the requests.
    assert len(calls) < REQUESTS // 10, calls
