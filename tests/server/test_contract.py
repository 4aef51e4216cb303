"""The ``ServerConnection`` contract (pyweb/server/contract.py) holds on both loops, over
real sockets: the connection a handler's request runs on has every member the shared code
(body, context, WebSocket, slots) may ask for, and its server every member of ``Host``.

mypy checks the same wherever a connection is handed to the shared code; this checks the
objects a running server really makes, on trio and on asyncio.
"""

from __future__ import annotations

import pytest

from pyweb.protocol.response import Response
from pyweb.server.contract import ServerConnection, ServerSide
from pyweb.server.core import ConnectionCore
from pyweb.server.host import Host

pytestmark = [pytest.mark.timeout(30), pytest.mark.loops("trio", "asyncio")]

DRIVERS = {"trio": "pyweb.server.trio.connection", "asyncio": "pyweb.server.asyncio.connection"}


def test_a_requests_connection_keeps_the_contract(kit, loop):
    seen = []

    async def handler(ctx):
        connection = ctx._connection  # (the one place a test looks behind the context)
        seen.append(connection)
        body = await ctx.body()  # read through the contract: receive_now, wait_for_bytes
        return Response(200, [("Content-Type", "text/plain")], body)

    with kit.running(handler) as srv, srv.connect() as c:
        reply = c.request("POST", "/echo", body=b"through the contract")
        assert (reply.status, reply.body) == (200, b"through the contract")
    (connection,) = seen
    assert type(connection).__module__ == DRIVERS[loop]
    assert isinstance(connection, ServerConnection)
    assert isinstance(connection, ConnectionCore)  # the loop-free steps are the shared ones
    assert isinstance(connection.server, Host)
    assert isinstance(connection.server, ServerSide)


def test_an_object_lacking_a_member_breaks_the_contract():
    """The check above can fail: a connection without ``wait_for_bytes`` is not one."""

    class Partial:
        client = peer = "127.0.0.1:1"
        reserved = 0
        in_stream_budget = False

    assert not isinstance(Partial(), ServerConnection)
