# The chat room as a WebSocket (RFC 6455): see _chat.py.
#
#   ws://HOST/chat/ws[?after=N]   every message (the messages after N first), as the same
#                                 JSON object the long poll answers with:
#                                 {"seq": ..., "name": ..., "text": ..., "time": ...};
#                                 send {"name": ..., "text": ...} to say something.
#
# A file that defines a @pyweb.websocket (or a @service) is a service module: imported once
# when the site loads, not run per request.
import os

import pyweb

import _chat


# (the 101 answer names the worker, as the chat's other answers do)
@pyweb.websocket("/chat/ws", headers=[("X-Pyweb-Worker", str(os.getpid()))])
async def chat_ws(ws):
    await _chat.talk(ws)
