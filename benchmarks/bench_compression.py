"""What compression costs per response size, beside the same page uncompressed (wrk, one
server, the same run).

One ``pyweb serve`` (pinned to CPU 0, access log off) serves pages of 1 KiB, 10 KiB,
100 KiB and 1 MiB of HTML (table rows, as a real page compresses) and ``hello.py``. wrk
(CPU 1, 50 keep-alive connections) asks for each page three ways, in interleaved rounds:
without ``Accept-Encoding`` (the page as it is: the baseline), with ``gzip``, and with
``br``; the medians are reported as requests/s, as a ratio to the uncompressed page of the
same size, and with the bytes each answer puts on the wire. ``page-hello`` is asked with
and without ``Accept-Encoding`` too: a body under ``compress_min_size`` must cost nothing.

``--cpu`` measures instead what each encoder costs in CPU time (``time.thread_time``, which
a busy machine disturbs far less than wall time) inside a page of a running server, where
its malloc setting holds (``pyweb.server.budget.give_big_buffers_back``): gzip 6 and brotli
at qualities 1 to 5, per size. It is what chose ``BROTLI_QUALITY`` and ``BROTLI_FROM``
(``pyweb.app.compression``).

Usage: .venv/bin/python benchmarks/bench_compression.py [--seconds 5] [--rounds 3]
       [--sizes 1024,10240,102400,1048576] [--short] [--cpu]
"""

from __future__ import annotations

import argparse
import gzip
import http.client
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import peers  # noqa: E402 - RunningServer, run_wrk, Scenario

BODIES = (
    "ROW = '<tr><td class=\"name\">Item %d</td><td>%d</td><td><a href=\"/item/%d\">view</a></td></tr>\\n'\n"
    "BODIES = {{size: ''.join(ROW % (i, i * 7, i) for i in range(size // 60 + 1))[:size]\n"
    "          for size in {sizes!r}}}\n"
)
"""A library module of the site: the pages' bodies, made once when it is imported (the
pages only answer with one, so what is measured is the answer, not the making)."""


def site_files(sizes: list[int]) -> dict[str, str]:
    files = {"hello.py": "conn.return_('Hello, world!')\n", "_bodies.py": BODIES.format(sizes=sizes)}
    for size in sizes:
        files[f"p{size}.py"] = f"from _bodies import BODIES\nconn.return_(BODIES[{size}])\n"
    return files


CPU_PAGE = """
import gzip, time
import brotli
from _bodies import BODIES
lines = []
for size, data in BODIES.items():
    data = data.encode()
    window = max(10, min(22, (size - 1).bit_length()))
    coders = [("gzip 6", lambda: gzip.compress(data, 6, mtime=0))] + [
        (f"br {q}", lambda q=q: brotli.compress(data, quality=q, lgwin=window)) for q in (1, 2, 3, 4, 5)]
    for name, code in coders:
        n = max(3, 200_000 // size)
        best = min(_time(code, n) for _ in range(3))
        lines.append(f"{size} {name} {best * 1e6:.0f} {len(code())}")
conn.return_("\\n".join(lines), content_type="text/plain")
"""
CPU_HELPER = """
import time
def _time(code, n):
    start = time.thread_time()
    for _ in range(n):
        code()
    return (time.thread_time() - start) / n
"""


def cpu_table(port: int) -> int:
    """Print the encoders' CPU time per call, measured by a page of the server."""
    conn = http.client.HTTPConnection(peers.HOST, port, timeout=600)
    conn.request("GET", "/cpu")
    text = conn.getresponse().read().decode()
    conn.close()
    print("CPU time per call inside the server's page (time.thread_time, best of 3)")
    print(f"{'size':>9} {'coder':<7} {'µs':>8} {'bytes':>9}")
    for line in text.splitlines():
        size, coder, q, micros, length = line.split()
        print(f"{int(size):>9,} {coder + ' ' + q:<7} {int(micros):>8,} {int(length):>9,}")
    return 0


def wire_size(port: int, path: str, coding: str | None) -> tuple[int, str]:
    """The body bytes one answer carries, and its Content-Encoding ("" for none)."""
    conn = http.client.HTTPConnection(peers.HOST, port, timeout=30)
    conn.request("GET", path, headers={"Accept-Encoding": coding} if coding else {})
    response = conn.getresponse()
    body = response.read()
    got = response.getheader("content-encoding", "")
    conn.close()
    if got == "gzip":
        gzip.decompress(body)  # (a body that does not decode would make the numbers void)
    return len(body), got


def scenarios(sizes: list[int]) -> list[tuple[str, str, str | None, peers.Scenario]]:
    """(page, coding name, Accept-Encoding, scenario) for each measurement."""
    found = []
    for page, path in [("page-hello", "/hello"), *((f"{s // 1024} KiB", f"/p{s}") for s in sizes)]:
        for name, header in (("none", None), ("gzip", "gzip"), ("br", "br")):
            if page == "page-hello" and name == "br":
                continue  # (one coding shows it: the body is under the threshold)
            args = ("-H", f"Accept-Encoding: {header}") if header else ()
            found.append((page, name, header, peers.Scenario(f"{page} {name}", page, path, -1, args)))
    return found


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seconds", type=int, default=5)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--sizes", default="1024,10240,102400,1048576")
    p.add_argument("--short", action="store_true", help="1 round of 1 s (CI)")
    p.add_argument("--cpu", action="store_true", help="the encoders' CPU time in the server")
    args = p.parse_args(argv)
    if args.short:
        args.seconds, args.rounds = 1, 1
    sizes = [int(s) for s in args.sizes.split(",")]
    peers.ensure_wrk()
    kinds = scenarios(sizes)
    with tempfile.TemporaryDirectory(prefix="pyweb-bench-compression-") as tmp:
        site = Path(tmp) / "site"
        site.mkdir()
        for name, text in site_files(sizes).items():
            (site / name).write_text(text)
        (site / "cpu.py").write_text("from _timing import _time\n" + CPU_PAGE)
        (site / "_timing.py").write_text(CPU_HELPER)
        command = [sys.executable, "-m", "pyweb", "serve", str(site), "--port", "{port}",
                   "--access-log", "none", "--page-timeout", "600"]  # fmt: skip
        server = peers.RunningServer("pyweb", "0", tmp, Path(tmp) / "server.log",
                                     command=command, cwd=peers.ROOT)  # fmt: skip
        try:
            server.wait_ready()
            if args.cpu:
                return cpu_table(server.port)
            wire = {sc.name: wire_size(server.port, sc.path, header) for _, _, header, sc in kinds}
            rps: dict[str, list[float]] = {sc.name: [] for *_, sc in kinds}
            for _ in range(args.rounds):
                for *_, sc in kinds:
                    peers.run_wrk("1", server.port, sc, 1)  # warm-up
                    result, output = peers.run_wrk("1", server.port, sc, args.seconds)
                    if result.get("non2xx") or "rps" not in result:
                        print(f"{sc.name}: bad answers\n{output}", file=sys.stderr)
                        return 1
                    rps[sc.name].append(float(result["rps"]))
        finally:
            server.stop()
    print(f"compression: median of {args.rounds} x {args.seconds} s (wrk -c50, server on 1 core)")
    print(f"{'page':<11} {'coding':<6} {'requests/s':>11} {'vs none':>8} {'µs/request':>11} "
          f"{'bytes sent':>11} {'encoding':>9}")  # fmt: skip
    for page, name, _, sc in kinds:
        median = statistics.median(rps[sc.name]) or float("nan")  # (none done in time)
        base = statistics.median(rps[f"{page} none"])
        size, got = wire[sc.name]
        print(f"{page:<11} {name:<6} {median:>11,.0f} {median / base:>7.2f}x {1e6 / median:>11.1f} "
              f"{size:>11,} {got or '-':>9}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
