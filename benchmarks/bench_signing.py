"""What one signature costs: OpenSSL's HMAC keyed per call, or a copy of one keyed once.

pyweb's signer (``pyweb.signing``: session cookies, CSRF cookies) makes each HMAC from a
copy of an ``hmac.HMAC`` object keyed once per key. The way before it, ``hmac.digest(key,
value, sha1)``, keys OpenSSL's HMAC on every call. On a server a signature follows other
work (a page's database query) that has pushed OpenSSL's tables out of the processor's
caches, so this times each way right after a query: ``select 1`` on PostgreSQL at
127.0.0.1:5432 (database ``test``) with asyncpg, the two ways alternating, and prints the
median µs of each, then the same with no query in between (the caches warm).

Usage: .venv/bin/python benchmarks/bench_signing.py [--n 6000]
Instructions instead of time: ``valgrind --tool=callgrind`` around ``--count N --way
keyed|digest``, with two values of N (the difference divided by the difference of N).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import hmac
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pyweb.signing import _KeyedHMAC  # noqa: E402

KEY = bytes(range(20))  # as long as a derived key (SHA-1's 20 bytes)
TOKEN = b"TaAS-zNXu8Inj_OHUDg9DQZ85zN2x_krIxS6fU9IJmA"  # a CSRF token's length


def ways() -> dict[str, Callable[[], bytes]]:
    signer = _KeyedHMAC(hashlib.sha1)  # pyweb's own, as its signers use it

    def keyed() -> bytes:
        return signer.get_signature(KEY, TOKEN)

    def digest() -> bytes:  # the way before it
        return hmac.digest(KEY, TOKEN, hashlib.sha1)

    assert keyed() == digest()
    return {"keyed": keyed, "digest": digest}


async def timed(n: int, query: bool) -> dict[str, float]:
    import asyncpg

    connection = await asyncpg.connect(
        host="127.0.0.1", port=5432, user="postgres", database="test"
    )
    try:
        found = ways()
        names = list(found)
        times: dict[str, list[int]] = {name: [] for name in names}
        for i in range(n):
            name = names[i % len(names)]
            if query:
                await connection.fetch("select 1")
            start = time.perf_counter_ns()
            found[name]()
            times[name].append(time.perf_counter_ns() - start)
        return {name: statistics.median(ns) / 1000 for name, ns in times.items()}
    finally:
        await connection.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=6000, help="signatures timed, both ways")
    parser.add_argument("--count", type=int, help="only sign COUNT times (for callgrind)")
    parser.add_argument("--way", choices=["keyed", "digest"], default="keyed")
    args = parser.parse_args()
    if args.count is not None:
        sign = ways()[args.way]
        for _ in range(args.count):
            sign()
        return
    for query in (True, False):
        result = asyncio.run(timed(args.n, query))
        when = "right after a query" if query else "one after another"
        cells = ", ".join(f"{name} {us:.2f} µs" for name, us in result.items())
        print(f"median signature, {when}: {cells}")


if __name__ == "__main__":
    main()
