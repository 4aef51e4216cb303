"""What the first-hour guards add to every page, per request (same run, in-process).

A page runs inside four guards (pyweb/app/site.py ``_run_page``): the blocking-code
watchdog's registration (a dictionary entry keyed by the page's frame), the forgotten-await
collector (a context variable), the page deadline (a trio cancel scope, for pages that
await only), and the SystemExit/KeyboardInterrupt handler (a try block: free). This times
each one alone in a loop on trio, then a whole keep-alive request to pages/hello.py over a
real socket for scale.

Usage: .venv/bin/python benchmarks/bench_page_guards.py [--n 200000]
"""

from __future__ import annotations

import argparse
import socket
import statistics
import sys
import time
from pathlib import Path

import trio

from pyweb.app import blocking, unawaited

ROOT = Path(__file__).resolve().parent.parent


async def guards(n: int) -> dict[str, float]:
    dog = blocking.watchdog()
    results: dict[str, list[float]] = {"empty loop": [], "watchdog begin/end": [],
                                       "await collector": [], "deadline scope": []}  # fmt: skip
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(n):
            pass
        results["empty loop"].append(time.perf_counter() - t)
        t = time.perf_counter()
        for _ in range(n):
            frame = sys._getframe()
            dog.begin(frame, "page", "/site")
            dog.end(frame)
        results["watchdog begin/end"].append(time.perf_counter() - t)
        t = time.perf_counter()
        for _ in range(n):
            found, token = unawaited.collecting()
            unawaited.stop_collecting(token)
        results["await collector"].append(time.perf_counter() - t)
        t = time.perf_counter()
        for _ in range(n):
            with trio.move_on_after(30):
                pass
        results["deadline scope"].append(time.perf_counter() - t)
    empty = statistics.median(results.pop("empty loop")) / n
    return {k: statistics.median(v) / n - empty for k, v in results.items()}


def request_time(n: int) -> float:
    import pyweb.testing

    with pyweb.testing.serve(ROOT / "pages") as client:
        port = client.server.port
        with socket.create_connection(("127.0.0.1", port)) as s:
            request = b"GET /hello HTTP/1.1\r\nHost: bench\r\n\r\n"
            for _ in range(200):
                s.sendall(request)
                s.recv(65536)
            times = []
            for _ in range(5):
                t = time.perf_counter()
                for _ in range(n):
                    s.sendall(request)
                    s.recv(65536)
                times.append((time.perf_counter() - t) / n)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=200_000)
    args = parser.parse_args()
    costs = trio.run(guards, args.n)
    whole = request_time(max(1000, args.n // 100))
    print(f"{'guard':<22} {'ns per request':>15} {'share of a hello request':>26}")
    for name, seconds in costs.items():
        print(f"{name:<22} {seconds * 1e9:>15.0f} {seconds / whole:>25.2%}")
    print(f"{'hello request (all)':<22} {whole * 1e9:>15.0f} {'100%':>26}")


if __name__ == "__main__":
    main()
