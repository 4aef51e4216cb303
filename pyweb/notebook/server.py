"""The background server of a notebook: :func:`serve` starts pyweb in a thread and returns.

A notebook plays both parts of the SMLserver book's set-up (§2, §2.1): it is the editor that
writes the scripts into the site directory (:mod:`pyweb.notebook.magics`), and the browser
that requests them (this module: :class:`NotebookServer` and its client).

**Where the server runs: a thread, not trio guest mode.** A Jupyter kernel already owns an
asyncio event loop on its main thread; trio wants a thread of its own. Two ways were tried
inside a real ipykernel 7.4 driven by nbclient (docs/notebooks.md has the whole story):

* *Guest mode* (``trio.lowlevel.start_guest_run`` on the kernel's loop) works: the server
  survives from cell to cell, "Interrupt kernel" stops the running cell and leaves the
  server alone, and ``await`` in a cell lets the server answer. But the server can run only
  while the kernel's loop is free, and a cell runs *on* that loop. So (1) a plain
  synchronous request from a cell, ``srv.get("/")``, waits for a server that cannot run
  until the cell ends: it deadlocks (measured: a 3 s client timeout, every time); (2) the
  server starts listening only after the cell that started it has ended, so its port is
  unknown in that cell; (3) any long cell (``time.sleep``, a loop) freezes the server and any
  browser waiting on it. Every request would have to be written ``await srv.aget(...)``.
* *A thread* running ``trio.run`` (what :func:`pyweb.testing.serve` does) has none of
  these problems: cells may block, requests are plain calls. Its costs: "Interrupt kernel"
  does not stop the server (hence :meth:`NotebookServer.stop`, also registered with
  :mod:`atexit`), and output printed by the server thread could land in any cell, so the
  logs are collected into lists (:attr:`NotebookServer.log`, :attr:`NotebookServer.errors`).

So ``mode="thread"`` is the default; ``mode="guest"`` is kept for demonstrating the event
loop (it needs ``await srv.aget(...)``, ``await srv.started()`` and ``await srv.astop()``;
its synchronous methods refuse with a message saying why).

``srv.show()`` displays an ``<iframe srcdoc=...>`` of the page the kernel fetched rather
than an iframe of the live URL: the output is then complete by itself, under nbclient, in
the rendered docs and on JupyterHub, whose browsers cannot reach the kernel's 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import dataclasses
import html
import io
import os
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

import trio

from pyweb.notebook.checks import (
    CheckFailed,
    _shorten,
    _visible_text,
    forms_on,
    no_token_sentence,
)
from pyweb.testing import Client, TestResponse
from pyweb.testing.client import CSRF_FIELD

__all__ = ["NotebookServer", "serve", "current", "stop_all"]

_START_TIMEOUT = 30.0
_LOG_WAIT = 2.0  # how long .log waits for the lines of requests that were already answered

_current: NotebookServer | None = None
"""The server the ``%%page`` magics write to: the last one :func:`serve` started."""
_running: list[NotebookServer] = []
"""Every server :func:`serve` started and nobody stopped yet (for :func:`stop_all`)."""


# --- logs collected into lists ---

_ENTRY_START = re.compile(r"(?m)^(?=\[\d{2}/\w{3}/\d{4}:)")


class _LogLines(io.TextIOBase):
    """A text stream the server's logging task writes to; keeps what it got as a list.

    The logging task writes a whole batch with one ``write()`` from a worker thread, so
    appends are guarded by a condition that :attr:`NotebookServer.log` can wait on.
    """

    def __init__(self, *, entries: bool = False) -> None:
        super().__init__()
        self.items: list[str] = []
        self.changed = threading.Condition()
        self._entries = entries  # error entries span lines (a traceback); access lines don't

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        if self._entries:
            parts = [p.rstrip("\n") for p in _ENTRY_START.split(text) if p.strip()]
        else:
            parts = [line for line in text.splitlines() if line]
        with self.changed:
            self.items.extend(parts)
            self.changed.notify_all()
        return len(text)


# --- the server ---------------------------------------------------------------------------


class NotebookServer:
    """A pyweb server started by :func:`serve`, with a client for it.

    Attributes: ``url`` (``http://127.0.0.1:PORT/``), ``port``, ``site_dir`` (a
    :class:`~pathlib.Path`, or ``None`` when serving a handler), ``client`` (the
    :class:`pyweb.testing.Client`), ``mode`` (``"thread"`` or ``"guest"``), ``running``.
    """

    def __init__(
        self,
        site_dir: Path | None,
        handler: Callable[..., Any] | None,
        *,
        mode: str,
        dev: bool,
        config: dict[str, Any],
        owns_site_dir: bool,
        csrf: bool = True,
    ) -> None:
        self.site_dir = site_dir
        self.mode = mode
        self.dev = dev
        self.csrf = csrf
        self._handler = handler
        self._config = config
        self._owns_site_dir = owns_site_dir
        self._access = _LogLines()
        self._errors = _LogLines(entries=True)
        self._answered = 0  # responses our client received: their access lines will come
        self._saw_5xx = False  # then the error log may have entries to wait for
        self._stack = contextlib.ExitStack()
        self._client: Client | None = None
        self._server: Any = None
        self._stopped = False
        # guest mode only
        self._guest_done: asyncio.Event | None = None
        self._guest_error: BaseException | None = None
        self._guest_listening: asyncio.Event | None = None
        self._token: trio.lowlevel.TrioToken | None = None

    @property
    def stopped(self) -> bool:
        """True once :meth:`stop` has run: the server answers no more requests."""
        return self._stopped

    # -- starting --

    def _options(self) -> dict[str, Any]:
        options: dict[str, Any] = {"host": "127.0.0.1", "port": 0, "dev": self.dev}
        options.update(self._config)
        # ServerLog takes a writable text stream as well as a path (pyweb.server.logging).
        options["access_log"] = self._access
        options["error_log"] = self._errors
        return options

    def _site(self) -> Any:
        """The Site served, built from the settings as ``pyweb serve`` (``make run``) builds
        it: CSRF checks on, unless ``serve(csrf=False)`` (see :func:`serve`)."""
        from pyweb.app.site import Site
        from pyweb.server import ServerConfig

        config = ServerConfig(**self._options())
        if not self.csrf:
            config = dataclasses.replace(config, csrf_exempt=("/*",))
        return Site.from_settings(str(self.site_dir), config)

    def _start_thread(self) -> None:
        import pyweb.testing

        target = self._handler if self._handler is not None else self._site()
        client = self._stack.enter_context(
            pyweb.testing.serve(target, timeout=_START_TIMEOUT, **self._options())
        )
        self._client = client
        self._server = client.server  # type: ignore[attr-defined]

    def _start_guest(self) -> None:
        from pyweb.server import Server, ServerConfig

        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            raise RuntimeError(
                "mode='guest' runs trio on top of a running asyncio event loop (a Jupyter "
                "kernel has one); there is none here. Use mode='thread' (the default)."
            ) from None
        config = ServerConfig(**self._options())
        handler = self._handler
        if handler is None:
            handler = self._site()
        self._server = server = Server(config, handler)
        self._guest_done = done_event = asyncio.Event()
        listening = asyncio.Event()
        self._guest_listening = listening

        async def main() -> None:
            self._token = trio.lowlevel.current_trio_token()
            if self._stopped:  # stop() came in the same cell as serve(), before this ran
                return
            async with trio.open_nursery() as nursery:
                await nursery.start(server.serve)
                loop.call_soon(listening.set)

        def done(outcome: Any) -> None:
            try:
                outcome.unwrap()
            except BaseException as exc:  # kept for astop()/started() to raise
                self._guest_error = exc
            done_event.set()
            listening.set()

        trio.lowlevel.start_guest_run(
            main,
            run_sync_soon_threadsafe=loop.call_soon_threadsafe,
            run_sync_soon_not_threadsafe=loop.call_soon,
            done_callback=done,
            # asyncio's loop owns signal.set_wakeup_fd on the main thread; trio must not
            # take it over (trio docs, "Using guest mode ...").
            host_uses_signal_set_wakeup_fd=True,
        )

    # -- where it is --

    @property
    def running(self) -> bool:
        if self._stopped:
            return False
        if self.mode == "guest":
            return self._guest_done is not None and not self._guest_done.is_set()
        return True

    @property
    def port(self) -> int:
        if self.mode == "guest" and (self._server is None or self._server.listener is None):
            raise RuntimeError(
                "the server is still starting: in guest mode it runs on the kernel's event "
                "loop, which is busy with this cell. Use srv.port in the next cell, or "
                "`await srv.started()` first."
            )
        return int(self._server.port)

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT/`` (what a browser on this machine can open)."""
        return f"http://{self._server.host}:{self.port}/"

    @property
    def client(self) -> Client:
        """The :class:`pyweb.testing.Client` (keep-alive, cookies) that the verbs use."""
        if self._client is None:
            self._client = Client(self.url.rstrip("/"))
        return self._client

    async def started(self) -> NotebookServer:
        """Wait until the server listens (needed only in guest mode, in the starting cell)."""
        if self.mode == "guest":
            assert self._guest_listening is not None
            await self._guest_listening.wait()
            self._raise_guest_error()
        return self

    # -- requests --

    def _check_usable(self, what: str) -> None:
        if self._stopped:
            raise RuntimeError(
                f"this server was stopped; srv.{what}() needs a running one: "
                "srv = pyweb.notebook.serve(...)"
            )
        if self.mode == "guest":
            asynchronous = (
                f"await srv.a{what}(...)" if what in ("get", "post") else "await srv.aget(...)"
            )
            raise RuntimeError(
                f"srv.{what}() would wait for the server while blocking the event loop the "
                f"server runs on (guest mode): it would never answer. Write "
                f"`{asynchronous}` instead, or serve with mode='thread'."
            )

    def _count(self, response: TestResponse) -> TestResponse:
        with self._access.changed:
            self._answered += 1
        if response.status >= 500:
            self._saw_5xx = True
        return response

    def get(self, path: str = "/", **kwargs: Any) -> TestResponse:
        """GET ``path`` (``headers=``, ``params=`` as :meth:`pyweb.testing.Client.get`)."""
        self._check_usable("get")
        return self._count(self.client.get(path, **kwargs))

    def post(self, path: str, data: Any = None, *, csrf: bool = False, **kwargs: Any) -> TestResponse:
        """POST ``data`` (a dict is sent as a form) to ``path``: exactly what is given, so a
        POST without a token is refused (403) as ``make run`` refuses it. ``csrf=True``
        adds the CSRF token of the last form this client received, as a browser that
        loaded that form would (to send a form as it is, use :meth:`submit`)."""
        self._check_usable("post")
        return self._count(self.client.post(path, data, csrf=csrf, **kwargs))

    def request(self, method: str, path: str, **kwargs: Any) -> TestResponse:
        """Any method (``body=``, ``headers=``)."""
        self._check_usable("request")
        return self._count(self.client.request(method, path, **kwargs))

    def submit(
        self, page: str | TestResponse, data: Mapping[str, Any], *, path: str = "/"
    ) -> TestResponse:
        """Fill in the first form of ``page`` with ``data`` and send it, as a browser
        does: to the form's ``action`` (relative to the page's ``path``), with its
        ``method``, and with the form's own values (hidden fields) for fields not in
        ``data``. ``page`` is a path (fetched first) or a response already received."""
        if isinstance(page, str):
            path, response = page, self.get(page)
        else:
            response = page
        forms = forms_on(response)
        if not forms:
            raise CheckFailed(
                f"There is no form to fill in on {path}. The page says: "
                f"{_shorten(_visible_text(response.text))}"
            )
        form = forms[0]
        values = {**form["values"], **data}
        action = urljoin(path, form["action"]) if form["action"] else path
        if form["method"] != "post":
            return self.get(action.split("?")[0], params=values)
        answer = self.post(action, values)
        if answer.status == 403 and CSRF_FIELD not in form["values"]:
            # A browser sends the form as it is: without the hidden token, the server
            # refuses it, as `make run` would. Say so in words, not as a bare 403.
            raise CheckFailed(no_token_sentence(f"the form on {path}"))
        return answer

    async def aget(self, path: str = "/", **kwargs: Any) -> TestResponse:
        """``await srv.aget(path)``: the client runs in a worker thread, so the event loop
        (and a guest-mode server on it) keeps running meanwhile. Works in both modes."""
        await self.started()
        client = self.client
        return self._count(await asyncio.to_thread(lambda: client.get(path, **kwargs)))

    async def apost(self, path: str, data: Any = None, **kwargs: Any) -> TestResponse:
        """``await srv.apost(path, data)``, as :meth:`aget`."""
        await self.started()
        client = self.client
        return self._count(await asyncio.to_thread(lambda: client.post(path, data, **kwargs)))

    # -- showing a page --

    def view(
        self, page: str | TestResponse = "/", *, height: int = 300, live: bool | None = None
    ) -> Any:
        """What :meth:`show` displays for ``page`` (a path, or a response already fetched,
        such as the answer to a POST): an ``IPython.display.HTML`` iframe whose ``srcdoc``
        is the page (default), or with ``live=True`` an ``IPython.display.IFrame`` of the
        live URL.

        ``srcdoc`` is the default because the page travels inside the notebook's output:
        it renders under nbclient, in saved and rendered notebooks (the docs site) after the
        server has stopped, and on JupyterHub where the browser cannot reach the kernel's
        127.0.0.1. A ``<base>`` element points links and forms at the live server.
        In guest mode the kernel cannot fetch the page itself, so ``live`` is the default."""
        from IPython.display import HTML, IFrame

        if isinstance(page, TestResponse):
            response, path, request = page, "/", "response"
        else:
            path = page
            if live is None:
                live = self.mode == "guest"
            if live:
                return IFrame(self.url + path.lstrip("/"), width="100%", height=height)
            response, request = self.get(path), f"GET {path}"
        if response.content_type in ("text/html", "application/xhtml+xml"):
            document = _with_base(response.text, self.url + path.lstrip("/"))
        else:
            document = f"<pre>{html.escape(response.text)}</pre>"
        caption = html.escape(
            f"{request} → {response.status} {response.reason}"
            + (f" ({response.content_type})" if response.content_type else "")
        )
        # A srcdoc document would share the notebook's origin (and could reach Jupyter's
        # API with a script a page failed to escape); sandboxed without allow-same-origin
        # it gets an origin of its own, while its scripts, links and forms still work.
        return HTML(
            f'<div style="font:12px monospace;color:#555">{caption}</div>'
            f'<iframe sandbox="allow-forms allow-scripts" '
            f'srcdoc="{html.escape(document, quote=True)}" '
            f'style="width:100%;height:{int(height)}px;border:1px solid #ccc"></iframe>'
        )

    def show(
        self, page: str | TestResponse = "/", *, height: int = 300, live: bool | None = None
    ) -> None:
        """Display ``page`` (a path, or a response such as ``srv.post(...)``'s) inline;
        see :meth:`view`."""
        from IPython.display import display

        display(self.view(page, height=height, live=live))

    # -- logs --

    @property
    def log(self) -> list[str]:
        """The access log so far, one Combined Log Format line per request.

        The server writes its log from a separate task a moment after answering; this waits
        (at most 2 s) until the lines of the requests this server's client has already got
        answers to are there, so ``srv.get(...); srv.log[-1]`` is that request."""
        return self._wait_for(self._access, self._answered)

    @property
    def errors(self) -> list[str]:
        """The error log so far: one entry (with its traceback) per request whose handler
        failed, and per connection that failed.

        The logging task writes a batch's access lines, then its error entries; so this
        waits as :attr:`log` does, then (after a 5xx answer) a moment more for the errors."""
        self._wait_for(self._access, self._answered)
        if self._saw_5xx and self.mode == "thread" and not self._stopped:
            time.sleep(0.02)
        return self._wait_for(self._errors, 0)

    def _wait_for(self, lines: _LogLines, count: int) -> list[str]:
        if self.mode == "thread" and not self._stopped:
            deadline = time.monotonic() + _LOG_WAIT
            with lines.changed:
                while len(lines.items) < count:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        break
                    lines.changed.wait(left)
        with lines.changed:
            return list(lines.items)

    # -- stopping --

    def stop(self) -> None:
        """Shut the server down (gracefully) and forget a temporary site. Idempotent.

        In guest mode this only asks the server to stop; ``await srv.astop()`` waits."""
        global _current
        if self._stopped:
            return
        self._stopped = True
        atexit.unregister(self.stop)
        if self in _running:
            _running.remove(self)
        if _current is self:  # %%page goes back to the last server still running, if any
            _current = _running[-1] if _running else None
        try:
            if self.mode == "thread":
                self._stack.close()
            else:
                if self._client is not None:
                    self._client.close()
                if self._token is not None and self._guest_done and not self._guest_done.is_set():
                    with contextlib.suppress(trio.RunFinishedError, RuntimeError):
                        self._token.run_sync_soon(self._server.shutdown)
        finally:
            if self._owns_site_dir and self.site_dir is not None:
                shutil.rmtree(self.site_dir, ignore_errors=True)

    async def astop(self) -> None:
        """Stop and wait until the server has shut down (either mode)."""
        self.stop()
        if self.mode == "guest" and self._guest_done is not None:
            await self._guest_done.wait()
            self._raise_guest_error()

    def _raise_guest_error(self) -> None:
        if self._guest_error is not None:
            error, self._guest_error = self._guest_error, None
            while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
                error = error.exceptions[0]
            raise error

    def __enter__(self) -> NotebookServer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        where = f"serving {self.site_dir}" if self.site_dir is not None else "serving a handler"
        if self._stopped:
            return f"<NotebookServer {where} (stopped)>"
        try:
            url = self.url
        except RuntimeError:
            url = "(starting)"
        return f"<NotebookServer {url} {where} ({self.mode})>"


def _with_base(document: str, base_url: str) -> str:
    """``document`` with ``<base href=base_url>`` right after ``<head>`` (or in front)."""
    base = f'<base href="{html.escape(base_url, quote=True)}">'
    match = re.search(r"<head\b[^>]*>", document, re.IGNORECASE)
    if match:
        return document[: match.end()] + base + document[match.end() :]
    return base + document


def serve(
    site: str | os.PathLike[str] | Callable[..., Any] | None = None,
    *,
    dev: bool = True,
    port: int = 0,
    mode: str = "thread",
    csrf: bool = True,
    loop: str | None = None,
    **config: Any,
) -> NotebookServer:
    """Start a pyweb server and return at once; the kernel stays free for the next cell.

    ``site`` is a directory to serve (default: a fresh temporary directory, removed by
    :meth:`~NotebookServer.stop`, so ``%%page`` cells have somewhere to go) or an async
    handler ``async def handler(ctx) -> Response``. ``dev=True`` shows tracebacks on error
    pages and recompiles rewritten pages. ``port=0`` lets the system pick a free port
    (several students on one machine never collide). Other keywords are
    :class:`pyweb.server.ServerConfig` fields. ``mode``: ``"thread"`` (default) or
    ``"guest"`` (trio guest mode on the kernel's asyncio loop; see the module docstring).
    ``csrf``: the CSRF check of POSTs is on, as in ``pyweb serve`` and ``make run``: a page
    that works here works there, and a form without ``csrf_field()`` is refused (403) here
    as it would be there. ``csrf=False`` turns it off (every path exempt), for a
    demonstration that needs it off; the site is otherwise built from the settings exactly
    as ``pyweb serve`` builds it (:meth:`pyweb.app.site.Site.from_settings`).
    ``loop``: ``"trio"`` or ``"asyncio"`` (the server of ``pyweb serve --loop asyncio``);
    default ``pyweb.testing.default_loop()``, trio unless ``PYWEB_TESTING_LOOP`` says
    otherwise. Guest mode is trio's own.

    The new server becomes the one ``%%page`` writes to.
    """
    global _current
    if mode not in ("thread", "guest"):
        raise ValueError(f"mode must be 'thread' or 'guest', got {mode!r}")
    if mode == "guest" and loop not in (None, "trio"):
        raise ValueError("mode='guest' runs trio as a guest of the kernel's loop: loop='trio'")
    if mode == "thread" and loop is not None:
        config["loop"] = loop
    handler: Callable[..., Any] | None = None
    owns = False
    site_dir: Path | None
    if site is None:
        site_dir = Path(tempfile.mkdtemp(prefix="pyweb-site-"))
        # The site looks for templates/ when it starts, so make it now for %%template.
        (site_dir / "templates").mkdir()
        owns = True
    elif callable(site):
        handler, site_dir = site, None
    else:
        site_dir = Path(site).resolve()
        if not site_dir.is_dir():
            raise NotADirectoryError(f"site directory {os.fspath(site)!r} does not exist")
    server = NotebookServer(
        site_dir,
        handler,
        mode=mode,
        dev=dev,
        config={"port": port, **config},
        owns_site_dir=owns,
        csrf=csrf,
    )
    try:
        if mode == "thread":
            server._start_thread()
        else:
            server._start_guest()
    except BaseException:
        if owns and site_dir is not None:
            shutil.rmtree(site_dir, ignore_errors=True)
        raise
    atexit.register(server.stop)  # "Interrupt kernel" does not stop a thread; exit does
    _running.append(server)
    _current = server
    return server


def stop_all() -> int:
    """Stop every server :func:`serve` started in this kernel (after a set-up cell was run
    twice, the first server has lost its variable but still runs); return how many."""
    servers = list(_running)
    for server in servers:
        server.stop()
    return len(servers)


def current() -> NotebookServer:
    """The server ``%%page`` writes to (the last one started), or a helpful error."""
    if _current is None:
        raise RuntimeError(
            "no pyweb server is running in this notebook. Start one first:\n"
            "    import pyweb.notebook\n"
            "    srv = pyweb.notebook.serve()"
        )
    return _current
