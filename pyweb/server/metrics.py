"""``/_pyweb/metrics``: the server's numbers in Prometheus's text format, summed over workers.

The status page (``status.py``) answers a person; this page answers a program that comes
every few seconds (Prometheus, or anything that reads its format) and keeps the history:
requests by route and status, a latency histogram per route, open connections, the
connection slots, the log's losses and what the site's cache and database pools report.

It is on with ``--metrics``. Counting costs every request a clock read and a few plain
dictionary and integer updates (:meth:`Metrics.observe`, called where the access record is
made); ``prometheus_client`` runs only when the page is asked for, to write the text out.
That is about a tenth of what the server itself spends on a constant answer, which is why it
is off by default (docs/metrics.md, docs/performance.md).

With ``--workers N`` each worker counts its own requests, and any one of them may answer the
scrape (the kernel picks). So every worker writes its counts to a small file in a folder the
supervisor made (``PYWEB_METRICS_DIR``), once a second and when it stops, and the worker that
answers adds them all up: counters over every worker that ever ran (a worker replaced after
``--max-requests`` keeps its share, so a total never goes backwards), gauges over the
workers alive now. A worker's count can lag by up to :data:`FLUSH_INTERVAL`.

Routes are request paths (the server knows no pages); at most :data:`MAX_ROUTES` per
worker, further ones counted as ``(other)``, and every 404 as ``(not found)``, so a scanner
cannot blow the number of series up.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from bisect import bisect_left
from collections.abc import Awaitable, Callable, Iterator
from typing import TYPE_CHECKING, Any

from pyweb.events import select, timeout, wrap
from pyweb.protocol.response import Response
from pyweb.runtime import to_thread

if TYPE_CHECKING:
    from pyweb.handler import Context
    from pyweb.protocol.messages import Request

    from .host import Host

__all__ = [
    "Metrics", "METRICS_PATH", "METRICS_SOURCES", "MAX_ROUTES", "BUCKETS", "FLUSH_INTERVAL",
    "Sample", "combine", "render",
]  # fmt: skip

METRICS_PATH = "/_pyweb/metrics"
MAX_ROUTES = 200
"""Routes counted apart per worker; the rest are ``(other)``."""
BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
"""Upper bounds (seconds) of the latency histogram's buckets; a last one, ``+Inf``, follows."""
FLUSH_INTERVAL = 1.0
"""Seconds between two writes of a worker's counts to the shared folder."""

Sample = tuple[str, str, str, dict[str, str], float]
"""One number a source reports: (metric name, ``"counter"`` or ``"gauge"``, help text,
labels, value). Counters are summed over every worker that ran, gauges over live ones."""

METRICS_SOURCES: dict[str, Callable[[], list[Sample]]] = {}
"""More numbers, by source name, filled by what runs beside the server (``pyweb serve``
adds the cache and the database pools); the server imports neither."""


class _Route:
    """What one route has seen in this process."""

    __slots__ = ("statuses", "buckets", "seconds")

    def __init__(self) -> None:
        self.statuses: dict[int, int] = {}
        self.buckets = [0] * (len(BUCKETS) + 1)
        """Requests per bucket (not cumulative: :func:`render` adds them up)."""
        self.seconds = 0.0


class Metrics:
    """One process's counts, and the numbers it reads from its server at scrape time."""

    def __init__(self, server: Host, folder: str | None = None) -> None:
        self.server = server
        self.routes: dict[str, _Route] = {}
        self.folder = folder if folder is not None else os.environ.get("PYWEB_METRICS_DIR")
        """Where the workers of one supervisor leave their counts (None: no workers)."""
        self.started = time.time()

    def observe(self, request: Request | None, status: int, seconds: float) -> None:
        """Count one finished request (``request`` is None when none could be parsed).
        On every request: keep it to dictionary lookups and integer additions."""
        if status == 404:
            path = "(not found)"
        elif request is None:
            path = "(bad request)"
        else:
            path = request.path
        route = self.routes.get(path)
        if route is None:
            route = self._new_route(path)
        statuses = route.statuses
        statuses[status] = statuses.get(status, 0) + 1
        route.buckets[bisect_left(BUCKETS, seconds)] += 1
        route.seconds += seconds

    def _new_route(self, path: str) -> _Route:
        if len(self.routes) >= MAX_ROUTES:
            path = "(other)"
            found = self.routes.get(path)
            if found is not None:
                return found
        route = self.routes[path] = _Route()
        return route

    # -- what this process reports --------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        """This process's numbers as plain data (what a worker writes to its file)."""
        server = self.server
        slots = server.slots
        log = server.log
        samples: list[Sample] = [
            ("pyweb_open_connections", "gauge", "Connections open now.", {},
             len(server.connections)),
            ("pyweb_slots_in_use", "gauge", "Connection slots held (max_connections).", {},
             slots.busy),
            ("pyweb_slots_limit", "gauge", "Connection slots (max_connections).", {},
             slots.limit),
            ("pyweb_slots_idle", "gauge", "Slots held by idle keep-alive connections.", {},
             len(slots.idle)),
            ("pyweb_streams_in_use", "gauge", "Requests in a long wait (max_streams).", {},
             slots.streams),
            ("pyweb_streams_limit", "gauge", "Long-wait budget (max_streams).", {},
             slots.stream_limit),
            ("pyweb_refused_connections_total", "counter",
             "Connections answered 503 because every slot was busy.", {}, slots.refused),
            ("pyweb_evicted_connections_total", "counter",
             "Idle connections closed to make room for a newcomer.", {}, slots.evicted),
            ("pyweb_log_dropped_total", "counter",
             "Log records lost (queue full or a failed write).", {},
             log.dropped if log is not None else 0),
        ]  # fmt: skip
        for name, source in list(METRICS_SOURCES.items()):
            try:
                samples += source()
            except Exception as exc:  # a broken source must not take the page down
                samples.append(_source_failed(name, exc))
        return {
            "pid": os.getpid(),
            "time": time.time(),
            "routes": {
                path: [sorted(r.statuses.items()), r.buckets, r.seconds]
                for path, r in self.routes.items()
            },
            "samples": samples,
        }

    # -- the workers' folder --------------------------------------------------------------

    def _file(self) -> str:
        assert self.folder is not None
        return os.path.join(self.folder, f"{os.getpid()}.json")

    def write(self) -> None:
        """Write this worker's numbers to its file (replaced whole: a reader never sees
        half of it). Nothing without a folder."""
        if self.folder is None:
            return
        _write_file(self._file(), json.dumps(self.snapshot()))

    async def keep_written(self) -> None:
        """The worker's task: write the numbers every :data:`FLUSH_INTERVAL` seconds until
        the server stops (the server writes them a last time when it has drained)."""
        if self.folder is None:
            return
        stopping = wrap(self.server.stopping.evt(), lambda _: True)
        while True:  # written first at once: a worker that serves has a file
            text = json.dumps(self.snapshot())  # in the loop's thread: the counts are its
            await to_thread(_write_file, self._file(), text)
            if await select(timeout(FLUSH_INTERVAL), stopping):
                return

    def everyone(self, live: set[int]) -> list[dict[str, Any]]:
        """This process's snapshot, fresh, and every other worker's last one (``live``:
        the pids of the workers running now)."""
        mine = self.snapshot()
        found = [mine]
        if self.folder is None:
            return found
        try:
            names = set(os.listdir(self.folder))
        except OSError:
            return found
        # A directory listing may miss a file being replaced at that moment: the live
        # workers' files are read by name.
        names |= {f"{pid}.json" for pid in live}
        for name in sorted(names):
            if not name.endswith(".json") or name == f"{mine['pid']}.json":
                continue
            try:
                with open(os.path.join(self.folder, name), encoding="utf-8") as f:
                    found.append(json.load(f))
            except (OSError, ValueError):  # a worker that never wrote (it died at once)
                continue
        return found

    # -- the page -------------------------------------------------------------------------

    def page(self, ctx: Context) -> Awaitable[Response]:
        """``/_pyweb/metrics`` (the operator guard has let ``ctx`` through)."""
        return _ready(self.answer())

    def answer(self) -> Response:
        try:
            from prometheus_client import CONTENT_TYPE_LATEST
        except ImportError:
            return self.server.error_page(
                503, detail="/_pyweb/metrics needs prometheus_client: pip install 'pyweb[metrics]'"
            )
        from .supervised import worker_table

        live = {row["pid"] for row in worker_table()} | {os.getpid()}
        body = render(combine(self.everyone(live), live))
        return Response(
            200, [("content-type", CONTENT_TYPE_LATEST), ("cache-control", "no-store")], body
        )


def _source_failed(name: str, exc: Exception) -> Sample:
    return ("pyweb_metrics_source_errors", "gauge",
            "A metrics source raised while it was read (1: its numbers are missing).",
            {"source": name, "error": type(exc).__name__}, 1)  # fmt: skip


def _write_file(path: str, text: str) -> None:
    """Replace ``path`` with ``text`` whole. A failure (the supervisor's folder is gone, a
    full disk) costs the other workers this update, never the server."""
    # A name of the writing thread's own: the last write at shutdown may overlap the
    # periodic one, and two writers of one temporary file could mix their bytes.
    temporary = f"{path}.{threading.get_ident()}.new"
    try:
        with open(temporary, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(temporary, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(temporary)


async def _ready_value(response: Response) -> Response:
    return response


def _ready(response: Response) -> Awaitable[Response]:
    return _ready_value(response)


# -- adding the workers up, and writing the text out --------------------------------------


def combine(snapshots: list[dict[str, Any]], live: set[int]) -> dict[str, Any]:
    """The workers' snapshots as one: requests and latencies per route summed, counters
    summed over all, gauges over the ``live`` pids only."""
    requests: dict[tuple[str, int], int] = {}
    latency: dict[str, tuple[list[int], float]] = {}
    samples: dict[tuple[str, tuple[tuple[str, str], ...]], list[Any]] = {}
    workers = 0
    for snap in snapshots:
        alive = snap["pid"] in live
        workers += alive
        for path, (statuses, buckets, seconds) in snap["routes"].items():
            for status, count in statuses:
                requests[path, status] = requests.get((path, status), 0) + count
            old = latency.get(path)
            if old is None:
                latency[path] = (list(buckets), seconds)
            else:
                latency[path] = ([a + b for a, b in zip(old[0], buckets, strict=True)],
                                 old[1] + seconds)  # fmt: skip
        for name, kind, help_text, labels, value in snap["samples"]:
            if kind == "gauge" and not alive:
                continue
            key = (name, tuple(sorted(labels.items())))
            if key in samples:
                samples[key][4] += value
            else:
                samples[key] = [name, kind, help_text, labels, value]
    return {"requests": requests, "latency": latency, "samples": list(samples.values()),
            "workers": workers}  # fmt: skip


class _Collector:
    """A prometheus_client collector over one combined snapshot (made per scrape)."""

    def __init__(self, combined: dict[str, Any]) -> None:
        self.combined = combined

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import (
            CounterMetricFamily,
            GaugeMetricFamily,
            HistogramMetricFamily,
        )

        combined = self.combined
        requests = CounterMetricFamily(
            "pyweb_http_requests", "Requests answered, by route and status.",
            labels=["route", "status"],
        )  # fmt: skip
        for (path, status), count in sorted(combined["requests"].items()):
            requests.add_metric([path, str(status)], count)
        yield requests
        latency = HistogramMetricFamily(
            "pyweb_http_request_duration_seconds",
            "Seconds from a request's head to the end of its reply, by route.",
            labels=["route"],
        )
        bounds = [*(f"{b:g}" for b in BUCKETS), "+Inf"]
        for path, (buckets, seconds) in sorted(combined["latency"].items()):
            running, cumulative = 0, []
            for bound, count in zip(bounds, buckets, strict=True):
                running += count
                cumulative.append((bound, running))
            latency.add_metric([path], cumulative, seconds)
        yield latency
        yield GaugeMetricFamily(
            "pyweb_workers", "Server processes whose numbers are included.",
            value=combined["workers"],
        )  # fmt: skip
        yield from _families(combined["samples"], CounterMetricFamily, GaugeMetricFamily)


def _families(samples: list[list[Any]], counter: Any, gauge: Any) -> Iterator[Any]:
    """One family per metric name, its samples with their labels."""
    by_name: dict[str, list[list[Any]]] = {}
    for sample in samples:
        by_name.setdefault(sample[0], []).append(sample)
    for name, rows in sorted(by_name.items()):
        _, kind, help_text, labels, _ = rows[0]
        make = counter if kind == "counter" else gauge
        family = make(name.removesuffix("_total"), help_text, labels=sorted(labels))
        for row in sorted(rows, key=lambda r: sorted(r[3].items())):
            family.add_metric([row[3][k] for k in sorted(labels)], row[4])
        yield family


def render(combined: dict[str, Any]) -> bytes:
    """The combined numbers in Prometheus's text format (by prometheus_client)."""
    from prometheus_client import CollectorRegistry, generate_latest

    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Collector(combined))
    return generate_latest(registry)
