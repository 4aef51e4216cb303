"""What the server's event-based wait for a request costs (CML §2).

An idle connection that finds no bytes (``recv`` would block) synchronizes on::

    choose(readable_evt(sock), wrap(guard(at_deadline), timed_out), port.recv_evt())

(pyweb/server/trio/connection.py). This measures one such wait against a bare
``trio.lowlevel.wait_readable`` (the server before its events, which kept its deadlines in a
watchdog task), on a socket pair: a writer task sends one byte after each checkpoint, the
reader drains the socket and, when ``recv`` would block, waits. The difference per wait is
the price of the choice: forcing the event tree, a ``poll(2)`` readiness check, a Mailbox
offer for the port and one cancel scope carrying the timer (``_core._wait_alone``).

How often a request pays it depends on load: under the peer benchmark's 50 connections,
fewer than 1 request in 100 finds its socket empty; with 2 connections about 1 in 3 (and
then the server had nothing else to do). Measured, not asserted.

Run:  .venv/bin/python benchmarks/bench_server_wait.py [--n 20000] [--runs 5]
"""

from __future__ import annotations

import argparse
import socket
import statistics
import sys
import time
from pathlib import Path

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pyweb.events import Multicast, at_time, choose, guard, readable_evt, sync, wrap  # noqa: E402


async def _pingpong(n: int, variant: str) -> float:
    a, b = socket.socketpair()
    a.setblocking(False)
    b.setblocking(False)
    port = Multicast().port()
    deadline = trio.current_time() + 3600
    evt = {
        "wait_readable": None,
        "readable_evt alone": readable_evt(a),
        "server choice": choose(
            readable_evt(a), wrap(guard(lambda: at_time(deadline)), lambda _: 1), port.recv_evt()
        ),
    }[variant]

    async def writer() -> None:
        for _ in range(n):
            await trio.sleep(0)
            b.send(b"x")

    waits = 0
    async with trio.open_nursery() as nursery:
        nursery.start_soon(writer)
        t0 = time.perf_counter()
        got = 0
        while got < n:
            try:
                got += len(a.recv(4096))
            except BlockingIOError:
                waits += 1
                if evt is None:
                    await trio.lowlevel.wait_readable(a)
                else:
                    await sync(evt)
        elapsed = time.perf_counter() - t0
    a.close()
    b.close()
    return elapsed / max(waits, 1) * 1e6


VARIANTS = ["wait_readable", "readable_evt alone", "server choice"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20000, help="bytes (round trips) per run")
    parser.add_argument("--runs", type=int, default=5, help="interleaved runs (median)")
    args = parser.parse_args()
    samples: dict[str, list[float]] = {v: [] for v in VARIANTS}
    for _ in range(args.runs):
        for variant in VARIANTS:  # interleaved: load changes hit every variant alike
            samples[variant].append(trio.run(_pingpong, args.n, variant))
    base = samples["wait_readable"]
    print(f"µs per wait (a whole round trip through trio), median of {args.runs} runs")
    print("| wait | µs | × wait_readable (paired) |")
    print("|---|---:|---:|")
    for variant in VARIANTS:
        ratio = statistics.median(x / y for x, y in zip(samples[variant], base, strict=True))
        print(f"| {variant} | {statistics.median(samples[variant]):.1f} | {ratio:.2f} |")


if __name__ == "__main__":
    main()
