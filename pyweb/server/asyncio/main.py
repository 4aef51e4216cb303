"""The asyncio server as a process: its loop, its banner, and the signals (Marlow §6).

What ``pyweb serve`` does around a trio server (``cli.serve_until_signalled``), done for
:class:`~pyweb.server.asyncio.AsyncioServer` on an asyncio loop (uvloop when installed):

* SIGINT/SIGTERM: graceful shutdown (exit status 0, or
  :data:`~pyweb.server.supervised.RECYCLE_EXIT` after ``--max-requests``); a second one closes
  every connection at once (exit status 1);
* SIGHUP: ``reload(server)``, given by the command line (it re-reads the configuration
  file and the pages; connections already open keep their settings);
* SIGUSR1: the log files are reopened (after log rotation);
* as a ``--workers`` worker (``listen_fd`` set, ``PYWEB_WORKER_ID`` in the environment) it
  serves the supervisor's socket and says ``pyweb worker N (pid P) ready``, as a trio
  worker does; the supervisor (``workers.py``) is the same for both loops.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable
from typing import Any

from ..supervised import RECYCLE_EXIT
from .server import AsyncioServer, new_loop

__all__ = ["serve_asyncio"]


def serve_asyncio(
    config: Any,
    handler: Any,
    site_dir: str,
    *,
    reload: Callable[[AsyncioServer], object] | None = None,
    banner: Callable[[AsyncioServer], str] | None = None,
    guard_signals: Callable[[], object] | None = None,
    background: Any = None,
) -> int:
    """Serve until SIGINT/SIGTERM; returns the exit status. ``reload(server)`` runs on
    SIGHUP; ``banner(server)`` is printed after the status line (``--dev``);
    ``guard_signals()`` runs once the loop's signal handlers are in (``pyweb serve`` puts
    its own in front of them: pyweb.app.interrupt). An OSError
    that stops the server from listening is raised (``pyweb serve`` prints it as one line,
    the same for both loops)."""
    loop, name = new_loop()
    asyncio.set_event_loop(loop)
    server = AsyncioServer(config, handler)
    forced = loop.create_future()
    try:
        serving = _serve(server, site_dir, name, reload, banner, forced, guard_signals)
        return loop.run_until_complete(_beside(serving, background))
    finally:
        for task in asyncio.all_tasks(loop):
            task.cancel()
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()


async def _beside(serving: Any, background: Any) -> int:
    """Serve, with ``background`` (``pyweb.background.Background``: the scheduled jobs)
    running beside, and its ``conn.after`` work drained once the server has shut down."""
    if background is None:
        return await serving
    jobs = asyncio.get_running_loop().create_task(background.run())
    try:
        status: int = await serving
        await background.drain()
        return status
    finally:
        jobs.cancel()


async def _serve(
    server: AsyncioServer,
    site_dir: str,
    loop_name: str,
    reload: Callable[[AsyncioServer], object] | None,
    banner: Callable[[AsyncioServer], str] | None,
    forced: asyncio.Future[None],
    guard_signals: Callable[[], object] | None = None,
) -> int:
    """Listen, watch the signals, say so, serve until shut down. One run of the loop from
    start to end: a signal that arrives between two runs (a test or a supervisor signals as
    soon as it reads the banner) was lost, or handled without waking the loop, on uvloop."""
    loop = asyncio.get_running_loop()
    await server.start()  # an OSError (the port is taken...) goes up to the CLI
    # The signals are watched before the banner: a supervisor or test may signal once it
    # reads it.
    watched = _watch_signals(loop, server, reload, forced)
    if guard_signals is not None:
        guard_signals()
    try:
        server.announce(site_dir, f"loop asyncio on {loop_name}, ")
        if banner is not None:
            print(banner(server), flush=True)
        return await _run(server, forced)
    finally:
        for signum in watched:
            loop.remove_signal_handler(signum)


def _watch_signals(
    loop: asyncio.AbstractEventLoop,
    server: AsyncioServer,
    reload: Callable[[AsyncioServer], object] | None,
    forced: asyncio.Future[None],
) -> tuple[int, ...]:
    """Install the handlers of the signals ``pyweb serve`` answers; returns them."""

    def reloaded() -> None:
        if reload is not None:
            reload(server)

    def on_signal(signum: int) -> None:
        if server.answer_signal(signum, reloaded):
            if not forced.done():  # a second stop signal: every connection ends now
                server.abort_all()
                forced.set_result(None)

    watched = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1)
    for signum in watched:
        loop.add_signal_handler(signum, on_signal, signum)
    return watched


async def _run(server: AsyncioServer, forced: asyncio.Future[None]) -> int:
    """Serve until the server has shut down (or a second signal forced it)."""
    closed = asyncio.get_running_loop().create_task(server.wait_closed())
    await asyncio.wait((closed, forced), return_when=asyncio.FIRST_COMPLETED)
    if forced.done():
        return 1
    return RECYCLE_EXIT if server.recycled else 0
