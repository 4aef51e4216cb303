"""An open-loop load generator: clients that arrive at a fixed rate, as httperf's do.

A closed loop (a fixed number of clients, each sending its next request when the last one
was answered) can never offer more than a server answers: a slow server just slows its
clients down. The rate sweeps of the papers (Marlow's Figure 1, Hop's Figures 6 and 7) ask
another question: clients arrive at a rate of their own, whether or not the server keeps up.
Below its capacity the reply rate follows the offered rate; past it, requests pile up, and
a good server levels off where a bad one falls over.

:func:`sweep` offers each rate in turn for a few seconds and returns one :class:`Point` per
rate: a new connection every ``calls / rate`` seconds, ``calls`` requests on it one after
the other (keep-alive, httperf's sessions), each given ``timeout`` seconds. It is small and
in Python, for notebooks and tests: it offers a few thousand requests per second at most.
``make bench-sweep`` drives httperf for the real figures.
"""

from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import h11
import trio

__all__ = ["Point", "sweep", "offer"]


@dataclass
class Point:
    """What one offered rate gave."""

    offered: float
    """Requests per second asked for (``calls`` per connection)."""
    achieved: float
    """Requests per second the generator managed to offer: below ``offered`` when it fell
    behind its schedule (a Python client shares the machine, and maybe the process, with
    the server), so a plot against it shows the server, not the client."""
    replies_per_s: float
    """Replies received per second of the run (from the first connection to the last reply)."""
    replies: int
    """Complete replies, whatever their status (httperf's count)."""
    ok: int
    """Replies with a 2xx status: the pages served (a 503 of a full server is a reply too)."""
    errors: int
    """Requests that failed: no reply within the timeout, a refused or reset connection."""
    median_ms: float | None
    """The median time from sending a request to the end of its reply (None: no reply)."""
    elapsed: float = 0.0
    """Seconds from the first connection to the last reply (at least the offered time)."""
    times_ms: list[float] = field(default_factory=list, repr=False)

    @property
    def ok_per_s(self) -> float:
        """Pages served (2xx replies) per second of the run."""
        return self.ok / self.elapsed if self.elapsed else 0.0


@dataclass
class _Tally:
    replies: int = 0
    ok: int = 0
    errors: int = 0
    last: float = 0.0
    times: list[float] = field(default_factory=list)


async def _exchange(stream: trio.SocketStream, conn: h11.Connection, request: h11.Request) -> int:
    """Send ``request``, read its whole reply and return its status (raise on anything but
    a complete reply)."""
    await stream.send_all(conn.send(request) + conn.send(h11.EndOfMessage()))
    status = 0
    while True:
        event = conn.next_event()
        if event is h11.NEED_DATA:
            data = await stream.receive_some(65536)
            conn.receive_data(data)
            if not data and conn.their_state is not h11.DONE:
                raise ConnectionError("the server closed the connection before its reply")
            continue
        if isinstance(event, h11.Response):
            status = event.status_code
        elif isinstance(event, h11.EndOfMessage):
            return status
        if isinstance(event, h11.ConnectionClosed):
            raise ConnectionError("the server closed the connection")


async def _session(host: str, port: int, path: str, calls: int, timeout: float,
                   tally: _Tally) -> None:  # fmt: skip
    """One client: a connection, ``calls`` requests on it; every request not answered is
    an error (after the first failure the rest of the session is lost too, as in httperf)."""
    request = h11.Request(method="GET", target=path, headers=[("Host", host)])
    done = 0
    try:
        stream = None
        with trio.fail_after(timeout):
            stream = await trio.open_tcp_stream(host, port)
        conn = h11.Connection(h11.CLIENT)
        async with stream:
            for _ in range(calls):
                started = time.monotonic()
                with trio.fail_after(timeout):
                    status = await _exchange(stream, conn, request)
                tally.times.append((time.monotonic() - started) * 1000)
                tally.replies += 1
                tally.ok += 200 <= status < 300
                tally.last = time.monotonic()
                done += 1
                conn.start_next_cycle()
    except (OSError, trio.TooSlowError, h11.ProtocolError, trio.BrokenResourceError):
        tally.errors += calls - done


async def _offer(url: str, path: str, rate: float, seconds: float, calls: int,
                 timeout: float) -> Point:  # fmt: skip
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    sessions = max(1, round(rate * seconds / calls))
    gap = calls / rate
    tally = _Tally()
    start = last_start = time.monotonic()
    async with trio.open_nursery() as nursery:
        for i in range(sessions):
            # on schedule, not after the previous one: that is what makes the loop open
            await trio.sleep_until(start + i * gap)
            last_start = time.monotonic()
            nursery.start_soon(_session, host, port, path, calls, timeout, tally)
    offered_for = max(last_start - start + gap, seconds)
    elapsed = max(tally.last - start, seconds) if tally.replies else seconds
    return Point(
        offered=rate,
        achieved=sessions * calls / offered_for,
        replies_per_s=tally.replies / elapsed,
        replies=tally.replies,
        ok=tally.ok,
        errors=tally.errors,
        median_ms=statistics.median(tally.times) if tally.times else None,
        elapsed=elapsed,
        times_ms=tally.times,
    )


def offer(url: str, path: str = "/", *, rate: float, seconds: float = 1.0, calls: int = 1,
          timeout: float = 1.0) -> Point:  # fmt: skip
    """Offer ``rate`` requests per second to ``url`` + ``path`` for ``seconds``; wait for
    the last reply or timeout. Runs trio in a thread of its own, so it may be called from
    a notebook cell (whose thread runs the kernel's event loop) or from a test."""
    if not rate > 0 or not seconds > 0 or calls < 1 or not timeout > 0:
        raise ValueError(
            f"rate, seconds and timeout must be positive and calls at least 1, got "
            f"rate={rate!r}, seconds={seconds!r}, calls={calls!r}, timeout={timeout!r}"
        )
    if not path.startswith("/"):
        raise ValueError(f"path must start with '/', got {path!r}")
    result: list[Point] = []
    failure: list[BaseException] = []

    def run() -> None:
        try:
            result.append(trio.run(_offer, url, path, rate, seconds, calls, timeout))
        except BaseException as exc:  # handed to the caller's thread below
            failure.append(exc)

    worker = threading.Thread(target=run, name="pyweb-openloop", daemon=True)
    worker.start()
    worker.join()
    if failure:
        raise failure[0]
    return result[0]


def sweep(url: str, path: str = "/", rates: Sequence[float] = (100, 200, 400), *,
          seconds: float = 1.0, calls: int = 1, timeout: float = 1.0) -> list[Point]:  # fmt: skip
    """:func:`offer` each of ``rates`` in turn (lowest first), one :class:`Point` each."""
    return [offer(url, path, rate=r, seconds=seconds, calls=calls, timeout=timeout)
            for r in sorted(rates)]  # fmt: skip
