"""The trio driver of pyweb's server (``pyweb serve``, the default loop): only the I/O.

What a connection does is written once, in ``pyweb/server/`` (the steps of ``talk`` that
move no bytes in ``core.py``, the body, the handler's view, the WebSocket session, the
slots, the replies' framing, the logs), against the ``ServerConnection`` contract
(``contract.py``); this folder supplies how bytes move on trio:

- ``server.py``: :class:`Server`, a :class:`~pyweb.server.base.BaseServer` that serves in
  nurseries;
- ``connection.py``: :class:`Connection`, one connection (Marlow's ``talk``) in one task;
- ``replies.py``: its replies, through the reply arena to the non-blocking socket;
- ``recvbuf.py``: its reads, into this thread's region page;
- ``gone.py``: the watch for a client that hangs up while its page runs;
- ``schedulers.py``: where Hop's schedulers (``scheduling.py``) start a connection's task.
"""

from __future__ import annotations

from .connection import Connection
from .schedulers import TrioDriver
from .server import Server

__all__ = ["Connection", "Server", "TrioDriver"]
