"""The Redis backend: shared between processes, what it stores, Redis down, RESP."""

from __future__ import annotations

import asyncio
import logging
import socket
import subprocess
import sys
import textwrap

import pytest
import redis
import trio
from hypothesis import given
from hypothesis import strategies as st

from pyweb import cache
from pyweb.cache import Int, List, Option, Real, Size, String, TimeOut, WhileUsed
from pyweb.cache.resp import ReplyError, ReplyParser, encode_command
from tests.helpers import free_port

from .conftest import REDIS_URL, need_redis, unique_prefix


@pytest.fixture
def shared(name):
    need_redis()
    prefix = unique_prefix()
    cache.configure(REDIS_URL, prefix=prefix)
    yield prefix
    cache.configure("memory")
    client = redis.Redis(host="127.0.0.1", port=6379)
    keys = list(client.scan_iter(match=prefix + "*"))
    if keys:
        client.delete(*keys)


def _other_process(prefix: str, code: str) -> str:
    script = textwrap.dedent(
        f"""
        from pyweb import cache
        from pyweb.cache import *
        cache.configure({REDIS_URL!r}, prefix={prefix!r})
        """
    ) + textwrap.dedent(code)
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_two_processes_see_each_others_entries(shared, name):
    c = cache.get(String, Option(Real), name, TimeOut(300))
    c.insert("usd", 6.42)
    out = _other_process(
        shared,
        f"""
        c = cache.get(String, Option(Real), {name!r}, TimeOut(300))
        print(c.lookup("usd"))
        c.insert("eur", None)
        c.insert("gbp", 8.5)
        """,
    )
    assert out == "6.42"
    assert c.lookup("eur", cache.MISSING) is None
    assert c.lookup("gbp") == 8.5


def test_size_budget_is_shared_between_processes(shared, name):
    c = cache.get(Int, String, name, Size(30))
    c.insert(1, "a" * 8)  # 9 bytes
    _other_process(
        shared,
        f"""
        c = cache.get(Int, String, {name!r}, Size(30))
        c.insert(2, "b" * 8)
        c.insert(3, "c" * 8)
        """,
    )
    c.insert(4, "d" * 8)  # 36 > 30: the oldest (1, from this process) goes
    assert [c.lookup(k) for k in (1, 2, 3, 4)] == [None, "b" * 8, "c" * 8, "d" * 8]
    used = redis.Redis(host="127.0.0.1", port=6379).get(f"{shared}{name}:used")
    assert int(used) == 27


def test_another_process_with_other_types_gets_a_clear_error(shared, name):
    cache.get(Int, Int, name, TimeOut(10)).insert(1, 1)
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            f"from pyweb import cache\nfrom pyweb.cache import *\n"
            f"cache.configure({REDIS_URL!r}, prefix={shared!r})\n"
            f"cache.get(Int, String, {name!r}, TimeOut(10)).lookup(1)",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert "CacheMismatchError" in done.stderr
    assert (
        f"cache {name!r} exists in redis://127.0.0.1:6379/0 as Int -> Int, TimeOut(10)"
        in done.stderr
    )


def test_what_redis_stores(shared, name):
    """The encodings are what is stored; a TimeOut entry has a real TTL too."""
    client = redis.Redis(host="127.0.0.1", port=6379)
    c = cache.get(String, List(Int), name, TimeOut(300))
    c.insert("k", [1, 22])
    raw = client.get(f"{shared}{name}:k:k".encode())
    assert raw[15:] == b"1:12:22"
    assert 299_000 < client.pttl(f"{shared}{name}:k:k") <= 300_000
    assert client.get(f"{shared}{name}:meta") == b"String -> List(Int), TimeOut(300)"


def test_whileused_refreshes_the_redis_ttl(shared, name):
    client = redis.Redis(host="127.0.0.1", port=6379)
    c = cache.get(Int, Int, name, WhileUsed(100))
    c.insert(1, 1)
    client.pexpire(f"{shared}{name}:k:1", 5000)
    assert c.lookup(1) == 1
    assert client.pttl(f"{shared}{name}:k:1") > 90_000


def test_flush_leaves_other_caches_alone(shared, name):
    a = cache.get(Int, Int, name + "*", TimeOut(100))  # a glob character in the name
    b = cache.get(Int, Int, name + "x", TimeOut(100))
    a.insert(1, 1)
    b.insert(1, 2)
    a.flush()
    assert a.lookup(1) is None and b.lookup(1) == 2


def _closed_port() -> int:
    return free_port()


def test_redis_down_is_a_miss_and_is_logged(name, caplog):
    cache.configure(f"redis://127.0.0.1:{_closed_port()}/0", retry_after=0.0)
    try:
        c = cache.get(String, Real, name, TimeOut(300))
        calls = []

        def rate(url):
            calls.append(url)
            return 6.5

        f = cache.memoize(c, rate)
        with caplog.at_level(logging.WARNING, logger="pyweb.cache"):
            assert c.insert("usd", 1.0) is False
            assert c.lookup("usd") is None
            assert f("usd") == 6.5 and f("usd") == 6.5
            assert trio.run(c.alookup, "usd") is None
            assert c.delete("usd") is False
            c.flush()
        assert calls == ["usd", "usd"]  # computed each time: nothing could be cached
        warnings = [r for r in caplog.records if r.name == "pyweb.cache"]
        assert len(warnings) == 1  # once per outage, not once per call
        assert "unreachable" in warnings[0].getMessage()
    finally:
        cache.configure("memory")


def test_redis_back_after_an_outage(name):
    need_redis()
    c = cache.get(Int, Int, name, TimeOut(100))
    cache.configure(f"redis://127.0.0.1:{_closed_port()}/0", retry_after=0.0)
    assert c.insert(1, 1) is False
    cache.configure(REDIS_URL, prefix=unique_prefix(), retry_after=0.0)
    assert c.insert(1, 1) is True and c.lookup(1) == 1
    cache.configure("memory")


def test_exchange_style_page_keeps_working_when_redis_is_down(tmp_path, name):
    from pyweb import testing

    (tmp_path / "p.py").write_text(
        "from pyweb import cache\n"
        f"c = cache.get(cache.Int, cache.Int, {name!r}, cache.TimeOut(60))\n"
        "async def double(n):\n    return 2 * n\n"
        "conn.return_(str(await cache.memoize(c, double)(21)))\n"
    )
    cache.configure(f"redis://127.0.0.1:{_closed_port()}/0")
    try:
        with testing.serve(tmp_path) as client:
            for _ in range(3):
                response = client.get("/p")
                assert (response.status, response.text) == (200, "42")
    finally:
        cache.configure("memory")


# -- RESP ---------------------------------------------------------------------------------

replies = st.recursive(
    st.one_of(
        st.integers(-(2**63), 2**63 - 1),
        st.binary(max_size=50),
        st.none(),
        st.text(alphabet="abc OK", max_size=10).map(lambda s: ("simple", s)),
        st.text(alphabet="ERR bad", max_size=10).map(lambda s: ("error", s)),
    ),
    lambda inner: st.lists(inner, max_size=4),
    max_leaves=10,
)


def _wire(reply) -> bytes:
    if isinstance(reply, tuple):
        return (b"+" if reply[0] == "simple" else b"-") + reply[1].encode() + b"\r\n"
    if isinstance(reply, int):
        return b":%d\r\n" % reply
    if reply is None:
        return b"$-1\r\n"
    if isinstance(reply, bytes):
        return b"$%d\r\n%s\r\n" % (len(reply), reply)
    return b"*%d\r\n" % len(reply) + b"".join(_wire(r) for r in reply)


def _plain(value):
    if isinstance(value, ReplyError):
        return ("error", str(value))
    if isinstance(value, str):
        return ("simple", value)
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


@given(st.lists(replies, min_size=1, max_size=4), st.integers(1, 7))
def test_resp_parser_reads_replies_in_any_chunking(sequence, chunk):
    data = b"".join(_wire(r) for r in sequence)
    parser = ReplyParser()
    out = []
    for i in range(0, len(data), chunk):
        parser.feed(data[i : i + chunk])
        while (reply := parser.next_reply()) is not ReplyParser.NEED_MORE:
            out.append(_plain(reply))
    assert out == sequence


def test_resp_commands_and_real_server():
    need_redis()
    assert encode_command("GET", b"k", 5) == b"*3\r\n$3\r\nGET\r\n$1\r\nk\r\n$1\r\n5\r\n"
    from pyweb.cache.resp import Address, Connection

    conn = Connection(Address.from_url(REDIS_URL), 1.0)
    assert conn.call("PING") == "PONG"
    assert isinstance(conn.call("NOSUCHCOMMAND"), ReplyError)
    conn.close()
    for loop in (trio.run, lambda fn, *args: asyncio.run(fn(*args))):
        aconn = Connection(Address.from_url(REDIS_URL), 1.0)  # a connection is blocking or async
        assert loop(aconn.acall, "ECHO", "hé") == "hé".encode()
        aconn.close()


def test_a_redis_that_never_answers_is_a_miss_after_the_timeout(name, caplog):
    """A server that accepts and then says nothing (hung, or not Redis at all)."""
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    port = silent.getsockname()[1]
    cache.configure(f"redis://127.0.0.1:{port}/0", timeout=0.2, retry_after=0.0)
    try:
        c = cache.get(Int, Int, name, TimeOut(60))
        with caplog.at_level(logging.WARNING, logger="pyweb.cache"):
            assert c.lookup(1) is None  # blocking form
            assert trio.run(c.alookup, 1) is None  # async form
            assert trio.run(c.ainsert, 1, 1) is False
            assert asyncio.run(c.alookup(1)) is None  # the asyncio side of the seam
        assert "unreachable" in caplog.text
    finally:
        cache.configure("memory")
        silent.close()
