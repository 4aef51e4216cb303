"""``pyweb serve`` with a chosen small-file limit, for ``benchmarks/bench_small_files.py``.

Usage: python small_files_server.py LIMIT serve DIR [pyweb serve's options]

Files up to LIMIT bytes are read and sent behind their head in one write, larger ones with
``sendfile``. On asyncio that is ``pyweb.server.asyncio.replies.SMALL_FILE``, set here. The trio
server has no such limit (it always sends files with ``sendfile``, the head held back with
``MSG_MORE``); for this measurement only, its file sender is wrapped so that a small file
goes out as a reply of bytes, as a page's reply does.
"""

from __future__ import annotations

import os
import sys

import pyweb.server.asyncio.replies as aio_reply
import pyweb.server.trio.replies as replies
from pyweb.cli import main
from pyweb.protocol.response import Response

LIMIT = int(sys.argv[1])
aio_reply.SMALL_FILE = LIMIT
_send_file = replies.Replies.send_file


async def _copy_small_file(self, request, response, body, keep_alive):  # type: ignore[no-untyped-def]
    if body.length > LIMIT:
        return await _send_file(self, request, response, body, keep_alive)
    fd = os.open(body.path, os.O_RDONLY)
    try:
        data = os.pread(fd, body.length, body.offset)
    finally:
        os.close(fd)
    return await self.send(request, Response(response.status, response.headers, data), keep_alive)


replies.Replies.send_file = _copy_small_file  # type: ignore[method-assign]

if __name__ == "__main__":
    raise SystemExit(main(sys.argv[2:]))
