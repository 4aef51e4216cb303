"""A real pyweb server in a background thread, for tests, notebooks and load tests.

:func:`serve` starts a pyweb server in its own thread, on 127.0.0.1 and a free port
(port 0), with the access log off; any keyword overrides a
:class:`~pyweb.server.ServerConfig` field. Leaving the ``with`` block shuts the server down
gracefully and re-raises anything that crashed it. Nothing is simulated: requests go
through a socket, the parser, the scheduler and the connection loop exactly as a
browser's would.

The server runs on either of pyweb's loops (``loop="trio"``, the default, or
``loop="asyncio"``: the asyncio Protocol server of ``pyweb serve --loop asyncio``, on
uvloop when it is installed). Code that does not name a loop gets :func:`default_loop`,
which :func:`use_loop` changes for a block: that is how pyweb's own test suite runs the
same tests on both loops. The environment variable ``PYWEB_TESTING_LOOP`` sets the default
for a whole process (a notebook kernel, for example).

The server runs in a thread, not in the caller's event loop, so that the caller may block
freely: a test with plain sockets, a notebook cell, locust's gevent workers.
:class:`ServerThread` is the piece underneath, for tests that need to shut the server down
while they still hold connections (``shutdown()``, then watch ``returned``).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import trio

from .client import Client

__all__ = ["serve", "ServerThread", "reachable", "LOOPS", "default_loop", "use_loop",
           "running_servers"]  # fmt: skip

LOOPS = ("trio", "asyncio")
"""The event loops a pyweb server runs on."""

_default = [os.environ.get("PYWEB_TESTING_LOOP") or "trio"]
_running: set[ServerThread] = set()  # started and not yet stopped (see running_servers)


def default_loop() -> str:
    """The loop :func:`serve` and :func:`build_server` use when none is named: trio, or
    ``PYWEB_TESTING_LOOP``, or what :func:`use_loop` set."""
    if _default[0] not in LOOPS:
        raise ValueError(f"PYWEB_TESTING_LOOP={_default[0]!r}: one of {', '.join(LOOPS)}")
    return _default[0]


@contextmanager
def use_loop(name: str) -> Iterator[str]:
    """Within the block, servers started without ``loop=`` run on ``name``."""
    if name not in LOOPS:
        raise ValueError(f"unknown loop {name!r} (one of {', '.join(LOOPS)})")
    before, _default[0] = _default[0], name
    try:
        yield name
    finally:
        _default[0] = before


def running_servers() -> list[ServerThread]:
    """The server threads started and not yet stopped, in this process (a test suite
    checks with it that the servers of a test run on the test's loop)."""
    return list(_running)


def reachable(host: str, port: int, timeout: float = 1.0) -> bool:
    """True if something accepts TCP connections at ``host:port`` within ``timeout``."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


class ServerThread:
    """A pyweb server in its own thread and event loop (trio or asyncio, from the server).

    ``start()`` returns once the server listens (``port`` is then known); ``shutdown()``
    asks it to stop gracefully and returns at once; ``returned`` is set when the server
    has stopped serving; ``stop()`` shuts down, waits for the thread and re-raises anything
    that crashed the server. ``call(fn, *args)`` runs ``fn`` in the server's thread, on its
    loop, and returns the result (for poking at the server's state safely). On trio,
    ``token`` is the run's trio token; on asyncio, ``aio_loop`` is the loop.
    """

    def __init__(self, server: Any):
        self.server = server
        self.loop = getattr(server.config, "loop", "trio")
        self.token: trio.lowlevel.TrioToken | None = None
        self.aio_loop: asyncio.AbstractEventLoop | None = None
        self.returned = threading.Event()
        self._error: BaseException | None = None
        self._ready = threading.Event()
        self._stop_asked: asyncio.Event | None = None
        main = self._main_asyncio if self.loop == "asyncio" else self._main_trio
        self.thread = threading.Thread(target=main, name="pyweb-testing-server", daemon=True)

    @property
    def port(self) -> int:
        return int(self.server.port)

    def _main_trio(self) -> None:
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

    def _main_asyncio(self) -> None:
        from pyweb.server.asyncio import new_loop

        loop, _ = new_loop()
        self.aio_loop = loop
        # An exception no task waited for (a crash inside the server) is kept for stop().
        loop.set_exception_handler(self._asyncio_crash)
        try:
            loop.run_until_complete(self._serve_asyncio())
        except BaseException as exc:  # handed to the caller's thread by stop()/start()
            self._error = self._error or exc
        finally:
            for task in asyncio.all_tasks(loop):
                task.cancel()
            loop.run_until_complete(asyncio.sleep(0))
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()
            self._ready.set()

    async def _serve_asyncio(self) -> None:
        self._stop_asked = asyncio.Event()
        await self.server.start()
        self._ready.set()
        await self._stop_asked.wait()
        self.server.shutdown()  # graceful: wait_closed() returns when requests are done
        await self.server.wait_closed()
        self.returned.set()

    def _asyncio_crash(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        exc = context.get("exception")
        if self._error is None:
            self._error = exc if exc is not None else RuntimeError(context.get("message"))
        loop.default_exception_handler(context)

    def start(self, timeout: float = 30.0) -> ServerThread:
        _running.add(self)
        self.thread.start()
        if not self._ready.wait(timeout):
            raise TimeoutError(f"the pyweb server did not start listening within {timeout} s")
        if self._error is not None:
            _running.discard(self)
        self._raise_crash()
        return self

    def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Run ``fn(*args)`` (a plain function) on the server's loop; return its result."""
        if self.loop == "asyncio":
            assert self.aio_loop is not None
            done: concurrent.futures.Future[Any] = concurrent.futures.Future()

            def run() -> None:
                try:
                    done.set_result(fn(*args))
                except BaseException as exc:
                    done.set_exception(exc)

            self.aio_loop.call_soon_threadsafe(run)
            return done.result()
        return trio.from_thread.run_sync(fn, *args, trio_token=self.token)

    def shutdown(self) -> None:
        """Ask the server to stop (graceful: requests in flight finish); do not wait."""
        if self.loop == "asyncio":
            assert self.aio_loop is not None and self._stop_asked is not None
            begun = threading.Event()

            def begin() -> None:
                # The shutdown begins before this call returns (as trio's run_sync): a
                # request sent right after it is answered with Connection: close.
                self.server.shutdown()
                self._stop_asked.set()  # type: ignore[union-attr]
                begun.set()

            self.aio_loop.call_soon_threadsafe(begin)
            begun.wait(10)
        else:
            trio.from_thread.run_sync(self.server.shutdown, trio_token=self.token)

    def stop(self, timeout: float = 30.0) -> None:
        if self.thread.is_alive() and (self.token is not None or self.aio_loop is not None):
            try:
                self.shutdown()
            except (trio.RunFinishedError, RuntimeError):
                pass  # it already stopped (crashed): the error is reported below
        self.thread.join(timeout)
        if self.thread.is_alive():
            raise TimeoutError(f"the pyweb server did not shut down within {timeout} s")
        _running.discard(self)
        self._raise_crash()

    def _raise_crash(self) -> None:
        if self._error is not None:
            error, self._error = self._error, None
            # Nurseries wrap errors in groups; one error is easier to read (and to catch).
            while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
                error = error.exceptions[0]
            raise error


def build_server(target: Any, **config: Any) -> Any:
    """A pyweb server (not started) for ``target``, a directory (served as a site) or an
    async handler; on ``loop=`` (default: :func:`default_loop`): a
    :class:`pyweb.server.Server` on trio, a :class:`pyweb.server.asyncio.AsyncioServer` on
    asyncio. 127.0.0.1, port 0 and no access log unless overridden."""
    from pyweb.server import Server, ServerConfig

    loop = config.pop("loop", None) or default_loop()
    if loop not in LOOPS:
        raise ValueError(f"unknown loop {loop!r} (one of {', '.join(LOOPS)})")
    options: dict[str, Any] = {"host": "127.0.0.1", "port": 0, "access_log": None, "loop": loop}
    handler = target if callable(target) else None
    if handler is None:
        options["site_dir"] = str(target)
    options.update(config)
    server_config = ServerConfig(**options)
    if handler is None:
        from pyweb.app.site import Site

        handler = Site.from_settings(str(target), server_config)  # as `pyweb serve` builds it
    if loop == "asyncio":
        from pyweb.server.asyncio import AsyncioServer

        return AsyncioServer(server_config, handler)
    return Server(server_config, handler)


@contextmanager
def serve(
    target: Any, *, timeout: float = 30.0, loop: str | None = None, **config: Any
) -> Iterator[Client]:
    """Run a real pyweb server for the ``with`` block and yield a :class:`Client` for it.

    ``target`` is a directory (served as a site) or an async handler
    ``async def handler(ctx) -> Response``. Keywords override
    :class:`~pyweb.server.ServerConfig` fields (``scheduler="pool"``, ``dev=True``, ...);
    ``loop`` is ``"trio"`` or ``"asyncio"`` (default: :func:`default_loop`).
    The client's ``server`` attribute is the server.
    """
    server = build_server(target, loop=loop, **config)
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
