"""The asyncio driver of pyweb's server (``pyweb serve --loop asyncio``; Hop §2.4, pluggable
schedulers): only the I/O, on asyncio's loop or uvloop's.

What a connection does is written once, in ``pyweb/server/`` (the body, the handler's
view, the WebSocket session, the slots, the replies' framing, the logs), against the
``ServerConnection`` contract (``contract.py``); this folder supplies how bytes move:

- ``server.py``: :class:`AsyncioServer`, a :class:`~pyweb.server.base.BaseServer` whose
  connections are asyncio protocols;
- ``connection.py``: :class:`HttpProtocol`, one connection (Marlow's ``talk``);
- ``replies.py``: its replies, written to the transport;
- ``deadlines.py``: the connections' timeouts under one timer;
- ``schedulers.py``, ``slots.py``: where Hop's schedulers (``scheduling.py``) hand a
  connection on this loop, and the fast 503;
- ``main.py``: the process (signals, reload, workers).
"""

from __future__ import annotations

from .connection import HttpProtocol
from .main import serve_asyncio
from .server import AsyncioServer, new_loop

__all__ = ["AsyncioServer", "HttpProtocol", "new_loop", "serve_asyncio"]
