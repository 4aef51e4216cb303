"""``make demo-nginx``: a new site from ``pyweb new``, served behind nginx with two workers.

What a first deployment does, end to end, in a temporary folder that is removed afterwards:

1. ``pyweb new demo``, plus two files a site grows soon: ``note.py`` (a form that POSTs,
   with its CSRF token, into the session) and ``echo_ws.py`` (a WebSocket);
2. ``pyweb serve site --config pyweb.toml --workers 2 --cache redis://... --metrics`` (a
   Redis database of its own, ``--redis-db``, its keys removed at the end);
3. nginx in the foreground (``daemon off``) with the configuration
   :func:`nginx_site` writes, the one docs/production.md shows;
4. requests through nginx from 127.0.0.2 (another loopback address, so that the visitor
   is not the proxy and the forwarded address shows): a page, a service, the form and its
   POST (and a POST without the token: 403), a WebSocket echo, a request that tries to
   forge its address, and the operator pages (closed at nginx; scraped on pyweb's port);
5. a transcript of all that, with the access log lines pyweb wrote.

Exit status 0 when every step answered as expected. Needs nginx (``apt-get install
nginx``) and Redis on 127.0.0.1:6379.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

CLIENT = "127.0.0.2"
"""The visitor's address: loopback, but not the proxy's (127.0.0.1, pyweb's trusted one)."""

NOTE_PAGE = '''\
# A form that POSTs (CSRF-protected: the hidden field csrf_field() writes) into the session;
# the session lives in the shared cache, so either worker can answer the next request.
from pyweb import csrf_field, qq
from pyweb.forms import get_string, wrap_opt

if conn.method == "POST":
    conn.session["note"] = wrap_opt(get_string)("text", max_length=200) or ""
    conn.redirect("/note", status=303)
else:
    token = csrf_field()
    conn.return_(qq("""<!DOCTYPE html><title>Note</title>
<p>Your note: {note}</p>
<p>You are {peer} over {scheme}.</p>
<form method="post" action="/note">{token}<input name="text"><button>Save</button></form>""",
        note=conn.session.get("note", "(none)"), peer=conn.peer, scheme=conn.scheme,
        token=token))
'''

ECHO_WS = '''\
"""A WebSocket that says back what it hears (a service module: imported once)."""
import pyweb


@pyweb.websocket("/echo")
async def echo(ws):
    text = await ws.recv()
    await ws.send(f"echo: {text}")
    await ws.close(1000, "done")
'''


def nginx_site(listen: int, upstream: int) -> str:
    """The part of nginx's configuration that serves the site (docs/production.md shows it
    for ``listen=8080, upstream=8000``; tests/test_demo_nginx.py keeps the two equal)."""
    return textwrap.dedent(f"""\
        upstream pyweb {{
            server 127.0.0.1:{upstream};            # pyweb serve --workers 2: one port
            keepalive 32;                       # reuse connections to pyweb
        }}
        map $http_upgrade $connection_upgrade {{  # WebSockets: pass the upgrade on
            default upgrade;
            ''      '';                         # others: keep-alive to pyweb
        }}
        server {{
            listen 127.0.0.1:{listen};
            location / {{
                proxy_pass http://pyweb;
                proxy_http_version 1.1;
                proxy_set_header Upgrade $http_upgrade;
                proxy_set_header Connection $connection_upgrade;
                proxy_set_header Host $host;
                proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
                proxy_set_header X-Forwarded-Proto $scheme;
                proxy_set_header Forwarded "";  # pyweb prefers Forwarded: never pass a client's
                proxy_read_timeout 1h;          # long polls, event streams, WebSockets
            }}
            location /_pyweb/ {{ deny all; }}     # operator pages: scrape pyweb's port instead
        }}
        """)


def nginx_conf(folder: Path, listen: int, upstream: int) -> str:
    """A whole configuration for an nginx that runs in ``folder``, in the foreground."""
    user = "user root;\n" if os.geteuid() == 0 else ""  # (its workers must reach folder)
    site = textwrap.indent(nginx_site(listen, upstream), "    ")
    return (
        f"{user}worker_processes 1;\npid {folder}/nginx.pid;\n"
        f"error_log {folder}/nginx-error.log warn;\nevents {{ worker_connections 256; }}\n"
        f"http {{\n    access_log {folder}/nginx-access.log;\n"
        + "".join(f"    {kind}_temp_path {folder}/{kind};\n"
                  for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
        + f"{site}}}\n"
    )  # fmt: skip


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def find_nginx() -> str | None:
    return shutil.which("nginx") or next(
        (p for p in ("/usr/sbin/nginx",) if os.access(p, os.X_OK)), None
    )


class Transcript:
    """What happened, printed as it happens; ``failed`` counts the surprises."""

    def __init__(self) -> None:
        self.failed = 0

    def step(self, what: str, got: str, ok: bool) -> None:
        self.failed += not ok
        print(f"{'ok ' if ok else 'BAD'} {what}\n      {got}", flush=True)


def request(port: int, method: str, target: str, *, headers: str = "", body: bytes = b"",
            cookie: str = "") -> tuple[int, dict[str, str], str]:  # fmt: skip
    """One request from :data:`CLIENT` to nginx: status, head fields, body text."""
    with socket.create_connection(("127.0.0.1", port), timeout=10,
                                  source_address=(CLIENT, 0)) as sock:  # fmt: skip
        head = f"{method} {target} HTTP/1.1\r\nHost: demo.test\r\nConnection: close\r\n{headers}"
        if cookie:
            head += f"Cookie: {cookie}\r\n"
        if body:
            head += ("Content-Type: application/x-www-form-urlencoded\r\n"
                     f"Content-Length: {len(body)}\r\n")  # fmt: skip
        sock.sendall(head.encode() + b"\r\n" + body)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    raw_head, _, rest = data.partition(b"\r\n\r\n")
    lines = raw_head.decode("latin-1").split("\r\n")
    fields: dict[str, str] = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        fields.setdefault(name.strip().lower(), value.strip())
    if fields.get("transfer-encoding") == "chunked":
        rest = _unchunk(rest)
    return int(lines[0].split()[1]), fields, rest.decode("utf-8", "replace")


def _unchunk(data: bytes) -> bytes:
    out = b""
    while data:
        size_line, _, data = data.partition(b"\r\n")
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            break
        out, data = out + data[:size], data[size + 2 :]
    return out


def websocket_echo(port: int, text: str) -> str:
    """Open ``/echo`` through nginx, send ``text``, return the answer."""
    from websockets.sync.client import connect

    sock = socket.create_connection(("127.0.0.1", port), timeout=10, source_address=(CLIENT, 0))
    with connect(f"ws://127.0.0.1:{port}/echo", sock=sock, open_timeout=10) as ws:
        ws.send(text)
        return str(ws.recv(timeout=10))


@contextlib.contextmanager
def running(command: list[str], **options: object) -> Iterator[subprocess.Popen[str]]:
    """A process for the block; SIGTERM (a drain) at its end, SIGKILL if it lingers."""
    proc = subprocess.Popen(command, text=True, **options)  # type: ignore[call-overload]
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def wait_for_pyweb(proc: subprocess.Popen[str], workers: int) -> int:
    """Read the supervisor's banner (its port) and its workers' "ready" lines."""
    assert proc.stdout is not None
    banner = proc.stdout.readline()
    found = re.search(r"on http://127\.0\.0\.1:(\d+)/", banner)
    if not found:
        raise SystemExit(f"pyweb did not start: {banner!r}")
    print(f"    {banner.strip()}")
    ready = 0
    while ready < workers:
        line = proc.stdout.readline()
        if not line:
            raise SystemExit("pyweb stopped before its workers were ready")
        ready += " ready" in line
        print(f"    {line.strip()}")
    return int(found.group(1))


def wait_for_port(port: int, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"nginx exited with status {proc.returncode}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
            return
        time.sleep(0.05)  # polling a port nginx is about to open: nothing to wait on
    raise SystemExit(f"nginx did not listen on {port}")


def make_site(folder: Path) -> Path:
    """``pyweb new demo`` in ``folder``, and the two files it grows."""
    done = subprocess.run([sys.executable, "-m", "pyweb", "new", "demo"], cwd=folder,
                          capture_output=True, text=True)  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"pyweb new failed: {done.stderr}")
    print(f"$ pyweb new demo   ({len(done.stdout.splitlines())} lines of output)")
    site = folder / "demo" / "site"
    (site / "note.py").write_text(NOTE_PAGE, encoding="utf-8")
    (site / "echo_ws.py").write_text(ECHO_WS, encoding="utf-8")
    print("  added site/note.py (a CSRF-protected POST) and site/echo_ws.py (a WebSocket)")
    return folder / "demo"


def requests_through(port: int, pyweb_port: int, say: Transcript) -> None:
    """The visitor's requests, each checked."""
    status, _, body = request(port, "GET", "/?name=nginx")
    title = re.search(r"<h1>(.*?)</h1>", body)
    say.step("GET /?name=nginx (a page script)", f"{status} {title and title.group(0)}",
             status == 200 and title is not None and title.group(1) == "Hello, nginx!")
    status, _, body = request(port, "GET", "/api/time")
    say.step("GET /api/time (a service)", f"{status} {body.strip()}", status == 200 and "utc" in body)
    status, fields, body = request(port, "GET", "/note")
    cookie = "; ".join(c.split(";")[0] for c in [fields.get("set-cookie", "")] if c)
    token = re.search(r'name="csrf_token" value="([^"]+)"', body)
    say.step("GET /note (the form, its CSRF token and a cookie)",
             f"{status}, token {'found' if token else 'missing'}, cookie {cookie.split('=')[0] or '-'}",
             status == 200 and token is not None and bool(cookie))  # fmt: skip
    peer = re.search(r"You are (\S+) over (\w+)", body)
    say.step("  the page sees the visitor, not nginx (X-Forwarded-For)",
             f"peer {peer and peer.group(1)}, scheme {peer and peer.group(2)}",
             peer is not None and peer.group(1).startswith(CLIENT + ":"))  # fmt: skip
    form = f"text=behind+nginx&csrf_token={token.group(1) if token else ''}".encode()
    status, fields, _ = request(port, "POST", "/note", body=form, cookie=cookie)
    say.step("POST /note with the token", f"{status} -> {fields.get('location')}", status == 303)
    cookie = "; ".join(filter(None, [cookie, fields.get("set-cookie", "").split(";")[0]]))
    status, _, body = request(port, "POST", "/note", body=b"text=forged", cookie=cookie)
    say.step("POST /note without the token", f"{status}", status == 403)
    saved = []
    for _ in range(4):  # new connections: nginx and the kernel spread them over the workers
        status, _, body = request(port, "GET", "/note", cookie=cookie)
        saved.append("behind nginx" in body)
    say.step("GET /note x4 (the session is in Redis: every worker has it)",
             f"note shown {sum(saved)}/4", all(saved))  # fmt: skip
    forged = "X-Forwarded-For: 198.51.100.2\r\nForwarded: for=198.51.100.1\r\n"
    status, _, body = request(port, "GET", "/note", headers=forged)
    peer = re.search(r"You are (\S+) over", body)
    say.step("GET /note claiming to be 198.51.100.x (X-Forwarded-For, Forwarded)",
             f"peer {peer and peer.group(1)}",
             peer is not None and peer.group(1).startswith(CLIENT + ":"))  # fmt: skip
    answer = websocket_echo(port, "hello through nginx")
    say.step("WebSocket /echo", answer, answer == "echo: hello through nginx")
    status, _, _ = request(port, "GET", "/_pyweb/metrics")
    say.step("GET /_pyweb/metrics through nginx", f"{status} (denied at nginx)", status == 403)
    with socket.create_connection(("127.0.0.1", pyweb_port), timeout=10) as sock:
        sock.sendall(b"GET /_pyweb/metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    text = data.decode("utf-8", "replace")
    lines = [line for line in text.splitlines() if line.startswith(("pyweb_http_requests_total{",
                                                                    "pyweb_workers "))]  # fmt: skip
    say.step(f"GET /_pyweb/metrics on pyweb's port {pyweb_port} (Prometheus, both workers)",
             "\n      ".join(lines), text.startswith("HTTP/1.1 200") and "pyweb_workers" in text)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--redis-db", type=int, default=13, help="Redis database (default 13)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = parser.parse_args()
    nginx = find_nginx()
    if nginx is None:
        print("demo-nginx: nginx is not installed (apt-get install -y nginx)", file=sys.stderr)
        return 2
    folder = Path(tempfile.mkdtemp(prefix="pyweb-demo-nginx-"))
    prefix = f"pyweb-demo:{os.getpid()}:"
    cache = f"redis://127.0.0.1:6379/{args.redis_db}?prefix={prefix}"
    say = Transcript()
    try:
        project = make_site(folder)
        env = dict(os.environ, PYWEB_SECRET_KEY=os.environ.get(
            "PYWEB_SECRET_KEY", "demo-only-key-" + os.urandom(16).hex()))  # fmt: skip
        command = [sys.executable, "-m", "pyweb", "serve", "site", "--config", "pyweb.toml",
                   "--port", "0", "--workers", "2", "--cache", cache, "--metrics",
                   "--access-log", str(folder / "access.log")]  # fmt: skip
        print(f"$ cd demo && pyweb serve site --config pyweb.toml --port 0 --workers 2 "
              f"--cache {cache} --metrics")
        with running(command, cwd=project, env=env, stdout=subprocess.PIPE) as pyweb:
            pyweb_port = wait_for_pyweb(pyweb, 2)
            port = free_port()
            conf = folder / "nginx.conf"
            conf.write_text(nginx_conf(folder, port, pyweb_port), encoding="utf-8")
            print(f"$ nginx -p {folder} -c nginx.conf -g 'daemon off;'   (listening on {port})")
            with running([nginx, "-p", str(folder), "-c", str(conf), "-g", "daemon off;"],
                         stderr=subprocess.PIPE) as proxy:  # fmt: skip
                wait_for_port(port, proxy)
                print(f"\nrequests from {CLIENT} to nginx on 127.0.0.1:{port}:")
                requests_through(port, pyweb_port, say)
        print("\npyweb's access log (the visitor's address, as nginx forwarded it):")
        for line in (folder / "access.log").read_text().splitlines():
            print(f"    {line}")
    finally:
        _forget_keys(args.redis_db, prefix)
        if args.keep:
            print(f"(kept {folder})")
        else:
            shutil.rmtree(folder, ignore_errors=True)
    print(f"\n{'every step answered as expected' if not say.failed else f'{say.failed} step(s) failed'}")
    return 1 if say.failed else 0


def _forget_keys(db: int, prefix: str) -> None:
    """Remove the demo's Redis keys (the sessions it made)."""
    try:
        import redis
    except ImportError:  # pragma: no cover - pyweb[redis] is what --cache redis needs anyway
        return
    client = redis.Redis(host="127.0.0.1", port=6379, db=db)
    keys = list(client.scan_iter(match=prefix + "*", count=1000))
    if keys:
        client.unlink(*keys)


if __name__ == "__main__":
    sys.exit(main())
