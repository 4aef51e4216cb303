"""Regions benchmarks: what SMLserver's identical initial heap (§2.1, §5) and Hop's
allocation diet (§3.1) cost in pyweb, C beside the pure-Python fallback in the same run.

Run:  .venv/bin/python benchmarks/bench_regions.py [--short] [--soak N]

1. **Snapshot check + restore** of a module with 50 globals (45 ints, 5 lists of 20 items):
   ``restore()`` when nothing changed (the per-request cost), ``changed()``, and
   ``restore()`` after three changes (rebind, list append, dict key), C vs Python.
2. **Response assembly**: 20 fragments (8 header lines, 12 body chunks, 984 bytes) into an
   ``Arena`` (``writev`` + ``views`` + ``reset``) vs ``b"".join``; bytes allocated each.
3. **Bytes allocated per request** (Hop's 457 B): a server in this process with
   ``--profile-alloc``; a client in another thread sends keep-alive ``GET /hello`` and the
   984-byte dynamic page; the server thread's allocator counts / requests.
4. **Soak**: ``pyweb serve pages`` in a subprocess, N keep-alive requests alternating
   ``/hello`` and the mutating ``/counter`` page (a restore on every other request);
   RSS after warm-up and at the end. The target in the issue is N = 200,000, RSS growth
   under 1 MB; ``--short`` runs 5,000 (CI).

Timings are min-of-rounds on a shared 2-core machine: noisy; ratios in one run matter.
"""

from __future__ import annotations

import argparse
import os
import re
import socket
import subprocess
import sys
import threading
import time
import timeit
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import pyweb_regions  # noqa: E402


def implementations() -> dict[str, types.ModuleType]:
    found = {}
    for name in ("c", "python"):
        try:
            found[name] = pyweb_regions.implementation(name)
        except ImportError:
            print(f"(no {name} implementation: the extension was not built)")
    return found


def best(fn, number: int, rounds: int) -> float:
    """Minimum µs per call over ``rounds`` rounds of ``number`` calls."""
    return min(timeit.repeat(fn, number=number, repeat=rounds)) / number * 1e6


# ---- 1. snapshots ----------------------------------------------------------------------


def fifty_globals() -> types.ModuleType:
    m = types.ModuleType("bench_lib")
    for i in range(45):
        setattr(m, f"g{i}", i * 1000)
    for i in range(5):
        setattr(m, f"c{i}", list(range(20)))
    m.config = m.c0  # still 50 names: one of the lists is also reachable as `config`
    del m.c0
    m.config = {f"k{i}": i for i in range(20)}
    return m


def bench_snapshots(short: bool) -> None:
    print("\n## 1. Module snapshot: check + restore, 50 globals (5 containers of 20)\n")
    print("| implementation | restore(), nothing changed | changed() | 3 changes + restore() |")
    print("|---|---:|---:|---:|")
    number, rounds = (2000, 3) if short else (20000, 7)
    for name, impl in implementations().items():
        m = fifty_globals()
        g = impl.ModuleGuard(m)
        assert g.names == 50, g.names
        quiet = best(g.restore, number, rounds)
        check = best(g.changed, number, rounds)

        def mutate_and_restore(m=m, g=g) -> None:
            m.g7 = -1
            m.c1.append(1)
            m.config["new"] = 1
            g.restore()

        busy = best(mutate_and_restore, number // 4, rounds)
        print(f"| {name} | {quiet:.2f} µs | {check:.2f} µs | {busy:.2f} µs |")


# ---- 2. response assembly --------------------------------------------------------------


def fragments() -> list[bytes]:
    head = [
        b"HTTP/1.1 200 OK\r\n",
        b"Content-Type: text/html; charset=utf-8\r\n",
        b"Content-Length: 830\r\n",
        b"Date: Sun, 22 Nov 2026 21:00:00 GMT\r\n",
        b"Server: pyweb\r\n",
        b"Cache-Control: no-store\r\n",
        b"X-Frame-Options: DENY\r\n",
        b"\r\n",
    ]
    body = [b"<tr><td>row</td><td>" + b"x" * 55 + b"</td></tr>\n" for _ in range(12)]
    return head + body


def bench_assembly(short: bool) -> None:
    print("\n## 2. Response assembly: 20 fragments, then reset\n")
    frags = fragments()
    total = sum(map(len, frags))
    print(f"({total} bytes)\n")
    print("| method | µs per response | bytes allocated per response (C hook) |")
    print("|---|---:|---:|")
    number, rounds = (2000, 3) if short else (20000, 7)
    impls = implementations()
    counter = impls.get("c")
    if counter is not None:
        counter.alloc_install()

    def allocated(fn) -> str:
        if counter is None:
            return "n/a"
        fn()
        counter.alloc_enable(True)
        b0, _ = counter.alloc_counts()
        for _ in range(100):
            fn()
        b1, _ = counter.alloc_counts()
        counter.alloc_enable(False)
        return f"{(b1 - b0) / 100:.0f}"

    def join() -> None:
        b"".join(frags)

    print(f"| b''.join | {best(join, number, rounds):.2f} | {allocated(join)} |")
    for name, impl in impls.items():
        arena = impl.Arena()

        def assemble(arena=arena) -> None:
            arena.writev(frags)
            views = arena.views()
            for v in views:
                v.release()
            del views
            arena.reset()

        print(
            f"| Arena ({name}): writev + views + reset | {best(assemble, number, rounds):.2f} | "
            f"{allocated(assemble)} |"
        )


# ---- 3. bytes per request ----------------------------------------------------------------


def keepalive_client(port: int, target: str, n: int) -> None:
    request = f"GET {target} HTTP/1.1\r\nHost: bench\r\n\r\n".encode()
    with socket.create_connection(("127.0.0.1", port)) as s:
        buf = b""
        for _ in range(n):
            s.sendall(request)
            while True:
                end = buf.find(b"\r\n\r\n")
                if end >= 0:
                    m = re.search(rb"content-length: *(\d+)", buf[:end].lower())
                    length = int(m.group(1)) if m else 0
                    if len(buf) >= end + 4 + length:
                        buf = buf[end + 4 + length :]
                        break
                data = s.recv(65536)
                if not data:
                    raise ConnectionError("server closed")
                buf += data


def bench_alloc(short: bool) -> None:
    print("\n## 3. Bytes allocated per keep-alive request (server thread, --profile-alloc)\n")
    if not pyweb_regions.ALLOC_AVAILABLE:
        print("not available: pyweb_regions uses the Python fallback")
        return
    import json

    import pyweb.testing
    from pyweb.app.site import Site

    site_dir = ROOT / "pages"
    site = Site(site_dir, profile_alloc=True)
    n = 500 if short else 5000
    print("| page | requests | bytes/request in the page | whole server thread bytes/request |")
    print("|---|---:|---:|---:|")
    with pyweb.testing.serve(site, error_log=None) as client:
        port = client.server.port

        def server_stats() -> dict:
            # Through HTTP: the counters are per thread, and this runs in the server's.
            return json.loads(client.get("/_pyweb/stats.json").text)

        for target, page in [("/hello", "hello.py"), ("/table", "table.py")]:
            keepalive_client(port, target, 50)  # warm up (imports, caches)
            before = server_stats()["server_thread"]
            t = threading.Thread(target=keepalive_client, args=(port, target, n))
            t.start()
            t.join()
            after = server_stats()
            per_page = after["pages"][f"pages/{page}"]["bytes_per_request"]
            thread = after["server_thread"]
            # minus one stats request (before's own) in the count; its bytes are small
            whole = (thread["bytes"] - before["bytes"]) / (thread["requests"] - before["requests"])
            print(f"| {target} | {n} | {per_page:.0f} | {whole:.0f} |")
        stats = server_stats()
    print(f"\n(hello page, all requests so far: {stats['pages']['pages/hello.py']})")
    print(
        "(whole server thread: parsing, the page, framing, logging: everything the server "
        "thread allocated between two stats requests, divided by the requests served)"
    )


def bench_floor(short: bool) -> None:
    """CPython + trio's floor for the same exchange: a minimal keep-alive loop that reads
    with recv_into a reused buffer, writes a constant reply and waits with trio."""
    import trio

    if not pyweb_regions.ALLOC_AVAILABLE:
        return
    pyweb_regions.alloc_install()
    pyweb_regions.alloc_enable(True)
    reply = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 13\r\n\r\nHello!!"
    reply = reply.replace(b"Hello!!", b"Hello, world!")
    view = memoryview(bytearray(65536))
    warm, n = 200, (500 if short else 5000)
    result: dict[str, tuple[float, float]] = {}

    async def serve_one(listener: socket.socket) -> None:
        conn, _ = listener.accept()
        conn.setblocking(False)
        served, start = 0, (0, 0)
        with conn:
            while True:
                try:
                    got = conn.recv_into(view)
                except BlockingIOError:
                    await trio.lowlevel.wait_readable(conn)
                    continue
                if got == 0:
                    return
                os.write(conn.fileno(), reply)
                await trio.lowlevel.cancel_shielded_checkpoint()
                served += 1
                if served == warm:
                    start = pyweb_regions.alloc_counts()
                elif served == warm + n:
                    b, c = pyweb_regions.alloc_counts()
                    result["floor"] = ((b - start[0]) / n, (c - start[1]) / n)

    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        t = threading.Thread(target=trio.run, args=(serve_one, listener))
        t.start()
        keepalive_client(port, "/hello", warm + n)
    t.join()
    b, c = result["floor"]
    print(
        f"\nfloor (minimal trio loop, recv_into a reused buffer, one os.write): "
        f"{b:.0f} bytes, {c:.1f} allocations per request"
    )


# ---- 4. soak --------------------------------------------------------------------------------


def rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def bench_soak(n: int) -> None:
    print(f"\n## 4. Soak: RSS of `pyweb serve pages` over {n:,} keep-alive requests\n")
    proc = subprocess.Popen(
        [sys.executable, "-m", "pyweb", "serve", str(ROOT / "pages"), "--port", "0"]
        + ["--access-log", "none", "--error-log", "none"],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    try:
        banner = proc.stdout.readline()  # type: ignore[union-attr]
        print(banner.strip())
        port = int(re.search(r":(\d+)/", banner).group(1))  # type: ignore[union-attr]
        warm = min(5000, n // 4)
        for target in ("/hello", "/counter"):
            keepalive_client(port, target, warm // 2)
        base = rss_kb(proc.pid)
        samples = []
        step = max(1, n // 10)
        t0 = time.perf_counter()
        done = 0
        while done < n:
            k = min(step, n - done)
            # Alternate: a constant page, and a page that mutates a library global (so a
            # snapshot restore runs on half of the requests).
            keepalive_client(port, "/hello", k // 2)
            keepalive_client(port, "/counter", k - k // 2)
            done += k
            samples.append(rss_kb(proc.pid))
        elapsed = time.perf_counter() - t0
        print(f"requests: {n:,} in {elapsed:.1f} s ({n / elapsed:,.0f} req/s, one client)")
        print(f"RSS after warm-up ({warm:,} requests): {base:,} kB")
        print(f"RSS every {step:,} requests: {', '.join(f'{s:,}' for s in samples)} kB")
        print(f"growth after warm-up: {samples[-1] - base:+,} kB (max {max(samples) - base:+,} kB)")
    finally:
        proc.terminate()
        proc.wait(10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--short", action="store_true", help="quick run (CI)")
    parser.add_argument("--soak", type=int, default=None, help="soak requests (200,000)")
    args = parser.parse_args()
    soak = args.soak if args.soak is not None else (5000 if args.short else 200_000)
    print(f"pyweb_regions: {pyweb_regions.IMPLEMENTATION}, Python {sys.version.split()[0]}")
    bench_snapshots(args.short)
    bench_assembly(args.short)
    bench_alloc(args.short)
    bench_floor(args.short)
    if soak:
        bench_soak(soak)


if __name__ == "__main__":
    main()
