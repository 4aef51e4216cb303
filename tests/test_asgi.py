"""The example site as an ASGI application (pyweb.asgi) under real ASGI servers.

``PYWEB_SITE=pages uvicorn pyweb.asgi:app`` and the same under granian, each started as a
process on 127.0.0.1 and driven over real sockets: the guessing game is played to the
end (the page script and the service version), and a static file, a 404 page, HEAD and a
form error come back as pyweb's own server gives them.
"""

from __future__ import annotations

import http.cookiejar
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import free_port, until

PAGES = Path(__file__).resolve().parent.parent / "pages"
BIN = Path(sys.executable).parent

SERVERS = {
    "uvicorn": lambda port: [
        str(BIN / "uvicorn"), "pyweb.asgi:app", "--host", "127.0.0.1", "--port", str(port),
        "--lifespan", "on", "--log-level", "warning",
    ],
    "granian": lambda port: [
        str(BIN / "granian"), "--interface", "asgi", "--host", "127.0.0.1", "--port",
        str(port), "--workers", "1", "--log-level", "warning", "pyweb.asgi:app",
    ],
}  # fmt: skip


WAIT_GONE = """\
import os
from pyweb.events import select, timeout, wrap
with open(os.environ["PYWEB_TEST_GONE"], "w") as f:
    f.write("waiting")  # (the test waits for this before it leaves)
what = await select(
    wrap(conn.client_gone_evt(), lambda _: "gone"), wrap(timeout(20), lambda _: "timeout")
)
with open(os.environ["PYWEB_TEST_GONE"], "w") as f:
    f.write(what)
conn.return_(what)
"""


class Client:
    """A browser-like client: cookies kept, redirects not followed, errors returned."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.opener = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()), _NoRedirect()
        )

    def request(
        self,
        method: str,
        path: str,
        form: dict[str, str] | None = None,
        headers: dict[str, str] | None = None,
    ):
        data = urllib.parse.urlencode(form).encode() if form is not None else None
        req = urllib.request.Request(self.base + path, data=data, method=method)
        for name, value in (headers or {}).items():
            req.add_header(name, value)
        try:
            with self.opener.open(req, timeout=10) as r:
                return r.status, dict(r.headers), r.read()
        except urllib.error.HTTPError as err:
            return err.code, dict(err.headers), err.read()


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        return None


@pytest.fixture(params=sorted(SERVERS), scope="module")
def asgi_server(request: pytest.FixtureRequest, tmp_path_factory) -> Iterator[Client]:
    name = request.param
    if shutil.which(SERVERS[name](0)[0]) is None:
        pytest.fail(f"{name} is not installed (pip install -e '.[dev]')")
    site = tmp_path_factory.mktemp("site") / "pages"
    shutil.copytree(PAGES, site, ignore=shutil.ignore_patterns("data", "__pycache__"))
    (site / "wait_gone.py").write_text(WAIT_GONE)
    marker = site.parent / "gone.txt"
    env = dict(os.environ, PYWEB_SITE=str(site), PYWEB_TEST_GONE=str(marker))
    for _attempt in range(3):  # a free port may be taken by someone else before we bind it
        port = free_port()
        proc = subprocess.Popen(
            SERVERS[name](port), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )
        if _wait_listening(port, proc):
            break
        proc.kill()
        proc.wait()
    else:
        output = proc.stdout.read().decode(errors="replace") if proc.stdout else ""
        pytest.fail(f"{name} did not start: {output}")
    try:
        client = Client(f"http://127.0.0.1:{port}")
        client.marker = marker  # type: ignore[attr-defined]
        yield client
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _wait_listening(port: int, proc: subprocess.Popen[bytes]) -> bool:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return True
        except OSError:
            time.sleep(0.1)
    return False


def hidden_fields(page: str) -> dict[str, str]:
    return dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)">', page))


def play(client: Client, path: str) -> int:
    """Play the guessing game at ``path`` by bisection; the number of guesses it took."""
    status, _, body = client.request("GET", path)
    assert status == 200, body
    page = body.decode()
    assert "Guess a number between 0 and 100" in page
    low, high = 0, 100
    for guesses in range(1, 20):
        guess = (low + high) // 2
        status, _, body = client.request(
            "POST", path, dict(hidden_fields(page), guess=str(guess))
        )
        assert status == 200, body
        page = body.decode()
        if "Congratulations!" in page:
            assert f"You guessed the number {guess}." in page
            return guesses
        if "too big" in page:
            high = guess - 1
        else:
            assert "too small" in page, page
            low = guess + 1
    raise AssertionError("the game never ended")


def test_the_guessing_game_played_to_the_end(asgi_server: Client) -> None:
    assert play(asgi_server, "/guess") <= 7  # bisection of 0..100


def test_the_guessing_service_played_to_the_end(asgi_server: Client) -> None:
    assert play(asgi_server, "/svc/guess") <= 7


def test_static_files_error_pages_head_and_form_errors(asgi_server: Client) -> None:
    status, headers, body = asgi_server.request("GET", "/style.css")
    assert status == 200 and headers["content-type"].startswith("text/css")
    assert body == (PAGES / "style.css").read_bytes()
    status, headers, body = asgi_server.request("HEAD", "/hello")
    assert status == 200 and body == b"" and int(headers["content-length"]) > 0
    status, _, body = asgi_server.request("GET", "/no/such/page")
    assert status == 404 and b"404 Not Found" in body
    status, _, body = asgi_server.request("GET", "/svc/mul?n=abc")
    assert status == 400 and b"n" in body
    status, _, body = asgi_server.request("GET", "/svc/mul?n=3")
    assert status == 200 and b"<td>9</td>" in body


@pytest.mark.parametrize("coding", ["gzip", "br"])
def test_compressed_files_and_pages_under_the_asgi_server(asgi_server: Client, coding: str) -> None:
    """The compression guard runs in the pipeline the ASGI adapter serves too."""
    import gzip

    import brotli

    decode = gzip.decompress if coding == "gzip" else brotli.decompress
    css = (PAGES / "style.css").read_bytes()
    status, headers, body = asgi_server.request("GET", "/style.css", headers={"Accept-Encoding": coding})
    assert status == 200 and headers["content-encoding"] == coding and decode(body) == css
    assert "Accept-Encoding" in headers["vary"]
    _, plain, page = asgi_server.request("GET", "/svc/mul?n=30")  # a page of 30 rows
    assert len(page) > 1024 and "content-encoding" not in plain
    _, headers, body = asgi_server.request("GET", "/svc/mul?n=30", headers={"Accept-Encoding": coding})
    assert headers["content-encoding"] == coding and decode(body) == page


def test_a_page_waiting_on_client_gone_ends_when_the_client_leaves(asgi_server: Client) -> None:
    marker: Path = asgi_server.marker  # type: ignore[attr-defined]
    marker.unlink(missing_ok=True)
    port = int(asgi_server.base.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(b"GET /wait_gone HTTP/1.1\r\nHost: x\r\n\r\n")
        until(lambda: marker.exists() and marker.read_text() == "waiting", "the page waiting")
    until(lambda: marker.read_text() != "waiting", "the page to end")
    assert marker.read_text() == "gone"  # long before its 20 s timeout


def test_the_chat_websocket_under_the_asgi_server(asgi_server: Client) -> None:
    # The example chat's @pyweb.websocket handler, unchanged, on ASGI's websocket scope:
    # a message sent on one socket reaches both, a bad one is answered with an error.
    from websockets.sync.client import connect

    url = asgi_server.base.replace("http://", "ws://") + "/chat/ws?after=0"
    with connect(url, open_timeout=10) as a, connect(url, open_timeout=10) as b:
        a.send(json.dumps({"name": "ann", "text": "through ASGI"}))
        for ws in (a, b):
            while True:  # the history comes first
                got = json.loads(ws.recv(timeout=10))
                if got.get("text") == "through ASGI":
                    break
            assert got["name"] == "ann"
        a.send("not json")
        assert "error" in json.loads(a.recv(timeout=10))


def test_a_websocket_from_another_site_is_refused_under_the_asgi_server(
    asgi_server: Client,
) -> None:
    from websockets.exceptions import InvalidStatus
    from websockets.sync.client import connect

    url = asgi_server.base.replace("http://", "ws://") + "/chat/ws"
    with pytest.raises(InvalidStatus) as caught:
        connect(url, origin="http://evil.example", open_timeout=10)
    assert caught.value.response.status_code == 403


def test_a_websocket_message_over_max_message_closes_with_1009_under_the_asgi_server(
    asgi_server: Client,
) -> None:
    from websockets.exceptions import ConnectionClosed
    from websockets.sync.client import connect

    url = asgi_server.base.replace("http://", "ws://") + "/chat/ws?after=0"
    with connect(url, open_timeout=10, max_size=None) as ws:
        ws.send("x" * ((1 << 20) + 1))  # the route's max_message is 1 MiB
        with pytest.raises(ConnectionClosed) as closed:
            while True:
                ws.recv(timeout=10)
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009
