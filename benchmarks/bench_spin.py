"""What a microsecond of Python on the request path costs a server under the peers' load.

In-process, looping over one request, pyweb's page layer costs about 3 µs around a hello
page (``bench_page_stages.py``). Measured from outside, as the peer comparison measures
(one server process on one core, ``wrk -t1 -c32`` on the other), the same page layer adds
about three times that to the server's CPU per request. Is that the page layer's own
memory footprint (its code and objects pushed out of the processor's caches between two
requests), or does any work on the path cost more in a loaded server than in a loop?

This separates the two. pyweb's server with a handler below the page layer
(``apps/pyweb_handler.py``, with ``BENCH_TIMINGS=1``) answers ``/spin?n=N`` with /hello's
text after an empty loop of N turns: work that allocates nothing, touches no memory and
makes no system call; and ``/page/hello`` through the site (the example's hello page: the
page layer). For each:

* **in-process**: the loop's time here, pinned to the server's core (``timeit``, best of
  5); for the page, the site's time looped in-process (``bench_page_stages.py``'s whole);
* **timed in the server**: the same work timed inside the server under load
  (``perf_counter_ns`` around the loop, or around ``await site(ctx)``; ``/timings``);
* **server CPU per request**: the server's user and system time from ``/proc`` under wrk,
  divided by the requests wrk counted; ``extra`` is its rise over 0 turns.

If a microsecond in-process cost a microsecond in the server, ``extra / in-process`` would
be 1. Measured, never asserted; rounds interleaved, each server started fresh per round,
medians.

Run:  .venv/bin/python benchmarks/bench_spin.py [--rounds 3] [--duration 2]
          [--spins 0,1000,2000,4000] [--loops trio,asyncio]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import sys
import tempfile
import timeit
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import peers  # noqa: E402 - wrk, pinning, CPU samples, servers in their own process group

SERVERS = {"trio": "pyweb-handler", "asyncio": "pyweb-asyncio-handler"}


def loop_us(turns: int, cpu: str | None) -> float:
    """µs of ``for _ in repeat(None, turns): pass`` in this process, on the server's core."""
    pin = cpu is not None and hasattr(os, "sched_setaffinity")
    if pin:
        allowed = os.sched_getaffinity(0)
        os.sched_setaffinity(0, {int(cpu)})  # type: ignore[arg-type]
    try:
        # The handler's loop: N times None, no object made per turn.
        timer = timeit.Timer("for _ in repeat(None, turns): pass",
                             globals={"repeat": itertools.repeat, "turns": turns})  # fmt: skip
        number = 20_000
        return min(timer.repeat(5, number)) / number * 1e6
    finally:
        if pin:
            os.sched_setaffinity(0, allowed)


PAGE = peers.Scenario("page", "the hello page", "/page/hello", -1)
"""The example site's ``pages/hello.py`` through the site: the page layer, for comparison.
Its reply is larger than /spin's (the page's 428 bytes with the site's security headers,
against 13), and what that costs the server is part of its ``extra``."""


def scenario(turns: int) -> peers.Scenario:
    return peers.Scenario(f"spin-{turns}", f"{turns} turns", f"/spin?n={turns}", len(b"Hello, world!"))


def in_server(port: int) -> dict[str, float]:
    """The handler's timings since the last ask: mean ns of the loop and of the site."""
    with urllib.request.urlopen(f"http://{peers.HOST}:{port}/timings", timeout=5) as reply:
        return dict(json.loads(reply.read()))


def page_layer_us(loop: str, n: int) -> float:
    """µs of the hello page through the site, looped in-process (bench_page_stages.py)."""
    import bench_page_stages

    raw = bench_page_stages.run_loop(loop, ["page-hello"], n, False)["page-hello"]
    return (raw["whole"] - raw["empty"]) * 1e6


Cells = dict[tuple[str, str], list[tuple[float, float]]]
"""(loop, scenario) -> per round: (the server's CPU µs per request, µs timed inside it)."""


def measure(args: argparse.Namespace, site: str, logs: Path) -> Cells:
    cells: Cells = {}
    scenarios = [scenario(turns) for turns in args.spins] + [PAGE]
    for rnd in range(1, args.rounds + 1):
        for loop in args.loops:
            name = SERVERS[loop]
            server = peers.RunningServer(name, args.server_cpu, site, logs / f"{name}-{rnd}.log",
                                         env={"BENCH_TIMINGS": "1"})  # fmt: skip
            try:
                server.wait_ready()
                for sc in scenarios:
                    in_server(server.port)  # start the timings afresh
                    m = peers.measure(args, rnd, server, sc)
                    if not m.ok or m.errors or m.non2xx:
                        raise RuntimeError(f"{loop} {sc.path}: {m.problem or 'errors'}")
                    timed = in_server(server.port)
                    span = timed.get("site" if sc is PAGE else "spin", 0.0) / 1000
                    cells.setdefault((loop, sc.name), []).append((peers.cpu_per_request(m), span))
            finally:
                server.stop()
    return cells


def table(args: argparse.Namespace, in_process: dict[tuple[str, str], float], cells: Cells) -> str:
    lines = [
        "| loop | work | in-process, µs | timed in the server, µs | server CPU per request, µs | extra over 0 turns, µs | extra / in-process |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]  # fmt: skip
    names = [scenario(turns).name for turns in args.spins] + [PAGE.name]
    for loop in args.loops:
        base = statistics.median(cpu for cpu, _ in cells[(loop, names[0])])
        for sc in names:
            cpu = statistics.median(c for c, _ in cells[(loop, sc)])
            timed = statistics.median(t for _, t in cells[(loop, sc)])
            spent = in_process[(loop, sc)] - (0.0 if sc == PAGE.name else in_process[(loop, names[0])])
            extra = cpu - base
            slope = f"{extra / spent:.1f}" if sc != names[0] and spent > 0.2 else "–"
            work = "the hello page's layer" if sc == PAGE.name else f"{sc.removeprefix('spin-')} turns"
            lines.append(
                f"| {loop} | {work} | {in_process[(loop, sc)]:.2f} | {timed:.2f} | {cpu:.1f} | "
                f"{extra:+.1f} | {slope} |"
            )
    return "\n".join(lines)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--duration", type=int, default=2, help="seconds of wrk per cell")
    parser.add_argument("--warmup", type=int, default=1, help="seconds of wrk before each cell")
    parser.add_argument("--spins", default="0,1000,2000,4000",
                        help="turns of the empty loop, comma-separated, the first the baseline")  # fmt: skip
    parser.add_argument("--loops", default="trio,asyncio")
    parser.add_argument("--page-n", type=int, default=5000,
                        help="requests per round of the in-process page loop")  # fmt: skip
    peers.add_core_arguments(parser)
    args = parser.parse_args()
    args.spins = [int(s) for s in args.spins.split(",")]
    args.loops = args.loops.split(",")
    peers.unpinned_on_one_core(args)
    return args


def main() -> int:
    args = parse_args()
    peers.ensure_wrk()
    # The empty loop is the same on either event loop: timed once, given to both.
    spins = {scenario(turns).name: loop_us(turns, args.server_cpu) for turns in args.spins}
    in_process = {(loop, name): us for loop in args.loops for name, us in spins.items()}
    for loop in args.loops:
        in_process[(loop, PAGE.name)] = page_layer_us(loop, args.page_n)
    with tempfile.TemporaryDirectory(prefix="pyweb-spin-") as tmp:
        site, logs = Path(tmp) / "site", Path(tmp) / "logs"
        site.mkdir()
        logs.mkdir()
        (site / "static.html").write_bytes(peers.page.render(0))  # the handler's static file
        try:
            cells = measure(args, str(site), logs)
        except (peers.ServerFailed, RuntimeError) as exc:
            print(f"failed: {exc}", file=sys.stderr)
            return 1
    print()
    print(table(args, in_process, cells))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
