"""Server push across processes, and WebSockets: measured, not asserted.

Run:  .venv/bin/python benchmarks/bench_push.py [--messages 1000] [--echoes 5000] [--runs 3]

Four measurements, each side by side in one run (``--parts 4`` runs only the fourth):

1. **Cost per message of the shared multicast**: one ``trio.run``, one port; ``await
   ch.send(m)`` then wait for the port to deliver it, ``--messages`` times; on the
   in-process cache (a :class:`~pyweb.events.Multicast` underneath) and on Redis (a Lua
   publish, the pub/sub delivery to this process's subscriber task, the hand-off to the
   port). Median µs per message over ``--runs``.
2. **Push latency to a waiter on another worker**: ``pyweb serve pages --workers 2 --cache
   redis://...``, an event stream (SSE) held on each worker, ``--messages`` chat messages
   posted one at a time; the time from sending the POST to each stream receiving the
   message, p50/p99, split by whether the stream is on the worker that took the POST.
   (Another *host*: ``make test-cluster CLUSTER_ARGS="--messages 1000"``, which prints the
   same figures for waiters on the other host.)
3. **WebSocket echo round trip, pyweb against uvicorn + websockets**, each server pinned to
   one core (``taskset -c 1``) and the client to the other (``taskset -c 0``): one
   connection, a 32-byte text message sent and its echo awaited, ``--echoes`` times; the
   client is a raw socket with a pre-masked frame, so it costs the same for both. Median
   of the per-run median round trip, runs alternating between the servers.
4. **WebSocket echo with and without compression** (permessage-deflate) on pyweb's server,
   pinned as in 3: one connection per arm, a 1.6 KB JSON text message (twenty records,
   different in each message) sent and its echo awaited, ``--echoes`` times; the client is wsproto on both
   arms, offering compression or not. Median µs per round trip and bytes on the wire per
   echo (both ways), the arms alternating within each run on the same server process.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from tests.csrf_helpers import raw_session  # noqa: E402

PY = sys.executable
BANNER = re.compile(r"pyweb serving .+ on http://127\.0\.0\.1:(\d+)/")


# --- 1. cost per message ---------------------------------------------------------------------


def multicast_cost(messages: int, backend: str) -> float:
    import trio

    from pyweb import cache
    from pyweb.events import select
    from pyweb.push import Resync, SharedMulticast

    prefix = f"pyweb-bench:{uuid.uuid4().hex[:8]}:"
    if backend == "memory":
        cache.configure("memory")
    else:
        cache.configure("redis://127.0.0.1:6379/0", prefix=prefix)
    ch = SharedMulticast("bench", history=100)

    async def main() -> float:
        port = ch.port()
        if backend != "memory":
            assert isinstance(await select(port.recv_evt()), Resync)  # the subscription is live
        start = time.perf_counter()
        for i in range(messages):
            await ch.send({"i": i})
            got = await select(port.recv_evt())
            assert got["i"] == i
        return (time.perf_counter() - start) / messages * 1e6

    try:
        return trio.run(main)
    finally:
        cache.configure("memory")
        if backend != "memory":
            remove_keys(prefix)


def remove_keys(prefix: str) -> None:
    import redis

    client = redis.Redis(host="127.0.0.1", port=6379)
    keys = list(client.scan_iter(match=prefix + "*", count=1000))
    if keys:
        client.unlink(*keys)


# --- 2. push latency across workers ----------------------------------------------------------


def start_pyweb(site: Path, *flags: str, cpu: str | None = None) -> tuple[subprocess.Popen, int]:
    command = [PY, "-m", "pyweb", "serve", str(site), "--port", "0", "--access-log", "none",
               *flags]  # fmt: skip
    if cpu is not None:
        command = ["taskset", "-c", cpu, *command]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    found = BANNER.match(proc.stdout.readline())  # type: ignore[union-attr]
    if not found:
        proc.kill()
        raise RuntimeError(f"pyweb did not start: {proc.stderr.read()}")  # type: ignore[union-attr]
    return proc, int(found.group(1))


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        proc.kill()


SESSIONS: dict[int, tuple[str, str]] = {}


def chat_post(port: int, text: str) -> tuple[str, float, dict]:
    """POST as a browser does: with a session cookie and the form's CSRF token."""
    if port not in SESSIONS:
        SESSIONS[port] = raw_session("127.0.0.1", port, "/chat")
    cookie, token = SESSIONS[port]
    body = f"name=bench&text={text}&csrf_token={token}".encode()
    sent = time.monotonic()
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(
            b"POST /chat?json HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
            b"Content-Type: application/x-www-form-urlencoded\r\n"
            + f"Cookie: {cookie}\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body
        )  # fmt: skip
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    worker = re.search(rb"(?i)x-pyweb-worker: (\d+)", data).group(1).decode()
    return worker, sent, json.loads(data.partition(b"\r\n\r\n")[2])


class Stream:
    def __init__(self, port: int, after: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.sendall(f"GET /chat?stream&after={after} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        data = b""
        while b"\r\n\r\n" not in data:
            data += self.sock.recv(65536)
        self.worker = re.search(rb"(?i)x-pyweb-worker: (\d+)", data).group(1).decode()
        self.arrived: dict[str, float] = {}
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        buf = b""
        try:
            while chunk := self.sock.recv(65536):
                buf += chunk
                for found in re.finditer(rb'"text": "(m-\d+)"', buf):
                    self.arrived.setdefault(found.group(1).decode(), time.monotonic())
                buf = buf[-100:]
        except OSError:
            return


def push_latency(messages: int) -> dict[str, list[float]]:
    prefix = f"pyweb-bench:{uuid.uuid4().hex[:8]}:"
    os.environ.setdefault("PYWEB_SECRET_KEY", uuid.uuid4().hex * 2)  # sessions are signed
    proc, port = start_pyweb(
        ROOT / "pages", "--workers", "2", "--cache", f"redis://127.0.0.1:6379/0?prefix={prefix}"
    )
    try:
        after = chat_post(port, "marker")[2]["seq"]
        streams: dict[str, Stream] = {}
        deadline = time.monotonic() + 20
        while len(streams) < 2 and time.monotonic() < deadline:
            stream = Stream(port, after)
            if stream.worker in streams:
                stream.sock.close()
            else:
                streams[stream.worker] = stream
        time.sleep(0.3)
        out: dict[str, list[float]] = {"same worker": [], "other worker": []}
        for i in range(messages):
            text = f"m-{i}"
            poster, sent, _ = chat_post(port, text)
            limit = time.monotonic() + 5
            while any(text not in s.arrived for s in streams.values()):
                if time.monotonic() > limit:
                    raise RuntimeError(f"{text} never arrived")
                time.sleep(0.0002)
            for worker, stream in streams.items():
                where = "same worker" if worker == poster else "other worker"
                out[where].append((stream.arrived[text] - sent) * 1000)
        return out
    finally:
        stop(proc)
        remove_keys(prefix)


# --- 3. WebSocket echo ----------------------------------------------------------------------

PYWEB_ECHO = """
import pyweb


@pyweb.websocket("/echo")
async def echo(ws):
    while True:
        await ws.send(await ws.recv())
"""

UVICORN_ECHO = """
async def app(scope, receive, send):
    assert scope["type"] == "websocket"
    await receive()  # websocket.connect
    await send({"type": "websocket.accept"})
    while True:
        event = await receive()
        if event["type"] == "websocket.disconnect":
            return
        await send({"type": "websocket.send", "text": event.get("text")})
"""


UVICORN_WS = ("websockets", "websockets-sansio")
"""uvicorn's two implementations on the websockets library (the legacy one and the sans-IO
one that replaces it)."""


def masked_frame(text: bytes) -> bytes:
    mask = os.urandom(4)
    payload = bytes(b ^ mask[i % 4] for i, b in enumerate(text))
    return bytes([0x81, 0x80 | len(text)]) + mask + payload


def echo_round_trips(port: int, echoes: int) -> float:
    """Median µs per round trip on one WebSocket."""
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.sendall(
        b"GET /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        b"Sec-WebSocket-Key: MDEyMzQ1Njc4OWFiY2RlZg==\r\nSec-WebSocket-Version: 13\r\n\r\n"
    )
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(65536)
    assert data.startswith(b"HTTP/1.1 101"), data[:100]
    message = b"x" * 32
    frame = masked_frame(message)
    want = 2 + len(message)
    times = []
    for _ in range(echoes):
        start = time.perf_counter()
        sock.sendall(frame)
        got = 0
        while got < want:
            got += len(sock.recv(65536))
        times.append(time.perf_counter() - start)
    sock.close()
    return statistics.median(times) * 1e6


def websocket_echo(echoes: int, runs: int) -> dict[str, list[float]]:
    work = Path(tempfile.mkdtemp(prefix="pyweb-ws-bench-"))
    (work / "site").mkdir()
    (work / "site" / "echo_ws.py").write_text(PYWEB_ECHO)
    (work / "uvicorn_echo.py").write_text(UVICORN_ECHO)
    taskset = shutil.which("taskset") is not None
    results: dict[str, list[float]] = {"pyweb": [], **{f"uvicorn+{ws}": [] for ws in UVICORN_WS}}
    try:
        for _ in range(runs):
            proc, port = start_pyweb(work / "site", cpu="1" if taskset else None)
            try:
                results["pyweb"].append(echo_round_trips(port, echoes))
            finally:
                stop(proc)
            for ws in UVICORN_WS:
                with socket.socket() as probe:
                    probe.bind(("127.0.0.1", 0))
                    uport = probe.getsockname()[1]
                command = [PY, "-W", "ignore", "-m", "uvicorn", "uvicorn_echo:app", "--port",
                           str(uport), "--ws", ws, "--log-level", "warning", "--no-access-log"]  # fmt: skip
                if taskset:
                    command = ["taskset", "-c", "1", *command]
                uproc = subprocess.Popen(command, cwd=work)
                try:
                    wait_port(uport)
                    results[f"uvicorn+{ws}"].append(echo_round_trips(uport, echoes))
                finally:
                    stop(uproc)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return results


def wait_port(port: int) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on {port}")


# --- 4. WebSocket echo with and without compression --------------------------------------------


def deflate_message(n: int) -> str:
    """The ``n``-th message: twenty records alike in shape, different in ids and numbers (an
    identical message each time would flatter the compression kept between messages)."""
    return json.dumps(
        [
            {"id": n * 20 + i, "user": f"user{(n + i) % 7}", "score": (n * 7919 + i) % 1000,
             "text": "the same few words, again"}
            for i in range(20)
        ]
    )  # fmt: skip


def deflate_round_trips(port: int, echoes: int, compress: bool) -> tuple[float, float]:
    """Median µs per round trip and bytes on the wire per echo, offering compression or not."""
    from wsproto.connection import Connection, ConnectionType
    from wsproto.events import TextMessage
    from wsproto.extensions import PerMessageDeflate

    sock = socket.create_connection(("127.0.0.1", port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    offer = b"Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n"
    sock.sendall(
        b"GET /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        b"Sec-WebSocket-Key: MDEyMzQ1Njc4OWFiY2RlZg==\r\nSec-WebSocket-Version: 13\r\n"
        + (offer if compress else b"")
        + b"\r\n"
    )
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(65536)
    head = data.split(b"\r\n\r\n")[0].decode("latin-1")
    answer = re.search(r"(?im)^sec-websocket-extensions: *(.+?) *$", head)
    assert bool(answer) == compress, head
    extensions = []
    if answer:
        deflate = PerMessageDeflate()
        deflate.finalize(answer.group(1))
        extensions.append(deflate)
    ws = Connection(ConnectionType.CLIENT, extensions=extensions)
    times, wire = [], 0
    messages = [deflate_message(n) for n in range(echoes)]
    for message in messages:
        start = time.perf_counter()
        frame = ws.send(TextMessage(data=message))
        sock.sendall(frame)
        wire += len(frame)
        done = False
        while not done:
            chunk = sock.recv(65536)
            wire += len(chunk)
            ws.receive_data(chunk)
            done = any(getattr(e, "message_finished", False) for e in ws.events())
        times.append(time.perf_counter() - start)
    sock.close()
    return statistics.median(times) * 1e6, wire / echoes


def deflate_echo(echoes: int, runs: int) -> dict[str, list[tuple[float, float]]]:
    work = Path(tempfile.mkdtemp(prefix="pyweb-ws-deflate-bench-"))
    (work / "site").mkdir()
    (work / "site" / "echo_ws.py").write_text(PYWEB_ECHO)
    results: dict[str, list[tuple[float, float]]] = {"plain": [], "deflate": []}
    try:
        for run in range(runs):
            proc, port = start_pyweb(work / "site", cpu="1" if shutil.which("taskset") else None)
            try:
                arms = [False, True] if run % 2 == 0 else [True, False]
                for compress in arms:
                    result = deflate_round_trips(port, echoes, compress)
                    results["deflate" if compress else "plain"].append(result)
            finally:
                stop(proc)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return results


# --- report ---------------------------------------------------------------------------------


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--messages", type=int, default=1000)
    parser.add_argument("--echoes", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--parts", default="1,2,3,4", help="which measurements, e.g. 3,4")
    args = parser.parse_args()
    parts = set(args.parts.split(","))
    if shutil.which("taskset"):
        os.sched_setaffinity(0, {0})  # this client on core 0, servers on core 1

    if "4" in parts:
        deflate_report(args.echoes, args.runs)
    if not parts & {"1", "2", "3"}:
        return
    print(f"1. SharedMulticast: send + delivery to a port, µs per message (median of {args.runs})")
    memory = [multicast_cost(args.messages, "memory") for _ in range(args.runs)]
    redis_ = [multicast_cost(args.messages, "redis") for _ in range(args.runs)]
    m, r = statistics.median(memory), statistics.median(redis_)
    print(f"   in-process {m:9.1f} µs   Redis pub/sub {r:9.1f} µs   ratio {r / m:.0f}x")

    print(f"2. push latency, POST to a chat SSE stream, --workers 2 + Redis ({args.messages} msgs)")
    lat = push_latency(args.messages)
    for where, values in lat.items():
        print(f"   {where:13} n={len(values):5}  p50 {pct(values, 50):6.2f} ms"
              f"  p99 {pct(values, 99):6.2f} ms")  # fmt: skip

    print(
        f"3. WebSocket echo round trip, 32 bytes, µs (median of per-run medians, {args.runs} runs)"
    )
    echo = websocket_echo(args.echoes, args.runs)
    p = statistics.median(echo["pyweb"])
    print(f"   pyweb {p:7.1f} µs")
    for ws in UVICORN_WS:
        u = statistics.median(echo[f"uvicorn+{ws}"])
        print(f"   uvicorn --ws {ws:17} {u:7.1f} µs   pyweb/uvicorn {p / u:.2f}")
    print(json.dumps({"multicast_us": {"memory": memory, "redis": redis_}, "echo_us": echo}))


def deflate_report(echoes: int, runs: int) -> None:
    print(f"4. WebSocket echo, {len(deflate_message(0))} B of JSON, plain and compressed "
          f"(median of {runs} runs)")  # fmt: skip
    got = deflate_echo(echoes, runs)
    us = {arm: statistics.median(t for t, _ in values) for arm, values in got.items()}
    wire = {arm: statistics.median(b for _, b in values) for arm, values in got.items()}
    for arm in ("plain", "deflate"):
        print(f"   {arm:8} {us[arm]:7.1f} µs   {wire[arm]:7.0f} B on the wire per echo")
    print(f"   deflate/plain: time {us['deflate'] / us['plain']:.2f}, "
          f"bytes {wire['deflate'] / wire['plain']:.2f}")  # fmt: skip
    print(json.dumps({"deflate_echo": got}))


if __name__ == "__main__":
    main()
