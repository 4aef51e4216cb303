"""``make test-cluster``: two hosts, one site, behind nginx (run as root).

Three network namespaces on this machine (:mod:`tests.cluster.netns`)::

          driver threads + nginx (127.0.0.1:8080)            namespace "lb"
               |  10.231.1.1                 |  10.231.2.1
               |  10.231.1.2                 |  10.231.2.2
       pyweb serve --workers 2        pyweb serve --workers 2   namespaces "h1", "h2"
               \\___________ PostgreSQL, Redis (the machine's, forwarded) ____/

Both hosts serve the example site (``pages/``) with ``--cache redis://...`` (a key prefix of
this run) and ``--db postgresql://...?search_path=...`` (a schema of this run). What is
checked, and printed as a table:

1. **push across hosts**: SSE streams and WebSockets held on both hosts' workers (directly,
   not through nginx), messages posted to host 1 one at a time; every waiter must get every
   message; latency from the post to each waiter, p50/p99, split by where the waiter is
   (same worker, another worker of the same host, another host);
2. **sessions**: a session made on one host is valid on the other (the chat page's session
   and CSRF token, made by host 1, accepted by host 2; refused without the session);
3. **writes through nginx while a host dies**: writer threads post guest-book entries, each
   with a unique token, through nginx; a third of the way in, every process of host 1 is
   killed (SIGKILL); nginx fails over. Then the guest table is read: every acknowledged
   write (303) must be there exactly once; no token twice; writes that failed may be there
   or not (reported as "in doubt": the client cannot know).

Everything it made (namespaces, processes, the schema, the Redis keys) is removed at the
end, whatever happens. Exit status 0 when every check passed.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from urllib.parse import quote

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.cluster.netns import Forwarder, Namespaces, enter  # noqa: E402
from tests.csrf_helpers import raw_session  # noqa: E402

PAGES = ROOT / "pages"
PORT = 8000  # each host's pyweb, on its own address
LB_PORT = 8080  # nginx, on the balancer namespace's loopback
HOSTS = {"h1": ("10.231.1.1/24", "10.231.1.2"), "h2": ("10.231.2.1/24", "10.231.2.2")}
PG = "postgresql://postgres@127.0.0.1:5432/test"
REDIS = "redis://127.0.0.1:6379/0"

NGINX_CONF = """\
worker_processes 1;
user root;
pid {dir}/nginx.pid;
error_log {dir}/error.log warn;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    client_body_temp_path {dir}/body;
    proxy_temp_path {dir}/proxy;
    fastcgi_temp_path {dir}/fastcgi;
    uwsgi_temp_path {dir}/uwsgi;
    scgi_temp_path {dir}/scgi;

    # WebSockets: pass the upgrade on; other requests keep the upstream connection alive
    map $http_upgrade $connection_upgrade {{
        default upgrade;
        ''      '';
    }}

    upstream pyweb {{
        server {h1}:{port} max_fails=1 fail_timeout=5s;
        server {h2}:{port} max_fails=1 fail_timeout=5s;
        keepalive 32;
    }}

    server {{
        listen 127.0.0.1:{lb_port};
        location / {{
            proxy_pass http://pyweb;
            proxy_http_version 1.1;
            proxy_set_header Host $host;
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
            proxy_set_header X-Forwarded-Proto $scheme;
            proxy_set_header Upgrade $http_upgrade;
            proxy_set_header Connection $connection_upgrade;
            proxy_buffering off;            # server-sent events and long polls
            proxy_read_timeout 60s;         # longer than a long poll (30 s)
            proxy_connect_timeout 1s;
            # a request that could not reach a host goes to the other; a POST that did
            # reach one is never sent twice (non_idempotent is not listed)
            proxy_next_upstream error timeout http_502 http_503;
        }}
    }}
}}
"""


# --- a small HTTP client (threads in the balancer's namespace) ------------------------------


def http(host: str, port: int, method: str, target: str, body: bytes = b"",
         headers: dict[str, str] | None = None, timeout: float = 10) -> tuple[int, dict, bytes]:  # fmt: skip
    """One request on a new connection; (status, lower-case headers, body)."""
    with socket.create_connection((host, port), timeout=timeout) as sock:
        head = f"{method} {target} HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\n"
        for name, value in (headers or {}).items():
            head += f"{name}: {value}\r\n"
        if body or method == "POST":
            head += "Content-Type: application/x-www-form-urlencoded\r\n"
            head += f"Content-Length: {len(body)}\r\n"
        sock.sendall(head.encode() + b"\r\n" + body)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head_bytes, _, rest = data.partition(b"\r\n\r\n")
    lines = head_bytes.decode("latin-1").split("\r\n")
    if not lines[0].startswith("HTTP/1.1 "):
        raise ConnectionError(f"no reply ({data[:80]!r})")
    fields = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        fields[name.strip().lower()] = value.strip()
    return int(lines[0].split()[1]), fields, rest


def post_chat(host: str, text: str, session: tuple[str, str]) -> tuple[dict, str, float]:
    """Post a chat message to ``host`` directly, as a browser with ``session`` (its cookie
    and CSRF token); (message, worker, time sent)."""
    cookie, token = session
    sent = time.monotonic()
    body = f"name=cluster&text={quote(text)}&csrf_token={token}".encode()
    status, fields, data = http(host, PORT, "POST", "/chat?json", body, {"Cookie": cookie})
    if status != 200:
        raise AssertionError(f"chat post to {host}: {status} {data[:200]!r}")
    return json.loads(data), fields.get("x-pyweb-worker", "?"), sent


# --- the cluster ----------------------------------------------------------------------------


class Cluster:
    def __init__(self, python: str) -> None:
        self.run_id = uuid.uuid4().hex[:6]
        self.schema = f"pyweb_cluster_{self.run_id}"
        self.prefix = f"pyweb-cluster:{self.run_id}:"
        self.python = python
        self.ns = Namespaces(f"pwc{self.run_id}")
        self.forwarder = Forwarder()
        self.procs: dict[str, subprocess.Popen] = {}
        self.tmp = Path(tempfile.mkdtemp(prefix="pyweb-cluster-"))
        self.names: dict[str, str] = {}
        self.secret = uuid.uuid4().hex + uuid.uuid4().hex  # the site's signing key, shared

    # set-up
    def start(self) -> None:
        lb = self.names["lb"] = self.ns.add("lb")
        for i, (host, (lb_addr, host_addr)) in enumerate(HOSTS.items(), 1):
            name = self.names[host] = self.ns.add(host)
            self.ns.link(lb, lb_addr, name, f"{host_addr}/24", f"pwc{self.run_id}{i}")
        for name in (self.names["h1"], self.names["h2"], lb):
            self.forwarder.expose(name, 5432)
            self.forwarder.expose(name, 6379)
        self._database()
        for host in HOSTS:
            self.start_host(host)
        self._nginx()
        for host, (_, addr) in HOSTS.items():
            in_lb(self, self.wait_ready, addr, PORT, f"pyweb on {host}")
        in_lb(self, self.wait_ready, "127.0.0.1", LB_PORT, "nginx")

    def _database(self) -> None:
        url = f"{PG}?search_path={self.schema}"
        psql(f"create schema {self.schema}")
        done = subprocess.run(
            [self.python, "-m", "pyweb", "db", "init", str(PAGES), "--db", url],
            capture_output=True, text=True,
        )  # fmt: skip
        if done.returncode != 0:
            raise RuntimeError(f"pyweb db init: {done.stdout} {done.stderr}")

    def start_host(self, host: str) -> None:
        addr = HOSTS[host][1]
        log = open(self.tmp / f"{host}.log", "a")  # noqa: SIM115 (kept by the process)
        env = {**os.environ, "PYWEB_SECRET_KEY": self.secret}  # one key: cookies valid on both
        self.procs[host] = subprocess.Popen(
            ["ip", "netns", "exec", self.names[host], self.python, "-m", "pyweb", "serve",
             str(PAGES), "--host", addr, "--port", str(PORT), "--workers", "2",
             "--cache", f"{REDIS}?prefix={self.prefix}",
             "--db", f"{PG}?search_path={self.schema}", "--access-log", "none"],
            stdout=log, stderr=log, start_new_session=True, env=env,
        )  # fmt: skip

    def _nginx(self) -> None:
        conf = self.tmp / "nginx.conf"
        h1, h2 = HOSTS["h1"][1], HOSTS["h2"][1]
        conf.write_text(NGINX_CONF.format(dir=self.tmp, h1=h1, h2=h2, port=PORT, lb_port=LB_PORT))
        self.procs["nginx"] = subprocess.Popen(
            ["ip", "netns", "exec", self.names["lb"], "nginx", "-p", str(self.tmp), "-c",
             str(conf), "-g", "daemon off;"],
            stdout=subprocess.DEVNULL, stderr=open(self.tmp / "nginx.out", "w"),  # noqa: SIM115
            start_new_session=True,
        )  # fmt: skip

    def wait_ready(self, host: str, port: int, what: str, limit: float = 30) -> None:
        deadline = time.monotonic() + limit
        while True:
            try:
                if http(host, port, "GET", "/hello", timeout=2)[0] == 200:
                    return
            except OSError:
                pass
            if time.monotonic() > deadline:
                logs = {p.name: p.read_text()[-2000:] for p in self.tmp.glob("*.log")}
                raise RuntimeError(f"{what} did not answer in {limit:g} s: {logs}")
            time.sleep(0.1)

    def kill_host(self, host: str) -> None:
        """Every process of ``host`` at once (supervisor and workers): the host dies."""
        proc = self.procs.pop(host)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)

    # tear-down: always, whatever happened
    def stop(self) -> None:
        for name, proc in list(self.procs.items()):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM if name == "nginx" else signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(10)
        self.procs.clear()
        self.forwarder.stop()
        self.ns.remove()
        with contextlib.suppress(Exception):
            psql(f"drop schema if exists {self.schema} cascade")
        with contextlib.suppress(Exception):
            remove_redis_keys(self.prefix)
        shutil.rmtree(self.tmp, ignore_errors=True)


def psql(statement: str) -> None:
    from pyweb import db

    admin = db.Database(PG, pools=1, handles=1)
    import trio

    async def go() -> None:
        await admin.dml(statement)

    try:
        trio.run(go)
    finally:
        admin.close()


def query(sql: str) -> list[dict]:
    from pyweb import db

    admin = db.Database(PG, pools=1, handles=1)
    import trio

    async def go() -> list[dict]:
        return [dict(row) for row in await admin.list(sql)]

    try:
        return trio.run(go)
    finally:
        admin.close()


def remove_redis_keys(prefix: str) -> None:
    import redis

    client = redis.Redis(host="127.0.0.1", port=6379)
    keys = list(client.scan_iter(match=prefix + "*", count=1000))
    if keys:
        client.unlink(*keys)


# --- the checks -----------------------------------------------------------------------------


def in_lb(cluster: Cluster, fn, *args):
    """Run ``fn(*args)`` in a thread inside the balancer's namespace; return its result."""
    box: dict = {}

    def body() -> None:
        enter(cluster.names["lb"])
        try:
            box["value"] = fn(*args)
        except BaseException as exc:  # noqa: BLE001 (handed to the caller)
            box["error"] = exc

    thread = threading.Thread(target=body)
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


class SSEWaiter:
    """One event stream held on ``host``: records when each message arrived."""

    def __init__(self, host: str, after: int) -> None:
        self.sock = socket.create_connection((host, PORT), timeout=30)
        self.sock.sendall(f"GET /chat?stream&after={after} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        data = b""
        while b"\r\n\r\n" not in data:
            data += self.sock.recv(65536)
        head, _, self.buf = data.partition(b"\r\n\r\n")
        self.worker = re.search(rb"(?i)x-pyweb-worker: (\d+)", head).group(1).decode()
        self.host = host
        self.arrived: dict[str, float] = {}
        self.kind = "sse"
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        buf = self.buf
        try:
            while True:
                for found in re.finditer(rb'"text": "(push-[^"]+)"', buf):
                    self.arrived.setdefault(found.group(1).decode(), time.monotonic())
                buf = buf[-200:]
                chunk = self.sock.recv(65536)
                if not chunk:
                    return
                buf += chunk
        except OSError:
            return

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()


class WSWaiter:
    """One WebSocket held on ``host`` (or through nginx): records arrivals."""

    def __init__(self, host: str, port: int, after: int) -> None:
        from websockets.sync.client import connect

        self.ws = connect(f"ws://{host}:{port}/chat/ws?after={after}", open_timeout=10)
        self.worker = self.ws.response.headers.get("X-Pyweb-Worker", "?")
        self.host = host if port == PORT else "nginx"
        self.arrived: dict[str, float] = {}
        self.kind = "ws"
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        try:
            for text in self.ws:
                message = json.loads(text)
                if str(message.get("text", "")).startswith("push-"):
                    self.arrived.setdefault(message["text"], time.monotonic())
        except Exception:  # noqa: BLE001 (the connection ended)
            return

    def close(self) -> None:
        self.ws.close()


def check_push(cluster: Cluster, messages: int) -> dict:
    """Waiters on every worker of both hosts; posts to host 1; every waiter gets every
    message; latencies by where the waiter is."""
    h1, h2 = HOSTS["h1"][1], HOSTS["h2"][1]
    session = raw_session(h1, PORT, "/chat")
    marker, _, _ = post_chat(h1, "push-marker", session)
    after = marker["seq"]
    waiters: list = []
    deadline = time.monotonic() + 30
    for host in (h1, h2):  # an SSE stream and a WebSocket on each worker of each host
        for kind in ("sse", "ws"):
            seen: set[str] = set()
            while len(seen) < 2:
                if time.monotonic() > deadline:
                    raise AssertionError(f"{kind} waiters did not reach both workers of {host}")
                w = SSEWaiter(host, after) if kind == "sse" else WSWaiter(host, PORT, after)
                if w.worker in seen:
                    w.close()
                    continue
                seen.add(w.worker)
                waiters.append(w)
    waiters.append(WSWaiter("127.0.0.1", LB_PORT, after))  # through nginx: the upgrade passes
    time.sleep(0.5)  # every waiter subscribed
    latencies: dict[str, list[float]] = {"same worker": [], "other worker": [], "other host": []}
    missing = 0
    for i in range(messages):
        text = f"push-{i}"
        _, poster, sent = post_chat(h1, text, session)
        limit = time.monotonic() + 10
        while any(text not in w.arrived for w in waiters) and time.monotonic() < limit:
            time.sleep(0.0005)
        for w in waiters:
            if text not in w.arrived:
                missing += 1
                continue
            if w.host == "nginx":
                continue
            where = (
                "other host" if w.host != h1
                else "same worker" if w.worker == poster
                else "other worker"
            )  # fmt: skip
            latencies[where].append((w.arrived[text] - sent) * 1000)
    for w in waiters:
        w.close()
    return {"waiters": len(waiters), "messages": messages, "missing": missing,
            "latencies": latencies}  # fmt: skip


def check_sessions(cluster: Cluster) -> str:
    """A session made on host 1 (the chat page's GET: a session cookie and the CSRF token
    kept in it, in Redis) used on host 2: its POST must be accepted, and the same POST
    without the session refused (403), or the check proves nothing."""
    h1, h2 = HOSTS["h1"][1], HOSTS["h2"][1]
    cookie, token = raw_session(h1, PORT, "/chat")
    body = f"name=s&text=session-check&csrf_token={token}".encode()
    with_it = http(h2, PORT, "POST", "/chat?json", body, {"Cookie": cookie})[0]
    without = http(h2, PORT, "POST", "/chat?json", body)[0]
    verdict = "valid" if with_it == 200 and without == 403 else "INVALID"
    return f"made on h1, {verdict} on h2 (POST with it: {with_it}, without: {without})"


class Writers:
    """Threads posting guest-book entries through nginx, each with a unique token."""

    def __init__(self, cluster: Cluster, threads: int) -> None:
        self.cluster = cluster
        self.acknowledged: list[str] = []
        self.failed: list[tuple[str, str, float]] = []
        self.requests = 0
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self._run, args=(i,)) for i in range(threads)]

    def start(self) -> None:
        for t in self.threads:
            t.start()

    def _run(self, i: int) -> None:
        enter(self.cluster.names["lb"])
        cookie, csrf = raw_session("127.0.0.1", LB_PORT, "/guest")  # a browser's session
        n = 0
        while not self.stop.is_set():
            token = f"{self.cluster.run_id}-{i}-{n}"
            n += 1
            body = f"name=w{i}&email=w{i}%40example.org&comment={token}&csrf_token={csrf}"
            try:
                status, _, data = http(
                    "127.0.0.1", LB_PORT, "POST", "/guest_add", body.encode(), {"Cookie": cookie}
                )
                outcome = "ok" if status == 303 else f"{status} {data[:60]!r}"
            except OSError as exc:
                outcome = f"{type(exc).__name__}: {exc}"
            with self.lock:
                self.requests += 1
                if outcome == "ok":
                    self.acknowledged.append(token)
                else:
                    self.failed.append((token, outcome, time.monotonic()))

    def finish(self) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(30)


def check_writes(cluster: Cluster, seconds: float, threads: int) -> dict:
    writers = Writers(cluster, threads)
    started = time.monotonic()
    writers.start()
    time.sleep(seconds / 3)
    killed_at = time.monotonic()
    cluster.kill_host("h1")  # every process of host 1, at once
    time.sleep(seconds * 2 / 3)
    writers.finish()
    with writers.lock:
        acked_after_kill = len(writers.acknowledged)
    rows = query(
        f"select comment, count(*) as n from {cluster.schema}.guest "
        f"where comment like '{cluster.run_id}-%' group by comment"
    )
    found = {row["comment"]: row["n"] for row in rows}
    acked = set(writers.acknowledged)
    failed = {token for token, _, _ in writers.failed}
    return {
        "requests": writers.requests,
        "failures": len(writers.failed),
        "failure kinds": sorted({f.split(":")[0][:40] for _, f, _ in writers.failed}),
        "failed after kill (s)": sorted(round(t - killed_at, 2) for _, _, t in writers.failed),
        "acknowledged": len(acked),
        "found": sum(1 for t in found if t in acked),
        "lost": len(acked - set(found)),
        "duplicated": sum(1 for n in found.values() if n > 1),
        "in doubt (failed, found)": len(failed & set(found)),
        "unknown rows": len(set(found) - acked - failed),
        "seconds": round(time.monotonic() - started, 1),
        "acknowledged total": acked_after_kill,
    }


def pct(values: list[float], p: float) -> str:
    if not values:
        return "-"
    ordered = sorted(values)
    return f"{ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))]:.2f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--messages", type=int, default=200, help="chat messages pushed")
    parser.add_argument("--seconds", type=float, default=15.0, help="of writes through nginx")
    parser.add_argument("--writers", type=int, default=8, help="writer threads")
    parser.add_argument("--python", default=sys.executable)
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("test-cluster: needs root (network namespaces)", file=sys.stderr)
        return 2
    if shutil.which("nginx") is None:
        print("test-cluster: nginx is not installed (apt-get install -y nginx)", file=sys.stderr)
        return 2
    cluster = Cluster(args.python)
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    try:
        cluster.start()
        push = in_lb(cluster, check_push, cluster, args.messages)
        sessions = in_lb(cluster, check_sessions, cluster)
        writes = check_writes(cluster, args.seconds, args.writers)
    finally:
        cluster.stop()
    report(push, sessions, writes)
    problems = []
    if push["missing"]:
        problems.append(f"{push['missing']} pushed messages never reached a waiter")
    if writes["lost"] or writes["duplicated"] or writes["unknown rows"]:
        problems.append("acknowledged writes lost or duplicated")
    if writes["acknowledged"] == 0:
        problems.append("no write was acknowledged")
    if "INVALID" in sessions:
        problems.append("a session made on one host is not valid on the other")
    for problem in problems:
        print(f"FAILED: {problem}", file=sys.stderr)
    return 1 if problems else 0


def report(push: dict, sessions: str, writes: dict) -> None:
    lat = push["latencies"]
    rows = [
        ("writes: requests through nginx", writes["requests"]),
        ("writes: failures (host 1 killed at 1/3)", writes["failures"]),
        ("writes: acknowledged", writes["acknowledged"]),
        ("writes: acknowledged and found", writes["found"]),
        ("writes: acknowledged but lost", writes["lost"]),
        ("writes: found twice", writes["duplicated"]),
        ("writes: failed but found (in doubt)", writes["in doubt (failed, found)"]),
        ("push: waiters (SSE + WebSocket, both hosts)", push["waiters"]),
        ("push: messages x waiters missing", push["missing"]),
    ]
    for where in ("same worker", "other worker", "other host"):
        values = lat[where]
        rows.append(
            (f"push latency ms, {where} (n={len(values)})",
             f"p50 {pct(values, 50)}  p99 {pct(values, 99)}")
        )  # fmt: skip
    rows.append(("sessions across hosts", sessions))
    width = max(len(name) for name, _ in rows)
    print("\n" + "-" * (width + 40))
    for name, value in rows:
        print(f"{name:<{width}}  {value}")
    print("-" * (width + 40))
    if writes["failures"]:
        print(f"failure kinds: {writes['failure kinds']}")
        times = writes["failed after kill (s)"]
        print(f"failures happened {times[0]} .. {times[-1]} s after the kill")


if __name__ == "__main__":
    sys.exit(main())
