"""The chat room behind ``chat.py``: server push with first-class events.

Hop's "diffuse web" (Hop §1, §2) has the server push to the browser; here by long polling.
A browser asks ``/chat?after=N`` and the request *waits* until there is a message it has
not seen. Every waiting request holds a port on the room's
:class:`~pyweb.push.SharedMulticast` (CML §3.1: each port sees every later message, in
order) and synchronizes on a choice of events (CML §2)::

    select(port.recv_evt(), timeout(30), conn.client_gone_evt(), conn.shutdown_evt())

Exactly one commits: a new message (answer with it), the timeout (answer "nothing new", the
browser asks again), the client leaving (a closed tab frees its waiter at once instead of
holding a task and a port for up to 30 s) or the server shutting down (answer now, so a
graceful shutdown does not wait for the poll). ``/chat?stream`` offers the same as
server-sent events: one response that stays open, the same choice inside an async
generator (Hop §3.2's chunked replies).

The room's channel is shared by every process of the site: with ``pyweb serve --workers 2
--cache redis://...`` a message posted to one worker reaches the waiters of every worker
(Redis pub/sub), and the channel keeps the last 100 messages (the history a late poll
reads) and numbers them (``seq``) for all processes at once. With the in-process cache it
is all in this process. A port may receive a :class:`~pyweb.push.Resync` instead of a
message: this process may have missed messages (it has just subscribed, or lost Redis for a
while), so the waiter re-reads the history.

This is a library module (its name starts with ``_``): imported once per site load, so the
room outlives each request (docs/pages.md); the scripts run per request. A waiting request
is a live task, which no database can hold, so the room is one :class:`Room` object, not
top-level lists and dicts: pyweb's regions (SMLserver §2.1: every request starts from the
library's initial state) reset changed top-level containers after a request, which is
right for accidental state and wrong here (resetting the room would strand its waiters).
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import parse_qs

from pyweb import runtime
from pyweb.events import Event, at_time, never, select, timeout, wrap
from pyweb.push import MulticastUnavailable, Resync, SharedMulticast
from pyweb.quot import Safe, safe

__all__ = [
    "PAGE",
    "page",
    "ROOM",
    "Room",
    "post",
    "since",
    "stream",
    "talk",
    "wait_for_messages",
    "waiting",
]

WAIT_SECONDS = 30.0
"""How long one long poll waits before answering "nothing new" (the browser asks again)."""


class Room:
    """The room: a channel shared by every worker (with its history), a waiter count."""

    def __init__(self, history: int = 100) -> None:
        self.news = SharedMulticast("chat", history=history)
        self.waiting = 0  # in this process


ROOM = Room()


PAGE = """<ul id="messages"></ul>
<form id="say" action="/chat" method="post"><!--csrf-->
  <input name="name" placeholder="your name" maxlength="40" required>
  <input name="text" placeholder="say something" maxlength="500" required autofocus>
  <input type="submit" value="Send">
</form>
<p><i>This tab listens by <b id="how">long polling</b> (try <a href="#poll">long poll</a>,
<a href="#sse">server-sent events</a> or <a href="#ws">WebSocket</a>): one request or
connection waits on the server; close the tab and the server frees it at once.</i></p>
<script>
let after = 0;
const list = document.getElementById("messages");
const how = location.hash.slice(1) || "poll";
document.getElementById("how").textContent =
  {poll: "long polling", sse: "server-sent events", ws: "WebSocket"}[how] || how;
window.addEventListener("hashchange", () => location.reload());
function show(m) {
  if (m.seq <= after) return;  // (seen already: a reconnection replays from `after`)
  const li = document.createElement("li");
  li.textContent = m.name + ": " + m.text;
  list.appendChild(li);
  after = m.seq;
}
const pause = (ms) => new Promise(ok => setTimeout(ok, ms));
async function poll() {
  for (;;) {
    try {
      const r = await fetch("/chat?after=" + after);
      (await r.json()).messages.forEach(show);
    } catch (e) {
      await pause(2000);  // server away: try again later
    }
  }
}
function sse() {  // EventSource reconnects by itself, sending Last-Event-ID
  const source = new EventSource("/chat?stream&after=" + after);
  source.onmessage = (e) => show(JSON.parse(e.data));
}
let socket = null;
function ws() {
  const scheme = location.protocol === "https:" ? "wss://" : "ws://";
  socket = new WebSocket(scheme + location.host + "/chat/ws?after=" + after);
  socket.onmessage = (e) => { const m = JSON.parse(e.data); if (m.seq) show(m); };
  socket.onclose = () => { socket = null; setTimeout(ws, 2000); };  // server away: again
}
document.getElementById("say").addEventListener("submit", async (e) => {
  e.preventDefault();
  const form = new FormData(e.target);
  if (how === "ws" && socket && socket.readyState === WebSocket.OPEN) {
    socket.send(JSON.stringify({name: form.get("name"), text: form.get("text")}));
  } else {
    await fetch("/chat?json", {method: "POST", body: new URLSearchParams(form)});
  }
  e.target.text.value = "";
});
({poll, sse, ws}[how] || poll)();
</script>"""
"""The chat's part of the page (``chat.py`` puts it in the site's layout): a form, and a
script that listens by long poll (``/chat?after=N`` in a loop), server-sent events
(``#sse``) or a WebSocket (``#ws``)."""


def page(csrf_field: object) -> Safe:
    """The chat's HTML with the session's CSRF field in its form (the script posts the
    form's fields, the token among them), marked safe for the layout to include as is."""
    return safe(PAGE.replace("<!--csrf-->", csrf_field.__html__()))  # type: ignore[attr-defined]


async def post(name: str, text: str) -> dict[str, Any]:
    """Add a message to the room: every waiting request, in every worker, wakes up with it.
    Returns the message with its ``seq``."""
    return await ROOM.news.send({"name": name, "text": text, "time": time.time()})


async def since(after: int) -> list[dict[str, Any]]:
    """The messages with a sequence number above ``after`` that are still in the history."""
    return await ROOM.news.since(after)


def waiting() -> int:
    """How many requests are waiting in this process right now (the tests watch it)."""
    return ROOM.waiting


async def wait_for_messages(
    after: int,
    client_gone: Event[None],
    stopping: Event[None] | None = None,
    seconds: float = WAIT_SECONDS,
) -> list[dict[str, Any]] | None:
    """Messages after ``after``: at once if there are some; otherwise wait for the next one
    (a list), the timeout or a server shutdown (``[]``: the browser asks again), or the
    client leaving (``None``)."""
    port = ROOM.news.port()  # subscribe *before* looking: a message sent after it is seen
    try:
        news = await since(after)
        if news:
            return news
        deadline = at_time(runtime.now() + seconds)  # one deadline across resyncs (any loop)
        ROOM.waiting += 1
        try:
            while True:
                got = await select(
                    port.recv_evt(),
                    wrap(deadline, lambda _: []),
                    wrap(client_gone, lambda _: None),
                    wrap(stopping or never(), lambda _: []),
                )
                if isinstance(got, Resync):  # messages may have been missed: look again
                    news = await since(after)
                    if news:
                        return news
                elif got is None or type(got) is list:
                    return got
                elif got["seq"] > after:
                    return [got]
        finally:
            ROOM.waiting -= 1
    finally:
        port.close()


def _said(text: str | bytes) -> tuple[str, str]:
    """A message a WebSocket sent: ``{"name": ..., "text": ...}``, checked like the form's
    fields (ValueError naming what is wrong)."""
    try:
        said = json.loads(text)
    except ValueError:
        raise ValueError('send a JSON object {"name": ..., "text": ...}') from None
    if not isinstance(said, dict):
        raise ValueError('send a JSON object {"name": ..., "text": ...}')
    fields = []
    for field, longest in (("name", 40), ("text", 500)):
        value = said.get(field)
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f"{field!r} must be a non-empty string")
        if len(value) > longest:
            raise ValueError(f"{field!r} is longer than {longest} characters")
        fields.append(value.strip())
    return fields[0], fields[1]


async def talk(ws: Any) -> None:
    """The room on a WebSocket: the messages after ``?after=N`` (0: the whole history), then
    each new one, as JSON text; a JSON ``{"name", "text"}`` received is posted (an
    ``{"error": ...}`` answers a bad one). One ``select`` waits for either side, or the
    server shutting down. The connection ends when the browser closes it (``recv_evt()``
    raises, which ends this function)."""
    query = parse_qs(ws.query)
    after = int(query["after"][0]) if query.get("after", [""])[0].isdigit() else 0
    port = ROOM.news.port()
    ROOM.waiting += 1
    try:
        got: Any = Resync("start")
        while True:
            if isinstance(got, Resync):  # the history first, then again after any gap
                for message in await since(after):
                    after = message["seq"]
                    await ws.send(json.dumps(message))
            elif type(got) is tuple:  # the browser said something
                try:
                    await post(*_said(got[1]))
                except ValueError as exc:
                    await ws.send(json.dumps({"error": str(exc)}))
            elif got == "stop":
                await ws.close(1001, "server shutting down")
                return
            elif got["seq"] > after:
                after = got["seq"]
                await ws.send(json.dumps(got))
            got = await select(
                wrap(ws.recv_evt(), lambda text: ("said", text)),
                port.recv_evt(),
                wrap(ws.shutdown_evt(), lambda _: "stop"),
            )
    finally:
        ROOM.waiting -= 1
        port.close()


def _event(message: dict[str, Any]) -> str:
    return f"id: {message['seq']}\ndata: {json.dumps(message)}\n\n"


async def stream(
    after: int, client_gone: Event[None], stopping: Event[None] | None = None
) -> AsyncIterator[str]:
    """Server-sent events (``text/event-stream``): the messages after ``after``, then each
    new one as it comes, on one response that stays open. One port for the whole stream:
    it sees every later message, in order. A comment line every ``WAIT_SECONDS`` keeps
    proxies from closing an idle stream; the stream ends when the client leaves, the server
    shuts down or Redis cannot be reached (the browser's EventSource reconnects with
    ``Last-Event-ID``)."""
    port = ROOM.news.port()
    ROOM.waiting += 1
    try:
        got: Any = Resync("start")
        while True:
            if isinstance(got, Resync):  # the history first, then again after any gap
                for message in await since(after):
                    after = message["seq"]
                    yield _event(message)
            elif got == "heartbeat":
                yield ": still here\n\n"
            elif got == "gone":
                return
            elif got["seq"] > after:  # (a message the history part already sent is skipped)
                after = got["seq"]
                yield _event(got)
            got = await select(
                port.recv_evt(),
                wrap(timeout(WAIT_SECONDS), lambda _: "heartbeat"),
                wrap(client_gone, lambda _: "gone"),
                wrap(stopping or never(), lambda _: "gone"),
            )
    except MulticastUnavailable:
        return  # Redis is away: end the stream; the browser reconnects and catches up
    finally:
        ROOM.waiting -= 1
        port.close()
