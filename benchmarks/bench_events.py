"""Reproduce CML's Tables 3-5 (Reppy 1991, §5) for pyweb.events on trio.

Run:  .venv/bin/python benchmarks/bench_events.py [--n 20000] [--runs 7]

Table 3: null call, task switch, task spawn/exit, rendezvous (``ch.send`` /
``ch.recv``), event rendezvous (``sync(ch.send_evt(v))`` /
``sync(ch.recv_evt())``), and trio's own memory channel with buffer 0 as the
baseline in the same run.  Table 4: a memory-cell service (a transaction sets
a new value and returns the old one) as a function call, RPC over two
channels, event RPC (``wrap(transmit(reqCh, x), fn () => accept replyCh)``),
pyweb's ``RPC`` class (reply as the commit point, with a nack), and trio
memory channels.  Table 5: the event : non-event ratios beside the paper's.

Each figure is the median over several runs of (elapsed / operations), with
time.perf_counter.  Measured, not asserted.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pyweb.events import RPC, Channel, select, sync, wrap  # noqa: E402

PAPER_RATIOS = {"rendezvous": "1.62-1.73 : 1", "rpc": "1.25-1.27 : 1"}


def measure(
    benches: dict[str, tuple[Callable[[int], object], int]], runs: int
) -> dict[str, list[float]]:
    """µs per operation of each benchmark, one sample per run.

    The benchmarks are interleaved (one round runs each once) so that a
    change in machine load affects all of them alike; ratios are then taken
    round by round (paired) before the median.
    """
    samples: dict[str, list[float]] = {name: [] for name in benches}
    for _ in range(runs):
        for name, (fn, n) in benches.items():
            t0 = time.perf_counter()
            fn(n)
            samples[name].append((time.perf_counter() - t0) / n * 1e6)
    return samples


def ratio(samples: dict[str, list[float]], a: str, b: str) -> float:
    return statistics.median(x / y for x, y in zip(samples[a], samples[b], strict=True))


# ------------------------------------------------------------------ Table 3


def null_call(n: int) -> None:
    def f() -> None:
        pass

    for _ in range(n):
        f()


def task_switch(n: int) -> None:
    # Two tasks each yielding n/2 times: n switches in all.
    async def spinner(k: int) -> None:
        for _ in range(k):
            await trio.lowlevel.cancel_shielded_checkpoint()

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(spinner, n // 2)
            nursery.start_soon(spinner, n // 2)

    trio.run(main)


def spawn_exit(n: int) -> None:
    async def null() -> None:
        pass

    async def main() -> None:
        for _ in range(n // 100):
            async with trio.open_nursery() as nursery:
                for _ in range(100):
                    nursery.start_soon(null)

    trio.run(main)


def rendezvous_channel(n: int) -> None:
    ch: Channel[int] = Channel()

    async def sender() -> None:
        for i in range(n):
            await ch.send(i)

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(sender)
            for _ in range(n):
                await ch.recv()

    trio.run(main)


def rendezvous_event(n: int) -> None:
    ch: Channel[int] = Channel()

    async def sender() -> None:
        for i in range(n):
            await sync(ch.send_evt(i))

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(sender)
            for _ in range(n):
                await sync(ch.recv_evt())

    trio.run(main)


def rendezvous_select(n: int) -> None:
    # Beyond the paper's table: the receiver chooses between two channels.
    a: Channel[int] = Channel()
    b: Channel[int] = Channel()

    async def sender() -> None:
        for i in range(n):
            await a.send(i)

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(sender)
            for _ in range(n):
                await select(a.recv_evt(), b.recv_evt())

    trio.run(main)


def rendezvous_trio(n: int) -> None:
    async def main() -> None:
        send, recv = trio.open_memory_channel[int](0)

        async def sender() -> None:
            for i in range(n):
                await send.send(i)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(sender)
            for _ in range(n):
                await recv.receive()

    trio.run(main)


# ------------------------------------------------------------------ Table 4


def cell_function(n: int) -> None:
    state = [0]

    def swap(x: int) -> int:
        old, state[0] = state[0], x
        return old

    for i in range(n):
        swap(i)


def _serve_cell(req: Channel[int], rep: Channel[int]):
    async def server() -> None:
        cell = 0
        while True:
            x = await req.recv()
            cell, old = x, cell
            await rep.send(old)

    return server


def rpc_channel(n: int) -> None:
    req: Channel[int] = Channel()
    rep: Channel[int] = Channel()

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_serve_cell(req, rep))
            for i in range(n):
                await req.send(i)  # clientCall x = (send(reqCh, x); accept replyCh)
                await rep.recv()
            nursery.cancel_scope.cancel()

    trio.run(main)


def rpc_event(n: int) -> None:
    req: Channel[int] = Channel()
    rep: Channel[int] = Channel()

    def client_call_evt(x: int):
        # fun clientCallEvt x = wrap (transmit(reqCh, x), fn () => accept replyCh)
        return wrap(req.send_evt(x), lambda _: rep.recv())

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_serve_cell(req, rep))
            for i in range(n):
                await sync(client_call_evt(i))
            nursery.cancel_scope.cancel()

    trio.run(main)


def rpc_class(n: int) -> None:
    rpc: RPC[int, int] = RPC()
    cell = [0]

    def swap(x: int) -> int:
        old, cell[0] = cell[0], x
        return old

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(rpc.serve, swap)
            for i in range(n):
                await rpc.call(i)
            nursery.cancel_scope.cancel()

    trio.run(main)


def rpc_trio(n: int) -> None:
    async def main() -> None:
        req_s, req_r = trio.open_memory_channel[int](0)
        rep_s, rep_r = trio.open_memory_channel[int](0)

        async def server() -> None:
            cell = 0
            async for x in req_r:
                cell, old = x, cell
                await rep_s.send(old)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(server)
            for i in range(n):
                await req_s.send(i)
                await rep_r.receive()
            nursery.cancel_scope.cancel()

    trio.run(main)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20000, help="operations per run")
    parser.add_argument("--runs", type=int, default=7, help="runs per figure (median)")
    args = parser.parse_args()
    n, runs = args.n, args.runs

    t3_names = {
        "Null function call": (null_call, n * 10),
        "Task switch (checkpoint)": (task_switch, n),
        "Task spawn/exit": (spawn_exit, n),
        "Rendezvous (ch.send/ch.recv)": (rendezvous_channel, n),
        "Event rendezvous (sync send_evt/recv_evt)": (rendezvous_event, n),
        "trio memory channel (buffer 0)": (rendezvous_trio, n),
        "select(a.recv_evt(), b.recv_evt()) rendezvous": (rendezvous_select, n),
    }
    t4_names = {
        "Function call": (cell_function, n * 10),
        "RPC (send; recv)": (rpc_channel, n),
        "Event RPC (wrap(send_evt, recv))": (rpc_event, n),
        "RPC class (commit at reply, nack)": (rpc_class, n),
        "trio memory channels RPC": (rpc_trio, n),
    }
    samples = measure({**t3_names, **t4_names}, runs)
    us = {name: statistics.median(values) for name, values in samples.items()}

    print(
        f"pyweb.events benchmarks: Python {sys.version.split()[0]}, trio {trio.__version__}, "
        f"n={n}, median of {runs} interleaved runs\n"
    )
    print("Table 3: basic concurrency operations")
    for name in t3_names:
        print(f"  {name:<44} {us[name]:8.2f} µs")
    print("\nTable 4: memory-cell service")
    for name in t4_names:
        print(f"  {name:<44} {us[name]:8.2f} µs")

    ev_rz, ch_rz = "Event rendezvous (sync send_evt/recv_evt)", "Rendezvous (ch.send/ch.recv)"
    trio_rz, trio_rpc = "trio memory channel (buffer 0)", "trio memory channels RPC"
    ev_rpc, ch_rpc = "Event RPC (wrap(send_evt, recv))", "RPC (send; recv)"
    rpc_cls = "RPC class (commit at reply, nack)"
    print("\nTable 5: cost of abstraction (event : non-event), median of paired ratios")
    print(f"  {'':<44} {'pyweb':>8}   paper")
    rows = [
        ("Rendezvous (event : ch.send/recv)", ev_rz, ch_rz, PAPER_RATIOS["rendezvous"]),
        ("RPC (event RPC : RPC)", ev_rpc, ch_rpc, PAPER_RATIOS["rpc"]),
    ]
    for label, a, b, paper in rows:
        print(f"  {label:<44} {ratio(samples, a, b):8.2f}   {paper}")
    print("\nAgainst trio's memory channel (target: event rendezvous <= 1.7x)")
    rows2 = [
        ("event rendezvous : trio rendezvous", ev_rz, trio_rz),
        ("ch.send/recv rendezvous : trio rendezvous", ch_rz, trio_rz),
        ("select of 2 : trio rendezvous", "select(a.recv_evt(), b.recv_evt()) rendezvous", trio_rz),
        ("event RPC : trio RPC", ev_rpc, trio_rpc),
        ("RPC class : trio RPC", rpc_cls, trio_rpc),
    ]
    for label, a, b in rows2:
        print(f"  {label:<44} {ratio(samples, a, b):8.2f}")


if __name__ == "__main__":
    main()
