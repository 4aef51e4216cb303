"""A real pyweb server in a background thread, for tests, notebooks and load tests.

:func:`serve` starts :class:`pyweb.server.Server` in its own thread, with its own
``trio.run``, on 127.0.0.1 and a free port (port 0), with the access log off; any keyword
overrides a :class:`~pyweb.server.ServerConfig` field. Leaving the ``with`` block shuts the
server down gracefully (in its own trio run, via ``trio.from_thread``) and re-raises
anything that crashed it. Nothing is simulated: requests go through a socket, the parser,
the scheduler and the connection loop exactly as a browser's would.

The server runs in a thread, not in the caller's trio run, so that the caller may block
freely: a test with plain sockets, a notebook cell, locust's gevent workers.
:class:`ServerThread` is the piece underneath, for tests that need to shut the server down
while they still hold connections (``shutdown()``, then watch ``returned``).
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import trio

from .client import Client

__all__ = ["serve", "ServerThread", "reachable"]


def reachable(host: str, port: int, timeout: float = 1.0) -> bool:
    """True if something accepts TCP connections at ``host:port`` within ``timeout``."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


class ServerThread:
    """A :class:`pyweb.server.Server` in its own thread and trio run.

    ``start()`` returns once the server listens (``port`` is then known); ``shutdown()``
    asks it to stop gracefully and returns at once; ``returned`` is set when ``serve()``
    has returned; ``stop()`` shuts down, waits for the thread and re-raises anything that
    crashed the server. ``token`` is the server's trio token, for
    ``trio.from_thread.run_sync(..., trio_token=...)``.
    """

    def __init__(self, server: Any):
        self.server = server
        self.token: trio.lowlevel.TrioToken | None = None
        self.returned = threading.Event()
        self._error: BaseException | None = None
        self._ready = threading.Event()
        self.thread = threading.Thread(target=self._main, name="pyweb-testing-server", daemon=True)

    @property
    def port(self) -> int:
        return int(self.server.port)

    def _main(self) -> None:
        async def serve_then_flag(task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
            await self.server.serve(task_status=task_status)
            self.returned.set()

        async def run() -> None:
            self.token = trio.lowlevel.current_trio_token()
            async with trio.open_nursery() as nursery:
                await nursery.start(serve_then_flag)
                self._ready.set()

        try:
            trio.run(run)
        except BaseException as exc:  # handed to the caller's thread by stop()/start()
            self._error = exc
        finally:
            self._ready.set()

    def start(self, timeout: float = 30.0) -> ServerThread:
        self.thread.start()
        if not self._ready.wait(timeout):
            raise TimeoutError(f"the pyweb server did not start listening within {timeout} s")
        self._raise_crash()
        return self

    def shutdown(self) -> None:
        """Ask the server to stop (graceful: requests in flight finish); do not wait."""
        trio.from_thread.run_sync(self.server.shutdown, trio_token=self.token)

    def stop(self, timeout: float = 30.0) -> None:
        if self.thread.is_alive() and self.token is not None:
            try:
                self.shutdown()
            except trio.RunFinishedError:
                pass  # it already stopped (crashed): the error is reported below
        self.thread.join(timeout)
        if self.thread.is_alive():
            raise TimeoutError(f"the pyweb server did not shut down within {timeout} s")
        self._raise_crash()

    def _raise_crash(self) -> None:
        if self._error is not None:
            error, self._error = self._error, None
            # Nurseries wrap errors in groups; one error is easier to read (and to catch).
            while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
                error = error.exceptions[0]
            raise error


def build_server(target: Any, **config: Any) -> Any:
    """A :class:`pyweb.server.Server` (not started) for ``target``, a directory (served as
    a site) or an async handler; 127.0.0.1, port 0 and no access log unless overridden."""
    from pyweb.server import Server, ServerConfig

    options: dict[str, Any] = {"host": "127.0.0.1", "port": 0, "access_log": None}
    handler = target if callable(target) else None
    if handler is None:
        options["site_dir"] = str(target)
    options.update(config)
    server_config = ServerConfig(**options)
    if handler is None:
        from pyweb.app.site import Site

        handler = Site.from_settings(str(target), server_config)  # as `pyweb serve` builds it
    return Server(server_config, handler)


@contextmanager
def serve(target: Any, *, timeout: float = 30.0, **config: Any) -> Iterator[Client]:
    """Run a real pyweb server for the ``with`` block and yield a :class:`Client` for it.

    ``target`` is a directory (served as a site) or an async handler
    ``async def handler(ctx) -> Response``. Keywords override
    :class:`~pyweb.server.ServerConfig` fields (``scheduler="pool"``, ``dev=True``, ...).
    The client's ``server`` attribute is the :class:`~pyweb.server.Server`.
    """
    server = build_server(target, **config)
    runner = ServerThread(server).start(timeout)
    host = server.config.host
    client = Client(
        f"http://[{host}]:{server.port}" if ":" in host else f"http://{host}:{server.port}"
    )
    client.server = server  # type: ignore[attr-defined]
    try:
        yield client
    finally:
        client.close()
        runner.stop(timeout)
