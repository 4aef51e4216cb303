"""Every error answers an API client in JSON: the site's (404, 405, 500, the page deadline's
503) and the server's own (a bad request head, 413, 431), over real sockets on both loops.

An API client is one whose request body is JSON or whose ``Accept`` ranks JSON above HTML
(:func:`pyweb.protocol.negotiation.prefers_json`, the one decision every error asks); a
browser keeps the short styled page. The server reads ``Accept`` from the raw head even
when it refuses the head (431, a malformed field), so those errors are JSON too.
"""

from __future__ import annotations

import json

import pytest

from pyweb.protocol import Limits
from pyweb.protocol.errors import ProtocolError
from pyweb.protocol.negotiation import prefers_html, prefers_json
from pyweb.protocol.parser import RequestParser
from pyweb.testing import serve
from tests.helpers import raw_exchange, write_site

pytestmark = [pytest.mark.timeout(60), pytest.mark.loops("trio", "asyncio")]

SITE = {
    "hello.txt": "hello\n",
    "fails.py": "raise RuntimeError('the page is broken')\n",
    # the page deadline stops it: the sleep is the subject (a page that takes too long)
    "slow.py": "from pyweb import runtime\nawait runtime.sleep(30)\nconn.return_('late')\n",
    # a service that reads its body (a token-less API: csrf=False)
    "api.py": (
        "from pyweb import service\n\n"
        "@service('/upload', methods=['POST'], csrf=False)\n"
        "async def upload(conn):\n"
        "    return {'size': len(await conn.body())}\n"
    ),
}

API = "Accept: application/json\r\n"
BROWSER = "Accept: text/html,application/xhtml+xml,*/*;q=0.8\r\n"


@pytest.fixture(scope="module")
def port(tmp_path_factory: pytest.TempPathFactory, loop: str):
    root = write_site(tmp_path_factory.mktemp("jsonerrors") / "site", SITE)
    limits = Limits(max_headers=12)
    with serve(root, loop=loop, page_timeout=0.5, max_body=1000, limits=limits) as client:
        yield client.server.port


def exchange(port: int, head: str, body: bytes = b"") -> tuple[int, dict[str, str], bytes]:
    """One raw request (``head`` without its final empty line); status, fields, body."""
    reply = raw_exchange(port, head.encode("latin-1") + b"\r\n" + body)
    top, _, content = reply.partition(b"\r\n\r\n")
    lines = top.decode("latin-1").split("\r\n")
    fields = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        fields[name.strip().lower()] = value.strip()
    return int(lines[0].split()[1]), fields, content


def as_json(status: int, fields: dict[str, str], body: bytes) -> dict[str, object]:
    """The JSON error, checked for its framing: the status inside, never cached."""
    assert fields["content-type"] == "application/json", (status, fields, body[:200])
    assert fields["cache-control"] == "no-store"
    data = json.loads(body)
    assert data["status"] == status and isinstance(data["error"], str) and data["error"]
    return data  # type: ignore[no-any-return]


def is_html(fields: dict[str, str], body: bytes) -> bool:
    return fields["content-type"].startswith("text/html") and body.lstrip().startswith(b"<!")


def get(target: str, accept: str = API) -> str:
    return f"GET {target} HTTP/1.1\r\nHost: x\r\n{accept}Connection: close\r\n"


def test_404_is_json_for_an_api_client_and_a_page_for_a_browser(port: int) -> None:
    status, fields, body = exchange(port, get("/no/such/thing"))
    assert status == 404
    assert as_json(status, fields, body)["error"] == "Not Found"  # (production: no detail)
    status, fields, body = exchange(port, get("/no/such/thing", BROWSER))
    assert status == 404 and is_html(fields, body)


def test_a_json_body_alone_makes_the_client_an_api_client(port: int) -> None:
    head = get("/no/such/thing", "Content-Type: application/json; charset=utf-8\r\n")
    status, fields, body = exchange(port, head)
    as_json(404, fields, body)


def test_405_of_a_static_file_is_json_with_allow(port: int) -> None:
    head = f"PUT /hello.txt HTTP/1.1\r\nHost: x\r\n{API}Content-Length: 0\r\nConnection: close\r\n"
    status, fields, body = exchange(port, head)
    assert status == 405 and fields["allow"] == "GET, HEAD"
    as_json(status, fields, body)


def test_a_page_that_fails_answers_500_json(port: int) -> None:
    status, fields, body = exchange(port, get("/fails"))
    assert status == 500
    # production: the reason only, never the exception's words
    assert as_json(status, fields, body)["error"] == "Internal Server Error"
    assert b"broken" not in body


def test_the_page_deadline_503_is_json_with_retry_after(port: int) -> None:
    status, fields, body = exchange(port, get("/slow"))
    assert status == 503 and fields["retry-after"] == "1"
    assert "took too long" in str(as_json(status, fields, body)["error"])
    status, fields, body = exchange(port, get("/slow", BROWSER))
    assert status == 503 and is_html(fields, body)


def test_the_servers_own_400_for_a_malformed_head_is_json(port: int) -> None:
    head = f"GET /hello.txt HTTP/1.1\r\nHost: x\r\n{API}this line has no colon\r\n"
    status, fields, body = exchange(port, head)
    assert status == 400
    as_json(status, fields, body)
    head = f"GET /hello.txt HTTP/1.1\r\nHost: x\r\n{BROWSER}this line has no colon\r\n"
    status, fields, body = exchange(port, head)
    assert status == 400 and is_html(fields, body)


def test_the_servers_own_413_is_json(port: int) -> None:
    head = (
        "POST /hello.txt HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        "Content-Length: 5000\r\n"
    )
    status, fields, body = exchange(port, head)
    assert status == 413
    as_json(status, fields, body)


def test_the_servers_own_413_for_a_chunked_body_is_json(port: int) -> None:
    head = f"POST /upload HTTP/1.1\r\nHost: x\r\n{API}Transfer-Encoding: chunked\r\n"
    chunks = b"".join(b"200\r\n" + b"x" * 0x200 + b"\r\n" for _ in range(4)) + b"0\r\n\r\n"
    status, fields, body = exchange(port, head, chunks)
    assert status == 413
    as_json(status, fields, body)


def test_the_servers_own_431_is_json_when_accept_came_before_the_limit(port: int) -> None:
    extra = "".join(f"X-Field-{n}: {n}\r\n" for n in range(20))
    status, fields, body = exchange(port, get("/hello.txt") + extra)
    assert status == 431
    as_json(status, fields, body)
    status, fields, body = exchange(port, get("/hello.txt", BROWSER) + extra)
    assert status == 431 and is_html(fields, body)


# -- the one decision, and what the parser keeps for it --------------------------------------


@pytest.mark.parametrize(
    "content_type, accept, json_, html",
    [
        (None, None, False, True),  # a bare client: the page
        (None, "*/*", False, False),  # fetch, curl: neither (a 401, not a login redirect)
        (None, "application/json", True, False),
        (None, "application/problem+json", True, False),
        (None, "text/html;q=0.5, application/json", True, False),
        (None, "text/html, application/json;q=0.9", False, True),
        (None, "application/json;q=0", False, False),
        ("application/json", "text/html", True, False),  # the body says it
        ("application/vnd.api+json", None, True, False),
        ("text/plain", "application/xhtml+xml", False, True),
    ],
)
def test_prefers_json_and_prefers_html(
    content_type: str | None, accept: str | None, json_: bool, html: bool, loop: str
) -> None:
    assert prefers_json(content_type, accept) is json_
    assert prefers_html(content_type, accept) is html


@pytest.mark.parametrize(
    "head, status",
    [
        (b"GET / HTTP/1.1\r\nHost: x\r\nACCEPT:  application/json \r\nbad line\r\n\r\n", 400),
        (b"GET / HTTP/1.1\r\nHost: x\r\naccept: application/json\r\n"
         + b"".join(b"X-%d: 1\r\n" % n for n in range(200)) + b"\r\n", 431),
        (b"GET / HTTP/1.1\r\naccept: application/json\r\nX: " + b"y" * 70000, 431),
    ],
)
def test_a_refused_head_keeps_its_accept_for_the_error(head: bytes, status: int, loop: str) -> None:
    parser = RequestParser()
    parser.feed(head)
    with pytest.raises(ProtocolError) as info:
        parser.next_event()
    assert info.value.status == status
    assert info.value.accept == "application/json"
