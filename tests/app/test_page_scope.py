"""A script's globals last as long as its request: emptied once the reply is done.

A function the page defines holds the page's globals (``__globals__``), which hold it: a
cycle, so what the page built would wait for Python's cyclic collector. The site empties the
globals when the request is over (``pages.end_scope``): after the page for a reply in memory,
when the body ends for a streamed one, whose generator may read the page's names.
"""

from __future__ import annotations

import gc
import socket
import sys
import weakref
from collections.abc import Iterator

import pytest

from pyweb.testing import serve

from ..helpers import until

pytestmark = pytest.mark.loops("trio", "asyncio")


class Thing:
    """Something a page builds, weakly referenced from :data:`REFS` to see when it is freed."""


REFS: list[weakref.ref[Thing]] = []
CLOSED: list[str] = []


def watch(thing: Thing) -> Thing:
    REFS.append(weakref.ref(thing))
    return thing


@pytest.fixture(autouse=True)
def probe() -> Iterator[None]:
    """This module, importable by the pages as ``_probe`` (not the site's library, whose
    globals the site resets after each page: pyweb.regions)."""
    REFS.clear()
    CLOSED.clear()
    sys.modules["_probe"] = sys.modules[__name__]
    try:
        yield
    finally:
        del sys.modules["_probe"]


MAKE = """
import _probe

thing = _probe.watch(_probe.Thing())
rows = [str(i) for i in range(10)]

def row(i):  # a page function: its globals are this page's, a cycle
    return f"<tr><td>{rows[i]}</td></tr>"

conn.return_("".join(row(i) for i in range(3)))
"""

CHECK = """
import _probe
conn.return_(repr([ref() is None for ref in _probe.REFS]), content_type="text/plain")
"""


@pytest.fixture
def no_collector() -> Iterator[None]:
    """The cyclic collector off (the test's process, so the server thread's too): what is
    freed is freed by reference counting alone."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def test_page_with_functions_frees_what_it_built(site, no_collector):
    root = site(
        {
            "make.py": MAKE,
            "amake.py": "from pyweb import runtime\nawait runtime.sleep(0)\n" + MAKE,
            "check.py": CHECK,
        }
    )
    with serve(root) as client:
        assert (
            client.get("/make").text == "<tr><td>0</td></tr><tr><td>1</td></tr><tr><td>2</td></tr>"
        )
        assert client.get("/check").text == "[True]"
        assert client.get("/amake").status == 200  # a page that awaits: the same
        assert client.get("/check").text == "[True, True]"


def test_page_functions_work_on_every_request(site):
    root = site(
        {
            "fns.py": """
                import math
                SCALE = 3

                def scaled(n):
                    return n * SCALE

                def fact(n):  # recursive: looks itself up in the page's globals
                    return 1 if n <= 1 else n * fact(n - 1)

                class Box:
                    def __init__(self, v):
                        self.v = scaled(v)

                conn.return_(f"{Box(2).v} {fact(5)} {math.isqrt(49)}", content_type="text/plain")
            """
        }
    )
    with serve(root) as client:
        assert [client.get("/fns").text for _ in range(4)] == ["6 120 7"] * 4


STREAM = """
import _probe
from pyweb import runtime

GREETING = "hello"
thing = _probe.watch(_probe.Thing())

async def parts():
    for i in range(3):
        await runtime.sleep(0)
        yield f"{GREETING} {i}\\n"  # a page global, read after the page has returned

conn.return_(parts(), content_type="text/plain")
"""


def test_streamed_generator_reads_page_globals(site, no_collector):
    root = site({"stream.py": STREAM, "check.py": CHECK})
    with serve(root) as client:
        for _ in range(2):
            r = client.get("/stream")
            assert r.status == 200
            assert r.text == "hello 0\nhello 1\nhello 2\n"
        head = client.head("/stream")  # no body sent: the stream is closed unread
        assert head.status == 200
        until(lambda: client.get("/check").text == "[True, True, True]", "the globals emptied")


LEAVING = """
import _probe
from pyweb import runtime

NOTE = "closed with the page's names"

async def parts():
    try:
        yield "first\\n"
        for _ in range(2000):
            await runtime.sleep(0.005)
            yield "x" * 4096
    finally:
        _probe.CLOSED.append(NOTE)  # the cleanup of a client gone reads a page global

conn.return_(parts(), content_type="text/plain")
"""


def test_stream_left_by_its_client_cleans_up_with_page_globals(site):
    root = site(
        {
            "leaving.py": LEAVING,
            "closed.py": "import _probe\nconn.return_(repr(_probe.CLOSED), content_type='text/plain')\n",
        }
    )
    with serve(root) as client:
        with socket.create_connection((client.host, client.port)) as sock:
            sock.sendall(b"GET /leaving HTTP/1.1\r\nHost: x\r\n\r\n")
            assert b"first" in _recv_until(sock, b"first")
        until(
            lambda: client.get("/closed").text == '["closed with the page\'s names"]',
            "the stream's cleanup",
        )


def _recv_until(sock: socket.socket, marker: bytes) -> bytes:
    data = b""
    while marker not in data:
        piece = sock.recv(65536)
        if not piece:
            break
        data += piece
    return data
