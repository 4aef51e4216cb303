"""Regions benchmarks: what SMLserver's identical initial heap (§2.1, §5) and Hop's
allocation diet (§3.1) cost in pyweb, C beside the pure-Python fallback in the same run.

Run:  .venv/bin/python benchmarks/bench_regions.py [--short] [--soak N]
      .venv/bin/python benchmarks/bench_regions.py --breakdown 1000 [--short]   (3b only)

1. **Snapshot check + restore** of a module with 50 globals (45 ints, 5 lists of 20 items):
   ``restore()`` when nothing changed (the per-request cost), ``changed()``, and
   ``restore()`` after three changes (rebind, list append, dict key), C vs Python.
2. **Response assembly**: 20 fragments (8 header lines, 12 body chunks, 984 bytes) into an
   ``Arena`` (``writev`` + ``views`` + ``reset``) vs ``b"".join``; then with the write to a
   socket, as the server does it: ``writev`` + ``send`` (one ``writev(2)``) + ``reset`` vs
   ``b"".join`` + ``os.write``; bytes allocated each.
2b. **Reading a request**: the server's read with ``Arena.recv`` into the thread's region
   page vs ``recv(65536)``, a request there and a read that finds nothing; time and bytes.
3. **Bytes allocated per request** (Hop's 457 B): a server in this process with
   ``--profile-alloc``; a client in another thread sends keep-alive ``GET /hello`` and
   ``GET /table`` (the pages site's large page); the server thread's allocator counts /
   requests. The client sends each request when the previous reply is in, so whether the
   server finds it already there varies by run (3b separates the two cases).
3b. **Where the bytes go** (``--breakdown N``, BglMem's histogram): exact counts for
   ``/hello`` and the peers' 984-byte dynamic page, with the next request already there
   (pipelined) or not (the server waits), access log off and on; then the top functions by
   the bytes they allocate themselves (cProfile with the hook's counter as its clock, the
   profiler's own allocations subtracted), and the floor in both cases.
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
# The example site signs (sessions, CSRF tokens): outside --dev it needs a key.
os.environ.setdefault("PYWEB_SECRET_KEY", "benchmarks-only-key-not-a-secret-0123")

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


def allocated(fn) -> str:  # type: ignore[no-untyped-def]
    """Bytes one call of ``fn`` allocates (the C hook's count over 100 calls), or n/a."""
    if not pyweb_regions.ALLOC_AVAILABLE:
        return "n/a"
    pyweb_regions.alloc_install()
    fn()
    pyweb_regions.alloc_enable(True)
    b0, _ = pyweb_regions.alloc_counts()
    for _ in range(100):
        fn()
    b1, _ = pyweb_regions.alloc_counts()
    pyweb_regions.alloc_enable(False)
    return f"{(b1 - b0) / 100:.0f}"


def bench_assembly(short: bool) -> None:
    print("\n## 2. Response assembly: 20 fragments, then reset\n")
    frags = fragments()
    total = sum(map(len, frags))
    print(f"({total} bytes)\n")
    print("| method | µs per response | bytes allocated per response (C hook) |")
    print("|---|---:|---:|")
    number, rounds = (2000, 3) if short else (20000, 7)
    impls = implementations()

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

    # What the server does with a reply: assemble it and hand it to the kernel. A socketpair
    # whose other end is drained between rounds stands in for the client.
    left, right = socket.socketpair()
    left.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 22)
    right.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)
    right.setblocking(False)
    fd = left.fileno()

    def drain() -> None:
        try:
            while right.recv(1 << 20):
                pass
        except BlockingIOError:
            pass

    def join_write() -> None:
        os.write(fd, b"".join(frags))

    def timed(fn) -> float:
        # 500 replies (600 KB) fit the socket buffers; drained outside the timed calls.
        results = []
        for _ in range(rounds):
            drain()
            results.append(timeit.timeit(fn, number=500) / 500 * 1e6)
        drain()
        return min(results)

    def allocated_send(fn) -> str:
        out = allocated(fn)
        drain()
        return out

    print(
        f"| b''.join + os.write (the server without an arena) | {timed(join_write):.2f} | "
        f"{allocated_send(join_write)} |"
    )
    for name, impl in impls.items():
        arena = impl.Arena()

        def assemble_send(arena=arena) -> None:
            arena.writev(frags)
            arena.send(fd)
            arena.reset()

        print(
            f"| Arena ({name}): writev + send (one writev) + reset (the server) | "
            f"{timed(assemble_send):.2f} | {allocated_send(assemble_send)} |"
        )
    left.close()
    right.close()


def bench_read(short: bool) -> None:
    """The server's two read paths (pyweb/server/trio/recvbuf.py), called as the connection
    calls them: a request that is there, and a read that finds nothing (BlockingIOError,
    then the connection waits). The parser is a stand-in that copies what it is fed into
    its buffer, as the real one does."""
    from pyweb.server.trio import recvbuf

    print("\n## 2b. Reading a request: Arena.recv into the thread's page vs recv(65536)\n")
    print("| path | µs per read, request there | bytes allocated | µs, nothing there | bytes |")
    print("|---|---:|---:|---:|---:|")
    number, rounds = (2000, 3) if short else (20000, 7)
    request = b"GET /hello HTTP/1.1\r\nHost: bench\r\n\r\n"

    class Sink:
        def __init__(self) -> None:
            self.buf = bytearray()

        def feed(self, data: bytes) -> None:
            self.buf += data
            del self.buf[:]

    left, right = socket.socketpair()
    right.setblocking(False)
    fd, sink = right.fileno(), Sink()
    paths = [("recv(65536) (the pure-Python fallback's read)", recvbuf._receive_plain)]
    if pyweb_regions.IMPLEMENTATION == "c":
        paths.insert(0, ("Arena.recv + feed(arena) + reset (the server)", recvbuf._receive_arena))
    for name, receive in paths:

        def there(receive=receive) -> None:
            left.send(request)
            receive(fd, sink)

        def nothing(receive=receive) -> None:
            try:
                receive(fd, sink)
            except BlockingIOError:
                pass

        print(
            f"| {name} | {best(there, number, rounds):.2f} | {allocated(there)} | "
            f"{best(nothing, number, rounds):.2f} | {allocated(nothing)} |"
        )
    print("\n(µs include the client's send of the request; the difference is the read path)")
    left.close()
    right.close()


# ---- 3. bytes per request ----------------------------------------------------------------


def keepalive_client(
    port: int, target: str, n: int, *, window: int = 1, pause: float = 0.0
) -> None:
    """``n`` keep-alive requests on one connection, each sent when the previous reply is in;
    ``window``: that many requests in flight (pipelined: the server finds the next request
    already there); ``pause``: seconds between a reply and the next request (so it never
    does: the server waits for every request, as with a browser's think time)."""
    request = f"GET {target} HTTP/1.1\r\nHost: bench\r\n\r\n".encode()
    with socket.create_connection(("127.0.0.1", port)) as s:
        buf = b""
        s.sendall(request * min(window - 1, n))
        for i in range(n):
            if pause:
                time.sleep(pause)
            if i + window - 1 < n:
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
    with recv_into a reused buffer, writes a constant reply and waits with trio. Measured
    the two ways a request can find the server (see bench_breakdown): already there
    (pipelined) or not yet (the server waits for readability)."""
    if not pyweb_regions.ALLOC_AVAILABLE:
        return
    pyweb_regions.alloc_install()
    pyweb_regions.alloc_enable(True)
    for mode, options in FLOOR_MODES.items():
        b, c = _floor(short, **options)
        print(
            f"\nfloor, {mode} (minimal trio loop, recv_into a reused buffer, one os.write): "
            f"{b:.0f} bytes, {c:.1f} allocations per request"
        )


FLOOR_MODES = {"pipelined": {"window": 16}, "waits": {"pause": 0.0005}}


def _floor(short: bool, **client: float) -> tuple[float, float]:
    import trio

    reply = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 13\r\n\r\nHello!!"
    reply = reply.replace(b"Hello!!", b"Hello, world!")
    buffer = bytearray(65536)
    view = memoryview(buffer)
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
                # Pipelined requests can arrive together: one reply each.
                for _ in range(buffer.count(b"\r\n\r\n", 0, got)):
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
        keepalive_client(port, "/hello", warm + n, **client)  # type: ignore[arg-type]
    t.join()
    return result["floor"]


# ---- 3b. where the bytes go (--breakdown) -------------------------------------------------
#
# BglMem's histogram for pyweb: which functions allocate a keep-alive request's bytes. The
# allocator hook counts exactly but cannot say *where*; tracemalloc can say where but only
# for blocks still alive (net), and almost everything a request allocates is freed before
# the next one. So the counts come from the hook and the places from cProfile, whose timer
# is replaced by the hook's counter: cProfile's "time" of a function is then the bytes (or
# allocator calls) it made itself, cumulative. Profiling is not free, and what it costs is
# known exactly and subtracted (checked against an unprofiled run):
#   * every timer call allocates its result ints (K, measured) after reading the counter,
#     so each span cProfile measures starts with K;
#   * the profiler materialises a frame object for every Python function call (3.11 makes
#     them lazily; unprofiled calls mostly never need one): charged to the caller;
#   * a call of a C method through its type (``s.split()``) gets a temporary bound method
#     (72 bytes) so the profiler can name it: also charged to the caller.
# A generator or coroutine gets its frame object once, at its first resume, not at every
# resume: a second pass with sys.setprofile counts those first resumes.


def _frame_bytes(code: types.CodeType) -> int:
    """What materialising a frame object for ``code`` allocates (CPython 3.11: the frame's
    fixed part, one slot per local, cell, free variable and stack entry, the GC header)."""
    slots = len(set(code.co_varnames) | set(code.co_cellvars)) + len(code.co_freevars)
    return type(sys._getframe()).__basicsize__ + (slots + code.co_stacksize) * 8 + 16


TOP = 20  # rows in each per-function table
_BOUND_METHOD = 72  # PyCFunctionObject + GC header: the profiler's temporary bound method
_GENERATOR_FLAGS = 0x20 | 0x80 | 0x200  # CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR


def _label(key: tuple[str, int, str]) -> str:
    """``pyweb/server/trio/connection.py:202 talk``; C functions by their profiler name."""
    file, line, name = key
    if file == "~":
        return name.replace("<built-in method ", "<").replace("<method ", "<")
    # site-packages first: the project's virtualenv lives under ROOT
    for base in (*(p + os.sep for p in sys.path if "site-packages" in p), str(ROOT) + os.sep):
        if file.startswith(base):
            file = file[len(base) :]
            break
    else:
        file = os.path.basename(file)
    return f"{file}:{line} {name}"


_AREAS = [  # (label prefix, area), first match wins
    ("pyweb/events/", "pyweb.events: the choice an idle connection waits on (CML sync)"),
    ("pyweb/protocol/parser.py", "parser (pyweb/protocol/parser.py)"),
    ("pyweb/protocol/", "response head and events (pyweb/protocol)"),
    ("pyweb/server/", "connection loop, receive, reply (pyweb/server)"),
    ("pyweb/app/", "site dispatch, Conn, the page's response (pyweb/app)"),
    ("pyweb/regions.py", "module snapshots (pyweb/regions.py)"),
    ("pages/", "the page script"),
    ("<", "C functions and methods (called from all of these)"),
    ("benchmarks/", "the benchmark's handler and dynamic page"),
]


def _area(key: tuple[str, int, str]) -> str:
    label = _label(key)
    for prefix, area in _AREAS:
        if label.startswith(prefix):
            return area
    return "trio, outcome, contextlib, the interpreter (event loop, cancel scopes)"


def _corrected(
    stats: dict, k: float, per_object: float, bound: float, fresh: dict, codes: dict
) -> dict[tuple[str, int, str], float]:
    """Each function's own allocations with the profiler's part removed (see above).
    ``per_object`` is None for bytes (use the frame size) or the number of allocator calls
    one frame object costs (1); ``bound`` is the bound method's bytes or calls."""
    own: dict[tuple[str, int, str], float] = {}
    for key, (_cc, nc, tt, _ct, callers) in stats.items():
        own[key] = own.get(key, 0.0) + tt - k * nc  # the K that starts each of its spans
        code = codes.get(key)
        if code is not None and code.co_flags & _GENERATOR_FLAGS:
            objects = fresh.get(code, 0)  # frame objects made: one per generator
        else:
            objects = nc if code is not None else 0
        frame = per_object if per_object is not None else (_frame_bytes(code) if code else 0)
        c_method = key[0] == "~" and key[2].startswith("<method ")
        for caller, (_ccc, cnc, _ctt, _cct) in callers.items():
            share = cnc / nc if nc else 0.0
            cost = k * cnc + frame * objects * share + (bound * cnc if c_method else 0)
            own[caller] = own.get(caller, 0.0) - cost
    return own


def bench_breakdown(n: int) -> None:
    print(f"\n## 3b. Where a keep-alive request's bytes go ({n} requests per page)\n")
    if not pyweb_regions.ALLOC_AVAILABLE:
        print("not available: pyweb_regions uses the Python fallback")
        return
    import cProfile
    import gc
    import json
    import pstats
    import statistics
    import tracemalloc

    sys.path.insert(0, str(ROOT / "benchmarks" / "apps"))
    import page  # the peers' 984-byte dynamic page (benchmarks/apps/page.py)

    import pyweb.testing
    from pyweb.app.site import Site
    from pyweb.protocol.response import Response

    counts = pyweb_regions.alloc_counts
    pyweb_regions.alloc_install()
    pyweb_regions.alloc_enable(True)
    site = Site(ROOT / "pages")  # regions on, --profile-alloc off: the production path
    html = [("Content-Type", "text/html; charset=utf-8")]
    shared: dict = {"counter": 0}

    def timer_bytes() -> int:
        return counts()[0]

    def timer_calls() -> int:
        return counts()[1]

    def first_resumes(frame, event, arg):  # sys.setprofile: count generator frame objects
        code = frame.f_code
        if event == "call" and code.co_flags & _GENERATOR_FLAGS and frame.f_trace_lines:
            frame.f_trace_lines = False  # a mark on the frame object: seen (no tracer runs)
            shared["fresh"][code] = shared["fresh"].get(code, 0) + 1

    def control(action: str) -> None:
        """Runs in the server's thread, where the counters and the profiler must be."""
        if action == "counts":
            shared["counts"] = counts()
        elif action in ("bytes", "calls"):
            timer = timer_bytes if action == "bytes" else timer_calls
            ks = []
            for _ in range(5):
                first = timer()
                ks.append(timer() - first)  # (not -timer() + timer(): the minus allocates)
            shared["k"] = min(ks)
            shared["prof"] = profile = cProfile.Profile(timer, 1.0)
            profile.enable()
        elif action == "stop":
            shared["prof"].disable()
        elif action == "fresh":
            shared["fresh"] = {}
            sys.setprofile(first_resumes)
        elif action == "fresh-stop":
            sys.setprofile(None)

    async def handler(ctx):
        path = ctx.request.path
        if path == "/dynamic":  # as in benchmarks/apps/pyweb_app.py: computed per request
            shared["counter"] += 1
            return Response(200, html, page.render(shared["counter"]))
        if path.startswith("/_bench/"):
            control(path[8:])
            return Response(200, [("Content-Type", "text/plain")], b"ok")
        return await site(ctx)

    # How a request finds the server decides what it costs: already in the socket buffer
    # when the server has sent the previous reply (one recv), or not yet (a failed recv,
    # then the connection waits: the choice of pyweb/server/trio/connection.py, an epoll
    # registration). A client that sends the next request only after reading the reply
    # (the other benchmarks) gets either, depending on thread timing; so both are forced.
    modes = FLOOR_MODES
    targets = ["/hello", "/dynamic"]
    totals: dict[tuple[str, str, bool], tuple[float, float]] = {}

    def session(log: str | None) -> None:
        with pyweb.testing.serve(handler, error_log=None, access_log=log) as client:
            port = client.server.port

            def run(action: str) -> None:
                keepalive_client(port, f"/_bench/{action}", 1)

            def exact(target: str, mode: str) -> tuple[float, float]:
                run("counts")
                b0, c0 = shared["counts"]
                keepalive_client(port, target, n, **modes[mode])
                run("counts")
                b1, c1 = shared["counts"]
                return (b1 - b0) / n, (c1 - c0) / n

            for target in targets:
                keepalive_client(port, target, 200)  # warm up (imports, caches, specialisation)
            run("counts")
            e0 = shared["counts"]
            run("counts")
            e1 = shared["counts"]
            empty = (e1[0] - e0[0], e1[1] - e0[1])  # what the control requests themselves cost
            for target in targets:
                for mode in modes:
                    rounds = [exact(target, mode) for _ in range(5)]
                    rounds = [(b - empty[0] / n, c - empty[1] / n) for b, c in rounds]
                    b = statistics.median(r[0] for r in rounds)
                    c = statistics.median(r[1] for r in rounds)
                    totals[target, mode, log is not None] = (b, c)
                    spread = f"{min(r[0] for r in rounds):,.0f}–{max(r[0] for r in rounds):,.0f}"
                    on = "off" if log is None else "on (/dev/null)"
                    print(f"| {target} | {mode} | {on} | {b:,.0f} ({spread}) | {c:.1f} |")
            if log is not None:
                return  # the per-function tables: the measurement (log off)

            for target in targets:
                for mode in modes:
                    breakdown(run, port, target, mode)

            # Net: what stays allocated (tracemalloc, every thread): should be ~0 per request.
            tracemalloc.start(1)
            keepalive_client(port, "/hello", 50)
            before = tracemalloc.take_snapshot()
            keepalive_client(port, "/hello", n)
            after = tracemalloc.take_snapshot()
            tracemalloc.stop()
            diff = after.compare_to(before, "lineno")
            net = sum(d.size_diff for d in diff)
            top = ", ".join(
                f"{_label((d.traceback[0].filename, d.traceback[0].lineno, ''))} {d.size_diff:+}"
                for d in diff[:3]
            )
            print(
                f"\nNet (tracemalloc, still allocated after {n} /hello): {net / n:+.1f} B/request"
            )
            print(f"(largest: {top})")

    def breakdown(run, port: int, target: str, mode: str) -> None:
        run("fresh")
        keepalive_client(port, target, n, **modes[mode])
        run("fresh-stop")
        fresh = shared["fresh"]
        codes = {}
        for obj in gc.get_objects():  # code objects by cProfile's key, for frame sizes
            code = getattr(obj, "__code__", None)
            if isinstance(code, types.CodeType):
                codes[(code.co_filename, code.co_firstlineno, code.co_name)] = code
        for code in fresh:
            codes[(code.co_filename, code.co_firstlineno, code.co_name)] = code
        own = {}
        for what in ("bytes", "calls"):
            run(what)
            keepalive_client(port, target, n, **modes[mode])
            run("stop")
            stats = pstats.Stats(shared["prof"]).stats
            per_object = None if what == "bytes" else 1
            bound = _BOUND_METHOD if what == "bytes" else 1
            own[what] = _corrected(stats, shared["k"], per_object, bound, fresh, codes)
        rows = sorted(own["bytes"].items(), key=lambda kv: -kv[1])
        total_b = sum(own["bytes"].values()) / n
        total_c = sum(own["calls"].values()) / n
        print(
            f"\n### {target}, {mode}: top {TOP} functions by the bytes they allocate themselves\n"
        )
        print("| bytes/request | allocations/request | function |")
        print("|---:|---:|---|")
        for key, b in rows[:TOP]:
            c = own["calls"].get(key, 0.0)
            print(f"| {b / n:,.0f} | {c / n:.1f} | `{_label(key)}` |")
        rest = sum(b for _, b in rows[TOP:]) / n
        rest_c = sum(own["calls"].get(k, 0.0) for k, _ in rows[TOP:]) / n
        print(f"| {rest:,.0f} | {rest_c:.1f} | everything else ({len(rows) - TOP} functions) |")
        print(f"| **{total_b:,.0f}** | **{total_c:.1f}** | total, profiled and corrected |")
        exact_b, exact_c = totals[target, mode, False]
        print(f"| {exact_b:,.0f} | {exact_c:.1f} | total, exact (above) |")
        areas: dict[str, list[float]] = {}
        for key, b in rows:
            area = areas.setdefault(_area(key), [0.0, 0.0])
            area[0] += b / n
            area[1] += own["calls"].get(key, 0.0) / n
        print(f"\nThe same by area ({target}, {mode}):\n")
        print("| bytes/request | allocations/request | area |")
        print("|---:|---:|---|")
        for name, (b, c) in sorted(areas.items(), key=lambda kv: -kv[1][0]):
            if round(b):
                print(f"| {b:,.0f} | {c:.1f} | {name} |")

    print("Exact counts (allocator hook, no profiler), median of 5 rounds (min–max):\n")
    print("| page | next request | access log | bytes/request | allocations/request |")
    print("|---|---|---|---:|---:|")
    session(os.devnull)
    session(None)  # with the per-function tables
    summary = {f"{t} {m} log={'on' if g else 'off'}": [round(b), round(c, 1)]
               for (t, m, g), (b, c) in totals.items()}  # fmt: skip
    print(json.dumps(summary))


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
    parser.add_argument(
        "--breakdown",
        type=int,
        metavar="N",
        help="only: where a request's bytes go, per function, over N requests per page "
        "(section 3b), and the floor",
    )
    args = parser.parse_args()
    if args.breakdown:
        print(f"pyweb_regions: {pyweb_regions.IMPLEMENTATION}, Python {sys.version.split()[0]}")
        bench_breakdown(args.breakdown)
        bench_floor(args.short)
        return
    soak = args.soak if args.soak is not None else (5000 if args.short else 200_000)
    print(f"pyweb_regions: {pyweb_regions.IMPLEMENTATION}, Python {sys.version.split()[0]}")
    bench_snapshots(args.short)
    bench_assembly(args.short)
    bench_read(args.short)
    bench_alloc(args.short)
    bench_floor(args.short)
    if soak:
        bench_soak(soak)


if __name__ == "__main__":
    main()
