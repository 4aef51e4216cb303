"""The asyncio server (``pyweb.server.asyncio``) in a background thread with its own loop (uvloop
when installed), for tests that drive it with plain blocking sockets.

``AioThread(handler, **config)`` builds an :class:`~pyweb.server.asyncio.AsyncioServer` on
127.0.0.1, port 0, with its access and error logs in StringIOs (``access_log``,
``error_log``), on uvloop when installed or on asyncio's own loop (``standard_loop=True``); ``start()`` returns once it listens; ``call(fn, *args)`` runs ``fn`` on the
server's loop and returns its result; ``stop()`` shuts it down gracefully and waits.
"""

from __future__ import annotations

import asyncio
import io
import socket
import threading
from typing import Any

from pyweb.server import ServerConfig
from pyweb.server.asyncio import AsyncioServer, new_loop


class AioThread:
    def __init__(self, handler: Any, *, standard_loop: bool = False, **options: Any) -> None:
        self.access_log = io.StringIO()
        self.error_log = io.StringIO()
        settings: dict[str, Any] = {
            "host": "127.0.0.1",
            "port": 0,
            "access_log": self.access_log,
            "error_log": self.error_log,
        }
        settings.update(options)
        self.server = AsyncioServer(ServerConfig(**settings), handler)
        # uvloop when installed (as `pyweb serve`), or asyncio's own loop (standard_loop)
        if standard_loop:
            self.loop, self.loop_name = asyncio.SelectorEventLoop(), "asyncio"
        else:
            self.loop, self.loop_name = new_loop()
        self.returned = threading.Event()
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self.thread = threading.Thread(target=self._main, name="pyweb-aio-server", daemon=True)

    @property
    def port(self) -> int:
        return int(self.server.port)

    def _main(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_until_complete(self.server.start())
            self._ready.set()
            self.loop.run_until_complete(self.server.wait_closed())
        except BaseException as exc:
            self._error = exc
        finally:
            self.returned.set()
            self._ready.set()
            self.loop.close()

    def start(self) -> AioThread:
        self.thread.start()
        self._ready.wait(10)
        if self._error is not None:
            raise self._error
        return self

    def call(self, fn: Any, *args: Any) -> Any:
        async def run() -> Any:
            return fn(*args)

        return asyncio.run_coroutine_threadsafe(run(), self.loop).result(10)

    def shutdown(self) -> None:
        self.loop.call_soon_threadsafe(self.server.shutdown)

    def stop(self) -> None:
        if not self.returned.is_set():
            self.shutdown()
        self.thread.join(15)
        assert not self.thread.is_alive(), "the asyncio server did not shut down"
        if self._error is not None:
            raise self._error

    def connect(self, timeout: float = 5.0) -> socket.socket:
        return socket.create_connection(("127.0.0.1", self.port), timeout=timeout)

    def __enter__(self) -> AioThread:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
