"""The chat room behind ``chat.py``: server push with first-class events.

Hop's "diffuse web" (Hop §1, §2) has the server push to the browser; here by long polling.
A browser asks ``/chat?after=N`` and the request *waits* until there is a message it has
not seen. Every waiting request holds a port on the room's :class:`~pyweb.events.Multicast`
(CML §3.1: each port sees every later message, in order) and synchronizes on a choice of
events (CML §2)::

    select(port.recv_evt(), timeout(30), conn.client_gone_evt(), conn.shutdown_evt())

Exactly one commits: a new message (answer with it), the timeout (answer "nothing new", the
browser asks again), the client leaving (a closed tab frees its waiter at once instead of
holding a task and a port for up to 30 s) or the server shutting down (answer now, so a
graceful shutdown does not wait for the poll). ``/chat?stream`` offers the same as
server-sent events: one response that stays open, the same choice inside an async
generator (Hop §3.2's chunked replies).

This is a library module (its name starts with ``_``): imported once per site load, so the
room outlives each request (docs/pages.md); the scripts run per request. The room is
deliberately process state: a waiting request is a live task, which no database can hold.
So it is one :class:`Room` object, not top-level lists and dicts: pyweb's regions
(SMLserver §2.1: every request starts from the library's initial state) reset changed
top-level containers after a request, which is right for accidental state and wrong here
(resetting the room would strand its waiters). Messages are also kept only in memory:
a restart empties the room.
"""

from __future__ import annotations

import json
import time
from collections import deque
from collections.abc import AsyncIterator
from typing import Any

from pyweb.events import Event, Multicast, never, select, timeout, wrap

__all__ = ["PAGE", "page", "ROOM", "Room", "post", "since", "stream", "wait_for_messages", "waiting"]

WAIT_SECONDS = 30.0
"""How long one long poll waits before answering "nothing new" (the browser asks again)."""


class Room:
    """The room: a multicast channel for news, the recent history, a waiter count."""

    def __init__(self, history: int = 100) -> None:
        self.news: Multicast[dict[str, Any]] = Multicast()
        self.history: deque[dict[str, Any]] = deque(maxlen=history)  # for late polls
        self.seq = 0
        self.waiting = 0


ROOM = Room()


PAGE = """<!DOCTYPE html>
<html><head><title>Chat</title><link rel="stylesheet" href="/style.css"></head>
<body><h2>Chat</h2>
<ul id="messages"></ul>
<form id="say" action="/chat" method="post"><!--csrf-->
  <input name="name" placeholder="your name" maxlength="40" required>
  <input name="text" placeholder="say something" maxlength="500" required autofocus>
  <input type="submit" value="Send">
</form>
<p><i>Each open tab keeps one request waiting on the server (a long poll); close the tab
and the server frees it at once. Served by <a href="/">pyweb</a>.</i></p>
<script>
let after = 0;
const list = document.getElementById("messages");
function show(m) {
  const li = document.createElement("li");
  li.textContent = m.name + ": " + m.text;
  list.appendChild(li);
  after = Math.max(after, m.seq);
}
async function poll() {
  for (;;) {
    try {
      const r = await fetch("/chat?after=" + after);
      (await r.json()).messages.forEach(show);
    } catch (e) {
      await new Promise(ok => setTimeout(ok, 2000));  // server away: try again later
    }
  }
}
document.getElementById("say").addEventListener("submit", async (e) => {
  e.preventDefault();
  const form = new FormData(e.target);
  await fetch("/chat?json", {method: "POST", body: new URLSearchParams(form)});
  e.target.text.value = "";
});
poll();
</script>
</body></html>"""
"""The chat page: a form, and a script that long-polls ``/chat?after=N`` in a loop."""


def page(csrf_field: object) -> str:
    """The chat page with the session's CSRF field in its form (the script posts the form's
    fields, the token among them)."""
    return PAGE.replace("<!--csrf-->", csrf_field.__html__())  # type: ignore[attr-defined]


def post(name: str, text: str) -> dict[str, Any]:
    """Add a message to the room: every waiting request wakes up with it."""
    ROOM.seq += 1
    message = {"seq": ROOM.seq, "name": name, "text": text, "time": time.time()}
    ROOM.history.append(message)
    ROOM.news.send(message)  # never blocks: each port buffers (Mailbox, CML Fig. 3)
    return message


def since(after: int) -> list[dict[str, Any]]:
    """The messages with a sequence number above ``after`` that are still in the history."""
    return [m for m in ROOM.history if m["seq"] > after]


def waiting() -> int:
    """How many requests are waiting right now (the test watches this count)."""
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
        news = since(after)
        if news:
            return news
        ROOM.waiting += 1
        try:
            return await select(
                wrap(port.recv_evt(), lambda _message: since(after)),
                wrap(timeout(seconds), lambda _: []),
                wrap(client_gone, lambda _: None),
                wrap(stopping or never(), lambda _: []),
            )
        finally:
            ROOM.waiting -= 1
    finally:
        port.close()


def _event(message: dict[str, Any]) -> str:
    return f"id: {message['seq']}\ndata: {json.dumps(message)}\n\n"


async def stream(
    after: int, client_gone: Event[None], stopping: Event[None] | None = None
) -> AsyncIterator[str]:
    """Server-sent events (``text/event-stream``): the messages after ``after``, then each
    new one as it comes, on one response that stays open. One port for the whole stream:
    it sees every later message, in order. A comment line every ``WAIT_SECONDS`` keeps
    proxies from closing an idle stream; the stream ends when the client leaves or the
    server shuts down (the browser's EventSource reconnects with ``Last-Event-ID``)."""
    port = ROOM.news.port()
    ROOM.waiting += 1
    try:
        for message in since(after):
            after = message["seq"]
            yield _event(message)
        while True:
            got = await select(
                port.recv_evt(),
                wrap(timeout(WAIT_SECONDS), lambda _: "heartbeat"),
                wrap(client_gone, lambda _: "gone"),
                wrap(stopping or never(), lambda _: "gone"),
            )
            if got == "gone":
                return
            if got == "heartbeat":
                yield ": still here\n\n"
            elif got["seq"] > after:  # (a message the history part already sent is skipped)
                after = got["seq"]
                yield _event(got)
    finally:
        ROOM.waiting -= 1
        port.close()
