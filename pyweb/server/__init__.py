"""pyweb.server: the HTTP/1.1 server (Marlow §3-§7, Hop §2-§3), on trio or on asyncio.

What a connection does is written once, in this folder, against the ``ServerConnection``
contract (``contract.py``): the steps of Marlow's ``talk`` that move no bytes (``core.py``),
the handler's view (``context.py``), the body (``body.py``), the replies' framing
(``reply.py``), the slots (``slots.py``), the WebSocket session (``websocket.py``), the
schedulers (``scheduling.py``), the logs. Each loop supplies only the I/O, in a folder of
its own: ``trio/`` (:class:`Server`, the default) and ``asyncio/`` (``pyweb serve --loop
asyncio``). A connection meets the pieces in this order::

    listener (listener.py)  ─►  scheduler (scheduling.py, Hop §2.4; the loop's driver)
        ─►  the connection's talk (trio/connection.py or asyncio/connection.py, on core.py:
            Marlow §3.2, timeouts §4)
        ─►  handler(RequestContext) -> Response   (context.py; pyweb.app.site by default;
                                                   the body on demand: body.py)
        ─►  the reply (reply.py, and the loop's replies.py, Hop §3)
        ─►  ServerLog (logging.py, Marlow §5: one logging task fed through a Mailbox)

Use::

    server = Server(ServerConfig(port=0), Site("pages"))    # Site: pyweb.app.site
    async with trio.open_nursery() as nursery:
        await nursery.start(server.serve)     # listening now; server.url is valid
        ...
        server.shutdown()                     # graceful: serve() returns when done
"""

from __future__ import annotations

from pyweb.handler import Handler

from .config import ServerConfig
from .context import RequestContext
from .trio import Server

__all__ = ["Server", "ServerConfig", "RequestContext", "Handler"]
