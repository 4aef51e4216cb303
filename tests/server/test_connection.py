"""The connection loop over real sockets: keep-alive, pipelining, HEAD, chunked and file
replies, 100-continue, every class of invalid input, handler errors. h11 is the oracle
for the framing of valid exchanges."""

from __future__ import annotations

import h11
import pytest

from pyweb.server.asyncio.replies import SMALL_FILE

pytestmark = [pytest.mark.timeout(30), pytest.mark.loops("trio", "asyncio")]


def h11_exchange(client, requests):
    """Send each (method, target, body) with h11 and read the reply with h11, one by one."""
    conn = h11.Connection(h11.CLIENT)
    results = []
    for method, target, body in requests:
        headers = [("Host", "test")]
        if body:
            headers.append(("Content-Length", str(len(body))))
        data = conn.send(h11.Request(method=method, target=target, headers=headers))
        if body:
            data += conn.send(h11.Data(data=body))
        data += conn.send(h11.EndOfMessage())
        client.send(data)
        response, chunks = None, []
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                conn.receive_data(client.sock.recv(65536))
                continue
            if isinstance(event, h11.Response):
                response = event
            elif isinstance(event, h11.Data):
                chunks.append(event.data)
            elif isinstance(event, h11.EndOfMessage):
                break
        results.append((response, b"".join(chunks)))
        conn.start_next_cycle()
    return results


def test_keep_alive_several_requests_on_one_connection(kit):
    with kit.running() as srv, srv.connect() as c:
        results = h11_exchange(
            c, [("GET", "/hello", b""), ("POST", "/echo", b"abc"), ("GET", "/echo-path/3", b"")]
        )
        assert [r.status_code for r, _ in results] == [200, 200, 200]
        assert [body for _, body in results] == [b"hello", b"got:abc", b"/echo-path/3"]
        assert all(dict(r.headers).get(b"connection") is None for r, _ in results)


def test_pipelining_three_requests_in_one_send(kit):
    with kit.running() as srv, srv.connect() as c:
        c.send(b"".join(kit.build("GET", f"/echo-path/{i}") for i in range(3)))
        bodies = [c.read_response().body for _ in range(3)]
        assert bodies == [b"/echo-path/0", b"/echo-path/1", b"/echo-path/2"]


def test_pipelined_requests_after_a_closing_one_are_not_served(kit):
    with kit.running() as srv, srv.connect() as c:
        c.send(
            kit.build("GET", "/echo-path/a", [("Connection", "close")])
            + kit.build("GET", "/echo-path/b")
        )
        r = c.read_response()
        assert r.body == b"/echo-path/a" and r.headers["connection"] == "close"
        assert c.closed_by_server()


def test_http10_closes_by_default(kit):
    with kit.running() as srv, srv.connect() as c:
        c.send(kit.build("GET", "/hello", version="1.0"))
        r = c.read_response()
        assert r.status == 200 and r.body == b"hello"
        assert r.headers["connection"] == "close"
        assert c.closed_by_server()


def test_http10_keep_alive_when_asked(kit):
    with kit.running() as srv, srv.connect() as c:
        for _ in range(2):
            c.send(kit.build("GET", "/hello", [("Connection", "keep-alive")], version="1.0"))
            r = c.read_response()
            assert r.body == b"hello" and r.headers["connection"].lower() == "keep-alive"


def test_head_has_the_same_headers_and_no_body(kit):
    with kit.running() as srv, srv.connect() as c:
        get = c.request("GET", "/hello")
        head = c.request("HEAD", "/hello")
        assert head.status == 200
        strip = lambda h: {k: v for k, v in h.items() if k != "date"}  # noqa: E731
        assert strip(head.headers) == strip(get.headers)
        assert head.headers["content-length"] == "5"
        # nothing but the next reply follows the HEAD reply: the body was not sent
        assert c.request("GET", "/echo-path/next").body == b"/echo-path/next"


def test_chunked_streaming_reply(kit):
    with kit.running() as srv, srv.connect() as c:
        [(response, body)] = h11_exchange(c, [("GET", "/stream", b"")])
        assert dict(response.headers)[b"transfer-encoding"] == b"chunked"
        assert body == b"one two three"
        # still persistent afterwards
        assert c.request("GET", "/hello").body == b"hello"


def test_streaming_reply_to_http10_is_close_delimited(kit):
    with kit.running() as srv, srv.connect() as c:
        c.send(kit.build("GET", "/stream", version="1.0"))
        r = c.read_response()
        assert "transfer-encoding" not in r.headers and "content-length" not in r.headers
        assert r.body == b"one two three"


def test_head_of_a_streaming_reply_has_no_body(kit):
    with kit.running() as srv, srv.connect() as c:
        r = c.request("HEAD", "/stream")
        assert r.headers["transfer-encoding"] == "chunked"
        assert c.request("GET", "/hello").body == b"hello"


def test_stream_failing_midway_cuts_the_connection(kit):
    with kit.running() as srv, srv.connect() as c:
        c.send(kit.build("GET", "/stream-fails"))
        status, headers, _ = c.read_head()
        assert status == 200 and headers["transfer-encoding"] == "chunked"
        with pytest.raises(EOFError):  # no last chunk: the client sees a truncated body
            while True:
                c._fill()
        assert b"0\r\n\r\n" not in c.buf
    assert "stream broke" in srv.error_log.getvalue()


def test_file_body_with_sendfile(kit):
    with kit.running() as srv, srv.connect() as c:
        r = c.request("GET", "/file")
        assert r.body == kit.FILE_CONTENT and r.headers["content-length"] == str(
            len(kit.FILE_CONTENT)
        )
        r = c.request("GET", "/file-range")
        assert r.status == 206 and r.body == kit.FILE_CONTENT[100:150]
        r = c.request("HEAD", "/file")
        assert r.headers["content-length"] == str(len(kit.FILE_CONTENT))
        assert c.request("GET", "/hello").body == b"hello"


@pytest.mark.parametrize("offset", [0, 7])
@pytest.mark.parametrize("delta", [-1, 0, 1])
def test_files_on_both_sides_of_the_small_file_limit(kit, offset, delta):
    """On asyncio a file of up to SMALL_FILE bytes is read and written behind its head,
    a larger one goes out with sendfile (on trio always sendfile): both whole."""
    length = SMALL_FILE + delta
    with kit.running() as srv, srv.connect() as c:
        r = c.request("GET", f"/file-part?{offset}-{length}")
        assert r.status == 200 and r.body == kit.FILE_CONTENT[offset : offset + length]
        assert c.request("GET", "/hello").body == b"hello"  # the connection goes on


@pytest.mark.parametrize("length", [100, SMALL_FILE + 100])
def test_a_file_shorter_than_promised_cuts_the_connection(kit, length):
    """The file shrank between the stat and the send: the promised length cannot be kept,
    so the reply is cut (a client sees a short body or none), and the log says why."""
    offset = len(kit.FILE_CONTENT) - length + 50  # the range ends 50 bytes past the end
    with kit.running() as srv, srv.connect() as c:
        c.send(kit.build("GET", f"/file-part?{offset}-{length}"))
        with pytest.raises(EOFError):
            c.read_response()
    assert "shrank while being sent" in srv.error_log.getvalue()


def test_large_body_is_sent_completely(kit):
    with kit.running() as srv, srv.connect() as c:
        assert len(c.request("GET", "/big").body) == 8 * 1024 * 1024


# ------------------------------------------------------------------------- 100-continue


def test_100_continue_sent_when_the_handler_reads_the_body(kit):
    with kit.running() as srv, srv.connect() as c:
        c.send(kit.build("POST", "/echo", [("Expect", "100-continue"), ("Content-Length", "5")]))
        status, _, _ = c.read_head()
        assert status == 100
        c.send(b"hello")
        r = c.read_response()
        assert r.status == 200 and r.body == b"got:hello"
        assert c.request("GET", "/hello").body == b"hello"


def test_100_continue_not_sent_when_the_handler_ignores_the_body(kit):
    with kit.running() as srv, srv.connect() as c:
        c.send(kit.build("POST", "/ignore", [("Expect", "100-continue"), ("Content-Length", "5")]))
        r = c.read_response()  # the final reply comes first, not a 100
        assert r.status == 200 and r.body == b"ignored"
        # the body was never asked for, so the connection cannot be reused
        assert r.headers["connection"] == "close"
        assert c.closed_by_server()


def test_small_unread_body_is_drained_and_the_connection_kept(kit):
    with kit.running() as srv, srv.connect() as c:
        c.send(kit.build("POST", "/ignore", [("Content-Length", "10")]) + b"01234")
        r = c.read_response()
        assert r.status == 200 and "connection" not in r.headers
        c.send(b"56789")  # the rest of the unread body, then the next request
        assert c.request("GET", "/hello").body == b"hello"


def test_large_unread_body_closes_the_connection(kit):
    with kit.running() as srv, srv.connect() as c:
        c.send(kit.build("POST", "/ignore", [("Content-Length", str(10**6))]) + b"x" * 1000)
        r = c.read_response()
        assert r.status == 200 and r.headers["connection"] == "close"


# ------------------------------------------------------------------------ invalid input

INVALID = [
    ("bad request line", b"GARBAGE\r\n\r\n", 400),
    ("bad header", b"GET / HTTP/1.1\r\nHost: x\r\nBad Header: y\r\n\r\n", 400),
    ("missing Host", b"GET / HTTP/1.1\r\n\r\n", 400),
    (
        "CL and TE",
        b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\nabc",
        400,
    ),
    (
        "bad chunk",
        b"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        400,
    ),
    ("request line too long", b"GET /" + b"a" * 9000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", 414),
    (
        "too many headers",
        b"GET / HTTP/1.1\r\nHost: x\r\n"
        + b"".join(b"X-%d: y\r\n" % i for i in range(101))
        + b"\r\n",
        431,
    ),
    ("body over the limit", b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 2000\r\n\r\n", 413),
    (
        "chunked body over the limit",
        b"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n7d0\r\n"
        + b"x" * 2000,
        413,
    ),
    ("HTTP/2.0", b"GET / HTTP/2.0\r\nHost: x\r\n\r\n", 505),
    (
        "unknown transfer coding",
        b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: foo\r\n\r\n",
        501,
    ),
    ("CONNECT", b"CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n", 501),
]


@pytest.mark.parametrize("scheduler", ["one-to-one", "pool"])
@pytest.mark.parametrize(("name", "data", "status"), INVALID, ids=[i[0] for i in INVALID])
def test_invalid_input_gets_its_status_and_closes(kit, name, data, status, scheduler):
    from pyweb.protocol import Limits

    with kit.running(limits=Limits(max_body=1000), scheduler=scheduler, pool_size=2) as srv:
        with srv.connect() as c:
            c.send(data)
            r = c.read_response()
            assert r.status == status, r
            assert r.headers["connection"] == "close"
            assert r.headers["content-type"].startswith("text/html")
            assert b"Traceback" not in r.body
            assert c.closed_by_server()
        with srv.connect() as c:  # the server keeps serving
            assert c.request("GET", "/hello").body == b"hello"
    assert str(status) in srv.error_log.getvalue()  # the log is complete once stopped


def test_protocol_error_after_good_requests_on_the_same_connection(kit):
    with kit.running() as srv, srv.connect() as c:
        assert c.request("GET", "/hello").status == 200
        c.send(b"GET / HTTP/1.1\r\nHost: x\r\nBad Header: y\r\n\r\n")
        assert c.read_response().status == 400
        assert c.closed_by_server()


def test_dev_mode_error_page_shows_the_offending_input(kit):
    with kit.running(dev=True) as srv, srv.connect() as c:
        c.send(b"GET / HTTP/1.1\r\nHost: x\r\nBad Header: <b>\r\n\r\n")
        r = c.read_response()
        assert r.status == 400
        assert b"Bad Header" in r.body and b"&lt;b&gt;" in r.body and b"<b>" not in r.body


# ------------------------------------------------------------------------ handler errors


def test_handler_exception_gives_500_and_the_server_keeps_serving(kit):
    with kit.running() as srv:
        with srv.connect() as c:
            r = c.request("GET", "/boom")
            assert r.status == 500
            assert b"Traceback" not in r.body and b"kaboom" not in r.body
            assert c.request("GET", "/hello").body == b"hello"  # same connection still works
        with srv.connect() as c:
            assert c.request("GET", "/hello").status == 200
    log = srv.error_log.getvalue()
    assert "GET /boom HTTP/1.1" in log and "Traceback" in log and "kaboom" in log


def test_dev_mode_500_shows_the_escaped_traceback(kit):
    with kit.running(dev=True) as srv, srv.connect() as c:
        r = c.request("GET", "/boom")
        assert r.status == 500
        assert b"Traceback" in r.body and b"ValueError" in r.body
        assert b"&lt;script&gt;" in r.body and b"<script>" not in r.body


def test_handler_returning_something_else_gives_500(kit):
    with kit.running() as srv, srv.connect() as c:
        assert c.request("GET", "/not-a-response").status == 500
    assert "must return a pyweb Response" in srv.error_log.getvalue()


def test_access_log_records_each_request(kit, tmp_path):
    log = tmp_path / "access.log"
    with kit.running(access_log=str(log)) as srv, srv.connect() as c:
        c.request("GET", "/hello", [("User-Agent", "probe/1"), ("Referer", "http://r/")])
        c.request("GET", "/missing")
    lines = log.read_text().splitlines()
    assert len(lines) == 2
    assert '"GET /hello HTTP/1.1" 200 5 "http://r/" "probe/1"' in lines[0]
    assert '"GET /missing HTTP/1.1" 404' in lines[1]
