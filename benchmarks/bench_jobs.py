"""What scheduled jobs and work after the reply cost, in-process, on trio and on asyncio.

Two measurements:

* ``conn.after`` per request, beside ``page-hello``: ``await site(ctx)`` for the example
  site's ``pages/hello.py`` and for the same page with one ``conn.after(noop)`` before its
  answer, then the server's part (``ctx.after_reply(200)``: the work handed to the loop,
  and run). The difference is what a page pays for handing work over;
* the scheduler's overhead per due job: :meth:`pyweb.jobs.Scheduler.fire` for a job that
  does nothing, with the lease and the record in ``data/jobs.json`` (the in-memory cache)
  and in Redis (``--redis URL``, skipped when Redis does not answer), and with the lease
  already taken (what every other worker pays for a due job).

Wall clock, the median of ``--rounds`` rounds of ``--n`` calls each, in µs per call, and
beside each its ratio to ``page-hello`` measured in the same run on the same loop (what
a due job or a handed-over piece of work costs counted in hello pages): on a shared
machine compare ratios of one run, not runs.

Usage: .venv/bin/python benchmarks/bench_jobs.py [--loop trio|asyncio|both] [--n 5000]
           [--rounds 5] [--redis redis://127.0.0.1:6379/0]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import trio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pyweb.app import after  # noqa: E402
from pyweb.jobs import Every, FileStore, Job, RedisStore, Scheduler  # noqa: E402
from pyweb.protocol.parser import RequestParser  # noqa: E402

HELLO = (ROOT / "pages" / "hello.py").read_text()


class Ctx:
    """The handler contract without a server, with the server's hook for ``conn.after``."""

    __slots__ = ("request", "peer", "scheme", "dev", "received_at", "alloc", "after_reply")

    def __init__(self, request: Any) -> None:
        self.request = request
        self.peer = "127.0.0.1:50000"
        self.scheme = "http"
        self.dev = False
        self.received_at = 0.0
        self.alloc = None
        self.after_reply: Callable[[int], None] = lambda status: None

    server_port = 8000

    async def body(self, copies: int = 1) -> bytes:
        return b""

    def log_error(self, message: str, exc: BaseException | None = None) -> None:
        print("page error:", message, file=sys.stderr)


def parse(target: str) -> Any:
    parser = RequestParser()
    parser.feed(f"GET {target} HTTP/1.1\r\nHost: bench\r\n\r\n".encode())
    return parser.next_event()


def make_site(directory: Path) -> Any:
    from pyweb.app.site import Site

    (directory / "hello.py").write_text(HELLO)
    (directory / "hello_after.py").write_text(
        "async def noop():\n    pass\n\nconn.after(noop)\n" + HELLO
    )
    return Site(directory, secret_key="bench-only-key-not-secret")


async def _yield(loop: str) -> None:
    if loop == "trio":
        await trio.lowlevel.checkpoint()
    else:
        await asyncio.sleep(0)


async def timed(call: Callable[[], Awaitable[Any]], n: int, rounds: int, loop: str) -> float:
    """µs per call: the median of ``rounds`` rounds of ``n`` calls."""
    for _ in range(min(n, 200)):
        await call()
    per = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(n):
            await call()
            await _yield(loop)  # as a server waits on its socket: the work handed over runs
        per.append((time.perf_counter() - start) / n * 1e6)
        await _yield(loop)
    return statistics.median(per)


async def measure(loop: str, n: int, rounds: int, redis: str | None) -> dict[str, float]:
    results: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        site = make_site(Path(tmp))
        plain = parse("/hello")
        handed = parse("/hello_after")

        async def page_hello() -> None:
            await site(Ctx(plain))

        async def page_hello_after() -> None:
            ctx = Ctx(handed)
            response = await site(ctx)
            ctx.after_reply(response.status)  # what the server does after the reply

        results["page-hello"] = await timed(page_hello, n, rounds, loop)
        results["page-hello + conn.after"] = await timed(page_hello_after, n, rounds, loop)
        await after.WORK.drain(5.0)

        async def nothing() -> None:
            pass

        job = Job("bench", Every(1), nothing)
        stores: list[tuple[str, Any]] = [("data/jobs.json", FileStore(tmp))]
        if redis is not None:
            stores.append(("redis", RedisStore(redis, f"bench-{uuid.uuid4().hex[:8]}")))
        for name, store in stores:
            scheduler = Scheduler([job], store)
            due = iter(range(10**9))

            async def fire(scheduler: Scheduler = scheduler, due: Any = due) -> None:
                await scheduler.fire(job, float(next(due)))

            async def lost(scheduler: Scheduler = scheduler) -> None:
                await scheduler.fire(job, 0.0)  # taken already: another worker's case

            await scheduler.fire(job, 0.0)
            results[f"due job ({name})"] = await timed(fire, max(n // 10, 50), rounds, loop)
            results[f"due job, lease taken ({name})"] = await timed(lost, max(n // 10, 50), rounds, loop)
            if isinstance(store, RedisStore):  # the shared Redis keeps none of the run's keys
                cursor = b"0"
                while True:
                    cursor, keys = await store._call("SCAN", cursor, "MATCH", store.base + "*")
                    if keys:
                        await store._call("UNLINK", *keys)
                    if cursor == b"0":
                        break
            store.close()
    return results


def run(loop: str, n: int, rounds: int, redis: str | None) -> dict[str, float]:
    if loop == "trio":
        return trio.run(measure, loop, n, rounds, redis)
    return asyncio.run(measure(loop, n, rounds, redis))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--loop", default="both", choices=("trio", "asyncio", "both"))
    parser.add_argument("--n", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/0")
    args = parser.parse_args()
    from pyweb.testing import reachable

    redis = args.redis if args.redis and reachable("127.0.0.1", 6379, timeout=0.5) else None
    loops = ("trio", "asyncio") if args.loop == "both" else (args.loop,)
    table = {loop: run(loop, args.n, args.rounds, redis) for loop in loops}
    print(report(table, loops))


def report(table: dict[str, dict[str, float]], loops: tuple[str, ...]) -> str:
    """Each row in µs per call and as a ratio to page-hello of the same loop and run."""
    names = list(next(iter(table.values())))
    width = max(len(name) for name in names)
    lines = [f"{'per call':<{width}}  " + "  ".join(f"{loop + ' µs':>11}  {'x hello':>7}"
                                                     for loop in loops)]  # fmt: skip
    for name in names:
        cells = []
        for loop in loops:
            value = table[loop][name]
            cells.append(f"{value:11.1f}  {value / table[loop]['page-hello']:7.2f}")
        lines.append(f"{name:<{width}}  " + "  ".join(cells))
    for loop in loops:
        extra = table[loop]["page-hello + conn.after"] - table[loop]["page-hello"]
        share = extra / table[loop]["page-hello"]
        lines.append(f"conn.after adds {extra:.1f} µs per request on {loop} "
                     f"({share:.0%} of a hello page)")  # fmt: skip
    return "\n".join(lines)


if __name__ == "__main__":
    main()
