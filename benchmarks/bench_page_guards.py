"""What the first-hour guards add to every page, per request (same run, in-process).

A page runs inside these guards (pyweb/app/runner.py ``run_in_guards``, pyweb/app/guards/): the blocking-code
watchdog, which a page finds (``blocking.current()``: the watchdog its task remembers) and
keeps on its ``conn`` (the watchdog's thread finds the page on the stack, so nothing is
registered per request), the page deadline (a trio cancel scope, for pages that await
only), and the SystemExit/KeyboardInterrupt handler (a try block: free). The
forgotten-await check costs nothing per request (a dropped coroutine is noted on the
page's conn; docs/performance.md). This times each guard alone in a loop on trio, then a whole keep-alive request to pages/hello.py over a real socket for
scale. Instruction counts of every stage of the page layer: bench_page_stages.py.

Usage: .venv/bin/python benchmarks/bench_page_guards.py [--n 200000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

import trio

from pyweb.app import blocking

ROOT = Path(__file__).resolve().parent.parent


async def guards(n: int) -> dict[str, float]:
    current = blocking.current
    current()  # the first lookup of a task starts the watchdog and remembers it
    results: dict[str, list[float]] = {"empty loop": [], "watchdog lookup": [],
                                       "deadline scope": []}  # fmt: skip
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(n):
            pass
        results["empty loop"].append(time.perf_counter() - t)
        t = time.perf_counter()
        for _ in range(n):
            current()
        results["watchdog lookup"].append(time.perf_counter() - t)
        t = time.perf_counter()
        for _ in range(n):
            with trio.move_on_after(30):
                pass
        results["deadline scope"].append(time.perf_counter() - t)
    empty = statistics.median(results.pop("empty loop")) / n
    return {k: statistics.median(v) / n - empty for k, v in results.items()}


def request_time(n: int) -> float:
    """Seconds per keep-alive request to /hello (http.client: it reads each response whole
    and opens a new connection when the server ends one)."""
    import http.client

    import pyweb.testing

    with pyweb.testing.serve(ROOT / "pages") as client:
        connection = http.client.HTTPConnection("127.0.0.1", client.server.port)

        def get() -> None:
            connection.request("GET", "/hello")
            connection.getresponse().read()

        for _ in range(200):
            get()
        times = []
        for _ in range(5):
            t = time.perf_counter()
            for _ in range(n):
                get()
            times.append((time.perf_counter() - t) / n)
        connection.close()
    return statistics.median(times)


def main() -> None:
    # pages/ posts forms, so it needs a key: one for the benchmark only
    os.environ.setdefault("PYWEB_SECRET_KEY", "bench-only-key-0123456789abcdef0123456789")
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
