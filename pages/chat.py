# A chat room with server push (Hop's diffuse web; CML events): see _chat.py.
#
#   GET  /chat               the page (its script long-polls for new messages)
#   GET  /chat?after=N       JSON {"messages": [...]}: waits until there is a message after N
#                            (or 30 s, or the browser leaving)
#   POST /chat name=..&text=..   say something (JSON answer with ?json, else back to the page)
#   GET  /chat?stream[&after=N]  server-sent events (text/event-stream): every new message
#   GET  /chat?waiting       JSON {"waiting": n}: how many requests wait in this worker now
#
# Every answer says which worker process gave it (X-Pyweb-Worker: its pid): with
# `pyweb serve --workers 2 --cache redis://...` a message posted to one worker reaches the
# waiters of both.
import os

from pyweb import csrf_field
from pyweb.forms import get_nat, get_string

import _chat
from _layout import page

WORKER = [("X-Pyweb-Worker", str(os.getpid()))]

if conn.method == "POST":
    name = get_string("name", max_length=40)
    text = get_string("text", max_length=500)
    message = await _chat.post(name, text)  # noqa: F704
    if "json" in conn.query:
        conn.return_(message, headers=WORKER)
    else:
        conn.redirect("/chat", status=303)
elif "stream" in conn.query:
    # EventSource sends the last id it saw when it reconnects.
    last = conn.headers.get("last-event-id") or conn.query.get("after") or "0"
    after = int(last) if last.isdigit() else 0
    conn.return_(
        _chat.stream(after, conn.client_gone_evt(), conn.shutdown_evt()),
        content_type="text/event-stream",
        headers=[("Cache-Control", "no-cache"), *WORKER],
    )
elif "after" in conn.query:
    after = get_nat("after", max=2**53)  # seq numbers from Redis are large (see _chat.py)
    news = await _chat.wait_for_messages(after, conn.client_gone_evt(), conn.shutdown_evt())  # noqa: F704
    # None: the client has gone; the answer goes nowhere, but a page answers exactly once.
    conn.return_({"messages": news or [], "gone": news is None}, headers=WORKER)
elif "waiting" in conn.query:
    conn.return_({"waiting": _chat.waiting()}, headers=WORKER)
else:
    # the site's layout around the library's HTML (with this session's token)
    conn.return_(page("Chat", _chat.page(csrf_field())))
