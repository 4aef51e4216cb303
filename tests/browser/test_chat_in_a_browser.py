"""The chat in a real browser (headless Chromium) across two workers, for each of the page's
three ways of listening: long poll (``/chat#poll``), server-sent events (``#sse``) and a
WebSocket (``#ws``).

``pyweb serve pages --workers 2 --cache redis://...`` runs in a subprocess (the
``chat_workers`` fixture of tests/conftest.py), on each loop; six tabs listen (two per way).
Messages are posted until both workers have taken some (each answer names its worker), so
every tab, whichever worker holds its listener, must show messages that were posted to the
other worker. Then a message typed into a WebSocket tab (sent on the
WebSocket) must show in every tab.
"""

from __future__ import annotations

import json
import re
import socket
import time
import uuid

import pytest

from tests.browser.chromium import CHROMIUM, needs_chromium, sync_api
from tests.csrf_helpers import raw_session

pytestmark = [
    needs_chromium,
    pytest.mark.timeout(120),
    pytest.mark.loops("trio", "asyncio"),
]
SESSION: dict[int, tuple[str, str]] = {}


def request(port: int, method: str, target: str, body: bytes = b"") -> tuple[str, dict]:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        head = f"{method} {target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
        if method == "POST":  # as a browser: the session and the form's CSRF token
            if port not in SESSION:
                SESSION[port] = raw_session("127.0.0.1", port)
            cookie, token = SESSION[port]
            head += f"Cookie: {cookie}\r\n"
            body += f"&csrf_token={token}".encode()
            head += "Content-Type: application/x-www-form-urlencoded\r\n"
            head += f"Content-Length: {len(body)}\r\n"
        sock.sendall(head.encode() + b"\r\n" + body)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head_bytes, _, rest = data.partition(b"\r\n\r\n")
    worker = re.search(rb"(?i)x-pyweb-worker: (\d+)", head_bytes).group(1).decode()
    return worker, json.loads(rest)


def waiting_total(port: int) -> int:
    """Requests and sockets waiting in both workers (asked until both have answered)."""
    seen: dict[str, int] = {}
    deadline = time.monotonic() + 20
    while len(seen) < 2 and time.monotonic() < deadline:
        worker, answer = request(port, "GET", "/chat?waiting")
        seen[worker] = answer["waiting"]
    return sum(seen.values())


def test_every_tab_sees_messages_posted_to_either_worker(chat_workers):
    port = chat_workers
    base = f"http://127.0.0.1:{port}"
    before = waiting_total(port)
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            tabs = {}
            for how in ("poll", "sse", "ws"):
                for i in range(2):
                    page = browser.new_context().new_page()  # a connection pool of its own
                    page.goto(f"{base}/chat#{how}")
                    assert page.locator("#how").text_content() in (
                        "long polling", "server-sent events", "WebSocket",
                    )  # fmt: skip
                    tabs[f"{how}{i}"] = page
            deadline = time.monotonic() + 20
            while waiting_total(port) < before + 6:
                assert time.monotonic() < deadline, "the six tabs did not all start listening"
                time.sleep(0.1)
            texts, workers = [], set()
            while len(texts) < 4 or len(workers) < 2:  # posts land where the kernel puts them
                assert len(texts) < 60, f"every post went to worker {workers}"
                text = f"hello {uuid.uuid4().hex[:6]}"
                worker, _ = request(port, "POST", "/chat?json", f"name=test&text={text}".encode())
                workers.add(worker)
                texts.append(text)
            shown = "(texts) => texts.every(t => [...document.querySelectorAll('#messages li')]" \
                    ".some(li => li.textContent === 'test: ' + t))"  # fmt: skip
            for page in tabs.values():
                page.wait_for_function(shown, arg=texts, timeout=15000)
            # typed into a WebSocket tab: sent on its WebSocket, shown everywhere
            typing = tabs["ws0"]
            typing.fill('input[name="name"]', "ada")
            typing.fill('input[name="text"]', "typed on a websocket")
            typing.click('input[type="submit"]')
            said = "() => [...document.querySelectorAll('#messages li')]" \
                   ".some(li => li.textContent === 'ada: typed on a websocket')"  # fmt: skip
            for page in tabs.values():
                page.wait_for_function(said, timeout=15000)
        finally:
            browser.close()
