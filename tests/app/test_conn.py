"""``conn`` (SMLserver's Ns.Conn): the request's data and the one response, over real sockets."""

from __future__ import annotations

import html
import socket

import pytest

from pyweb.testing import serve

from ..csrf_helpers import TOKEN_PAGE, token_header

pytestmark = pytest.mark.loops("trio", "asyncio")

ECHO = """
import json
conn.return_({
    "method": conn.method,
    "path": conn.path,
    "query": conn.query.multi_items(),
    "form": conn.form.multi_items(),
    "files": [(n, f.filename, f.content_type, f.data.decode()) for n, f in conn.files.multi_items()],
    "agent": conn.headers.get("user-agent"),
    "x": conn.headers.get("X-Custom"),
    "cookies": conn.cookies,
    "peer_host": conn.peer.rsplit(":", 1)[0],
    "url": conn.url,
})
"""


def test_request_data(site):
    root = site({"echo.py": ECHO})
    with serve(root) as client:
        r = client.get(
            "/echo?a=1&b=two+words&a=3&e=", headers={"X-Custom": "yes", "Cookie": 's=1; t="q"'}
        )
        data = r.json()
        assert r.headers["content-type"] == "application/json"
        assert data["method"] == "GET"
        assert data["path"] == "/echo"
        assert data["query"] == [["a", "1"], ["b", "two words"], ["a", "3"], ["e", ""]]
        assert data["form"] == data["query"]
        assert data["x"] == "yes"
        assert data["cookies"] == {"s": "1", "t": "q"}
        assert data["peer_host"] == "127.0.0.1"
        assert data["url"] == "/echo?a=1&b=two+words&a=3&e="


def test_urlencoded_post_form_is_the_body_alone(site):
    """A POST's form is its body; the query's variables are in conn.query only (a URL
    cannot fill in a form meant to be posted)."""
    root = site({"echo.py": ECHO, **TOKEN_PAGE})
    with serve(root) as client:
        token = token_header(client)
        data = client.post("/echo?n=1", {"n": "2", "name": "Ådá"}, headers=token).json()
        assert data["method"] == "POST"
        assert data["form"] == [["n", "2"], ["name", "Ådá"]]
        assert data["query"] == [["n", "1"]]


def multipart(boundary: str, parts: list[tuple[str, str | None, str, bytes]]) -> bytes:
    out = b""
    for name, filename, ctype, data in parts:
        disp = f'form-data; name="{name}"' + (
            f'; filename="{filename}"' if filename is not None else ""
        )
        out += (
            f"--{boundary}\r\nContent-Disposition: {disp}\r\nContent-Type: {ctype}\r\n\r\n".encode()
            + data
            + b"\r\n"
        )
    return out + f"--{boundary}--\r\n".encode()


def test_multipart_fields_and_files(site):
    root = site({"echo.py": ECHO, **TOKEN_PAGE})
    body = multipart(
        "XyZ",
        [
            ("title", None, "text/plain; charset=utf-8", "naïve".encode()),
            ("upload", "notes.txt", "text/plain", b"line 1\r\nline 2"),
            ("empty", "", "application/octet-stream", b""),
        ],
    )
    with serve(root) as client:
        headers = {"Content-Type": "multipart/form-data; boundary=XyZ", **token_header(client)}
        r = client.post("/echo", body, headers=headers)
        data = r.json()
        assert data["form"] == [["title", "naïve"]]
        assert data["files"] == [
            ["upload", "notes.txt", "text/plain", "line 1\r\nline 2"],
            ["empty", "", "application/octet-stream", ""],
        ]


def test_bad_form_data_is_a_400_and_the_server_keeps_serving(site):
    root = site({"echo.py": ECHO})
    with serve(root, dev=True) as client:
        bad = [
            (b"a=%ff", "application/x-www-form-urlencoded", "not valid UTF-8"),
            (b"--nope\r\n", "multipart/form-data", "without a boundary"),
            (b"garbage", "multipart/form-data; boundary=B", "never contains its boundary"),
            (
                b"--B\r\nContent-Type: text/plain\r\n\r\nx\r\n--B--",
                "multipart/form-data; boundary=B",
                "Content-Disposition",
            ),
            (
                "&".join(f"f{i}=1" for i in range(1001)).encode(),
                "application/x-www-form-urlencoded",
                "too many form fields",
            ),
        ]
        for body, ctype, message in bad:
            r = client.post("/echo", body, headers={"Content-Type": ctype})
            assert r.status == 400, (body, r.text)
            assert message in r.text, r.text
        assert client.get("/echo").status == 200


def test_body_over_the_limit_is_413(site):
    root = site({"echo.py": ECHO})
    from pyweb.protocol.parser import Limits

    with serve(root, limits=Limits(max_body=1000)) as client:
        r = client.post("/echo", {"big": "x" * 2000})
        assert r.status == 413


def test_return_status_content_type_headers(site):
    root = site(
        {
            "teapot.py": "conn.return_(b'short and stout', status=418, content_type='text/plain', headers=[('X-Pot', 'tea')])\n",
            "nothing.py": "x = 1\n",
            "twice.py": "conn.return_('one')\nif True:\n    conn.return_('two')\n",
            "badstatus.py": "conn.return_('x', status=99)\n",
            "crash.py": "values = {}\nconn.return_(values['missing'])\n",
        }
    )
    with serve(root, dev=True) as client:
        r = client.get("/teapot")
        assert (r.status, r.headers["content-type"], r.headers["x-pot"], r.body) == (
            418,
            "text/plain",
            "tea",
            b"short and stout",
        )
        r = client.get("/nothing")
        assert r.status == 500
        assert "nothing.py finished without giving a response" in r.text
        r = client.get("/twice")
        assert r.status == 500
        assert "ResponseAlreadySent" in r.text
        assert "twice.py already returned a response at line 1" in r.text
        assert "line 3" in r.text
        r = client.get("/badstatus")
        assert r.status == 500 and "status is an int from 200 to 999, got 99" in r.text
        r = client.get("/crash")
        assert r.status == 500 and "KeyError" in r.text and "crash.py" in r.text
    with serve(root) as client:  # production: no details
        r = client.get("/nothing")
        assert r.status == 500 and "finished without" not in r.text
        r = client.get("/crash")
        assert r.status == 500 and "KeyError" not in r.text
        assert client.get("/teapot").status == 418


def test_redirect_cookies_and_files(site):
    root = site(
        {
            "go.py": "conn.redirect('/there', status=303)\n",
            "setc.py": """
                conn.set_cookie('visits', str(int(conn.cookies.get('visits', '0')) + 1), max_age=60)
                conn.return_('counted')
            """,
            "badc.py": "conn.set_cookie('name', 'two words')\nconn.return_('x')\n",
            "drop.py": "conn.delete_cookie('visits')\nconn.return_('dropped')\n",
            "file.py": "conn.return_file('data/report.csv')\n",
            "data/report.csv": "a,b\n1,2\n",
        }
    )
    with serve(root, dev=True) as client:
        r = client.request("GET", "/go")
        assert r.status == 303 and r.headers["location"] == "/there"
        r = client.get("/setc")
        cookie = r.headers["set-cookie"]
        assert (
            cookie.startswith("visits=1;")
            and "Max-Age=60" in cookie
            and "HttpOnly" in cookie
            and "SameSite=Lax" in cookie
        )
        client.get("/setc")
        assert client.cookies["visits"] == "2"
        r = client.get("/badc")
        assert r.status == 500 and "'two words'" in html.unescape(r.text) and "quote" in r.text
        client.get("/drop")
        assert "visits" not in client.cookies
        r = client.get("/file")
        assert (
            r.status == 200
            and r.text == "a,b\n1,2\n"
            and r.headers["content-type"].startswith("text/csv")
        )


def test_streaming_body_is_chunked(site):
    root = site(
        {
            "stream.py": """
                from pyweb import runtime
                async def lines():
                    for i in range(3):
                        await runtime.sleep(0)
                        yield f"line {i}\\n"
                conn.return_(lines(), content_type="text/plain")
            """
        }
    )
    with serve(root) as client:
        with socket.create_connection(("127.0.0.1", client.server.port)) as s:
            s.sendall(b"GET /stream HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            raw = b""
            while chunk := s.recv(65536):
                raw += chunk
        head, _, body = raw.partition(b"\r\n\r\n")
        assert b"transfer-encoding: chunked" in head.lower()
        assert body == b"7\r\nline 0\n\r\n7\r\nline 1\n\r\n7\r\nline 2\n\r\n0\r\n\r\n"


def test_current_conn_from_library_code(site):
    root = site(
        {
            "_helpers.py": "from pyweb import current_conn\n\ndef answer(text):\n    current_conn().return_(text)\n",
            "lib_answer.py": "import _helpers\n_helpers.answer('from the library: ' + conn.path)\n",
        }
    )
    with serve(root) as client:
        assert client.get("/lib_answer").text == "from the library: /lib_answer"


def test_an_exception_may_name_its_status(site):
    root = site(
        {
            "_errs.py": "class Unavailable(Exception):\n    http_status = 503\n\nclass Odd(Exception):\n    http_status = 'x'\n",
            "down.py": "import _errs\nraise _errs.Unavailable('the database is down')\n",
            "odd.py": "import _errs\nraise _errs.Odd('not a status')\n",
        }
    )
    with serve(root, dev=True) as client:
        r = client.get("/down")
        assert r.status == 503 and "the database is down" in r.text
        assert client.get("/odd").status == 500


def test_quot_and_node_pages_arrive_as_utf8(site):
    """A Quot or an HTML node is sent as its pieces (written into the reply arena), with a
    Content-Length in bytes, not characters; a piece that cannot be UTF-8 (a lone
    surrogate) fails inside the page, with a 500 that names it, and the server goes on."""
    root = site(
        {
            "q.py": 'from pyweb import qq\nconn.return_(qq("<p>{w}</p>", w="café € 😀 <&>"))\n',
            "n.py": 'from pyweb.html import P\nconn.return_(P("naïve ", "x" * 70000))\n',
            "bad.py": 'from pyweb import qq\nconn.return_(qq("<p>{w}</p>", w="\\ud800"))\n',
        }
    )
    with serve(root, dev=True) as client:
        r = client.get("/q")
        assert r.status == 200 and r.text == "<p>café € 😀 &lt;&amp;&gt;</p>"
        assert int(r.headers["content-length"]) == len(r.text.encode())
        r = client.get("/n")  # larger than the reply arena: sent after the head, whole
        assert r.status == 200 and r.text == "<p>naïve " + "x" * 70000 + "</p>"
        r = client.get("/bad")
        assert r.status == 500 and "surrogates not allowed" in r.text
        assert client.get("/q").status == 200
