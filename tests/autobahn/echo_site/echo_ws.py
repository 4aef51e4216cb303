# The echo the Autobahn test suite talks to (tests/autobahn/run.py): every message goes back
# as it came, text as text and binary as binary. Nothing else: the suite judges the server's
# framing, fragmentation, UTF-8 checks, pings and closing handshake, not the handler.
#
# A service module (it defines a @pyweb.websocket): imported once when the site loads.
import pyweb
from pyweb import WebSocketClosed

# The suite's section 9 sends messages of up to 16 MiB, some in 65,536 fragments of 64 bytes;
# allow twice that so that the limits (1 MiB and 1024 fragments by default) are not what
# section 9 measures.
MAX_MESSAGE = 32 * 1024 * 1024
MAX_FRAGMENTS = 2 * 65536


@pyweb.websocket("/echo", max_message=MAX_MESSAGE, max_fragments=MAX_FRAGMENTS)
async def echo(ws):
    try:
        while True:
            await ws.send(await ws.recv())
    except WebSocketClosed:
        return  # the peer closed (or broke the protocol): the server has answered already
