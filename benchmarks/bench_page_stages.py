"""What each stage of the page layer costs per request, in-process, on trio and on asyncio.

A request for a script page goes through these stages in :class:`pyweb.app.site.Site`
(docs/performance.md tells the story; this is its measurement):

=============  ==============================================================================
``route``      URL → script or service (``Site.__call__``: a path served before is one
               dictionary lookup; ``Site._route`` otherwise) up to the page it found
``regions``    the region around the page: in-flight count, the library state check after
               it (:meth:`pyweb.regions.SiteRegions.enter` and ``leave``)
``prepare``    ``Site.run_in_guards`` before and after the page: building ``conn`` (a form to
               parse, a session to load, a CSRF token to check only when the request has
               them), the watchdog's registry, the one context variable (``current_conn``
               and the form's getters)
``outcome``    ``Site._page_outcome`` around the page: the page deadline (async pages
               only), the traps, the form errors, the session save, ``conn.finish``,
               the security headers added in place to the answer conn made
``script``     the script itself: a copy of its globals, ``eval`` of its code,
               ``conn.return_`` (where it answered, turning the value into a ``Response``)
``secure``     the security headers added to the response (in place on the response conn
               made; ``Site._secure`` then finds them there)
``whole``      ``await site(ctx)``: all of the above, for the same request
``floor``      ``await handler(ctx)`` for a handler that returns a constant response: what any
               handler costs the server, for scale
=============  ==============================================================================

Each stage is measured by calling the site's own code for that stage with the stage after
it replaced by a constant answer (``route`` runs the real routing with a ``run_in_guards``
that returns at once, ...), so the numbers follow the code as it changes. The pages are the
peers benchmark's: ``hello`` (``pages/hello.py``, a constant page), ``dynamic`` (the
984-byte page of ``benchmarks/apps/page.py`` built by a script per request) and ``guess``
(``pages/guess.py`` with a query).

Two ways to count:

* wall clock (default): ns per request, median of rounds; noisy on a shared machine;
* ``--callgrind``: instructions per request under ``valgrind --tool=callgrind``, which are
  repeatable under load. The script re-runs itself under valgrind; a dump is taken before
  and after each stage's loop (``--dump-before`` on a function only the marker calls), and
  the per-request count is the loop's count minus an empty loop's, divided by ``--n``.
  With ``--main-thread`` only the loop's own thread is counted (``--separate-threads``):
  the watchdog's thread, which looks at the loop every 50 ms of wall time, is left out,
  and two runs of one tree then agree within a few hundred instructions.

A third count, ``--bytecodes``, traces ``whole`` (``sys.settrace`` with opcode events, on
trio) and reports the bytecodes run per request, the page layer's functions one by one:
what a change to the request path's Python adds or takes away, exactly, whatever the load.

Usage: .venv/bin/python benchmarks/bench_page_stages.py [--loop trio|asyncio|both]
           [--pages hello,dynamic,guess] [--n 20000] [--callgrind [--main-thread]]
           [--bytecodes] [--whole] [--json FILE]
(needs PYWEB_SECRET_KEY, as the peers benchmark: the example pages post forms.)
"""

from __future__ import annotations

import argparse
import asyncio
import glob
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import CoroutineType, SimpleNamespace
from typing import Any

import trio

ROOT = Path(__file__).resolve().parent.parent
APPS = ROOT / "benchmarks" / "apps"
sys.path.insert(0, str(APPS))

import page as bench_page  # noqa: E402 - benchmarks/apps/page.py: the peers' pages

from pyweb.app import runner as site_module  # noqa: E402
from pyweb.app.conn import Conn  # noqa: E402
from pyweb.app.formdata import form_from  # noqa: E402
from pyweb.protocol.parser import RequestParser  # noqa: E402
from pyweb.protocol.response import Response  # noqa: E402

PAGES = {
    "hello": "/hello",
    "dynamic": "/dynamic",
    "page-hello": "/page/hello",
    "guess": "/page/guess?" + bench_page.GUESS_QUERY,
    "service-hello": "/svc/hello",
    "static": "/" + bench_page.STATIC_NAME,
}
"""The peers benchmark's scripts (benchmarks/apps/pyweb_app.py writes the site): ``hello``
answers 13 bytes of text/plain, ``dynamic`` builds the 984-byte page per request,
``page-hello`` and ``guess`` are the example site's ``pages/hello.py`` and ``pages/guess.py``,
``service-hello`` its hello service (``pages/hop_services.py``: the ``script`` stage is the
service's ``respond``), ``static`` the peers' 984-byte static file (no page runs for it: only
``whole`` is measured, the other stages read 0)."""
STAGES = ["floor", "route", "regions", "prepare", "outcome", "script", "secure", "whole"]
WHOLE_ONLY = False
"""``--whole``: measure the ``whole`` stage alone (each page warmed up longer), for a change
to the request path as a whole: with ``--callgrind --main-thread``, two runs of one tree
agree within about 200 instructions."""
_MARK = "sys_getswitchinterval"
"""The C function a callgrind dump is taken before: ``sys.getswitchinterval()`` is called
by nothing else in this benchmark, so each call marks a stage's start or end."""


def make_site() -> str:
    """The site folder the peers benchmark serves (its static file made here)."""
    import pyweb_app

    return pyweb_app.make_site("")


class Ctx:
    """The handler contract (:class:`pyweb.handler.Context`) without a server: what the
    stages need, nothing measured on the server's side."""

    __slots__ = ("request", "peer", "scheme", "dev", "received_at", "alloc")

    def __init__(self, request: Any) -> None:
        self.request = request
        self.peer = "127.0.0.1:50000"
        self.scheme = "http"
        self.dev = False
        self.received_at = 0.0
        self.alloc: tuple[int, int] | None = None

    server_port = 8000

    async def body(self, copies: int = 1) -> bytes:
        return b""

    def log_error(self, message: str, exc: BaseException | None = None) -> None:
        print("page error:", message, file=sys.stderr)


def parse(target: str) -> Any:
    parser = RequestParser()
    parser.feed(f"GET {target} HTTP/1.1\r\nHost: bench\r\nUser-Agent: wrk\r\n\r\n".encode())
    return parser.next_event()


_CONSTANT = Response(200, [("Content-Type", "text/plain")], b"Hello, World!")


async def _constant_async(*args: Any, **kwargs: Any) -> Response:
    return _CONSTANT


def _constant_ready(*args: Any, **kwargs: Any) -> Awaitable[Response]:
    return _constant_async()


def stage_calls(site: Any, ctx: Ctx) -> dict[str, Callable[[], Awaitable[Any]]]:
    """One request's worth of each stage, as a no-argument async call."""
    request = ctx.request
    decoded = request.path
    if decoded[1:] not in site.scripts and decoded not in site.services:
        return _whole_only(site, ctx)  # a static file: no page, no stages of one
    svc = site.services.get(decoded)
    if svc is not None:  # a service: its respond is what the script stage runs
        page = site_module._service_page(svc, (), site.cors)
        script: Any = SimpleNamespace(run=page.run, name=page.name, path=page.filename)
    else:
        script = site.scripts[decoded[1:]]
        page = site_module._script_page(script, (), site.cors)
    real = {attr: getattr(type(site), attr) for attr in ("run_in_guards", "_page_outcome")}

    def bound(attr: str) -> Any:
        return real[attr].__get__(site)

    def with_stubs(call: Callable[[], Any], **stubs: Any) -> Callable[[], Awaitable[Any]]:
        """``call`` with the site's attributes ``stubs`` replaced (set around the loop)."""
        call.stubs = stubs  # type: ignore[attr-defined]
        return call

    form, files = form_from(request.query, None, None, site.form_limits)  # (in "prepare")

    def new_conn() -> Conn:
        return Conn(ctx, form, files, script.name, script.path, site.root)

    async def floor() -> Any:
        return await _constant_async(ctx)

    async def route() -> Any:
        return await site(ctx)

    regions_of_site = site.regions
    answer = _html_response()

    async def regions() -> Any:
        # the region's steps, which the site calls around the page in run_in_guards
        slot = regions_of_site.enter()
        found = regions_of_site.leave(ctx, script.name, slot)
        return answer if found is None else regions_of_site.answer(answer, script.name, found)

    run_page = bound("run_in_guards")
    secured = site._secure(_CONSTANT)  # as the page's own answer is when it comes back

    def secured_ready(*args: Any, **kwargs: Any) -> Response:
        return secured  # (as _page_outcome answers a page that did not await)

    async def prepare() -> Any:
        return await run_page(ctx, page)

    page_outcome = bound("_page_outcome")

    def answered(c: Conn) -> Any:
        # A page that has answered when its run returns (a script without await), with an
        # answer made by conn (the site then adds its headers in place: counted here too).
        c.response = c.own_response = _html_response()
        return site_module.pages.DONE

    answering = site_module._Page(answered, page.name, page.filename, False)

    async def outcome() -> Any:
        response = page_outcome(ctx, new_conn(), answering)  # (a coroutine if it awaits)
        return await response if type(response) is CoroutineType else response

    current = site_module._current

    async def script_run() -> Any:
        conn = new_conn()
        token = current.set(conn)  # (as run_in_guards does: the getters find conn and its form)
        try:
            await script.run(conn)
        finally:
            current.reset(token)
        return conn.response

    async def conn_only() -> Any:
        conn = new_conn()
        current.reset(current.set(conn))
        return conn

    missing = site._missing
    secure_method = site._secure

    async def secure() -> Any:
        response = _html_response()
        response.headers.extend(missing(response.headers))  # _page_outcome, on conn's own
        return secure_method(response)

    async def response_only() -> Any:
        return _html_response()

    async def whole() -> Any:
        return await site(ctx)

    calls = {
        "floor": floor,
        "route": with_stubs(route, run_in_guards=_constant_ready),
        "regions": regions,
        "prepare": with_stubs(prepare, _page_outcome=secured_ready),
        "outcome": outcome,
        "script": script_run,
        "conn": conn_only,  # subtracted from outcome and script (each builds a conn)
        "secure": secure,
        "response": response_only,  # subtracted from secure and outcome (each builds one)
        "whole": whole,
    }
    return calls


def _whole_only(site: Any, ctx: Ctx) -> dict[str, Callable[[], Awaitable[Any]]]:
    """The calls for a path no page answers: ``floor`` and ``whole`` measured, every other
    stage an empty call (0 once the empty loop is subtracted)."""

    async def nothing() -> None:
        return None

    async def floor() -> Any:
        return await _constant_async(ctx)

    async def whole() -> Any:
        return await site(ctx)

    calls: dict[str, Callable[[], Awaitable[Any]]] = dict.fromkeys(stage_names(), nothing)
    calls.update(floor=floor, route=floor, whole=whole)  # (route: less floor, 0)
    return calls


def _html_response() -> Response:
    """The page's own response (before the security headers), for the ``secure`` stage."""
    return Response(200, [("Content-Type", "text/html; charset=utf-8")], b"<p>hi</p>")


# ---- running -------------------------------------------------------------------------------


async def _yield_now(loop: str) -> None:
    if loop == "trio":
        await trio.lowlevel.checkpoint()
    else:
        await asyncio.sleep(0)


async def measure(loop: str, site: Any, pages: list[str], n: int, marks: bool) -> dict:
    """Per page and stage: seconds per request (median of rounds), or, with ``marks``, the
    callgrind marks around each loop (the parent reads the dumps)."""
    results: dict[str, dict[str, float]] = {}
    mark = sys.getswitchinterval

    async def empty() -> None:
        return None

    for page_name in pages:
        ctx = Ctx(parse(PAGES[page_name]))
        calls = {"empty": empty, **stage_calls(site, ctx)}
        if WHOLE_ONLY:
            calls = {"empty": empty, "whole": calls["whole"]}
        for call in calls.values():  # warm up: caches, the watchdog's start, imports
            stubs = getattr(call, "stubs", {})
            for attr, stub in stubs.items():
                setattr(site, attr, stub)
            for _ in range(300 if WHOLE_ONLY else 50):
                await call()
            for attr in stubs:
                delattr(site, attr)
        await _yield_now(loop)
        per: dict[str, list[float]] = {name: [] for name in calls}
        rounds = 1 if marks else 5
        for _ in range(rounds):
            for name, call in calls.items():
                stubs = getattr(call, "stubs", {})
                for attr, stub in stubs.items():
                    setattr(site, attr, stub)
                if marks:
                    mark()  # dump: what came before
                t = time.perf_counter()
                for i in range(n):
                    await call()
                    if i % 64 == 63:
                        await _yield_now(loop)  # as a server would: let the watchdog tick
                elapsed = time.perf_counter() - t
                if marks:
                    mark()  # dump: this loop
                for attr in stubs:
                    delattr(site, attr)
                per[name].append(elapsed / n)
        results[page_name] = {name: statistics.median(v) for name, v in per.items()}
    return results


def run_loop(loop: str, pages: list[str], n: int, marks: bool) -> dict:
    from pyweb.app.site import Site

    site = Site(make_site())
    if loop == "trio":
        return trio.run(measure, loop, site, pages, n, marks)
    try:
        import uvloop

        new_loop: Any = uvloop.new_event_loop
    except ImportError:
        new_loop = asyncio.new_event_loop
    event_loop = new_loop()
    try:
        return event_loop.run_until_complete(measure(loop, site, pages, n, marks))
    finally:
        event_loop.close()


def per_stage(raw: dict[str, float]) -> dict[str, float]:
    """Stage costs from the loops' costs: the empty loop subtracted from every one, the
    ``conn`` built by the ``outcome`` and ``script`` harnesses and the response the
    ``outcome`` and ``secure`` harnesses build subtracted from them."""
    base = raw["empty"]
    out = {name: raw[name] - base for name in raw if name != "empty"}
    for name in ("outcome", "script"):
        out[name] -= out["conn"]
    out["secure"] -= out["response"]
    out["outcome"] -= out["response"]
    out["route"] -= out["floor"]  # it awaits a constant answer at its end
    # (prepare's stand-in for _page_outcome is a plain call, as for a page without await)
    out["prepare"] -= out["regions"]  # run_in_guards runs the region's steps itself
    return out


def callgrind(loop: str, pages: list[str], n: int, main_thread: bool = False) -> dict:
    """Re-run this script under callgrind; instructions per request per page and stage
    (``main_thread``: the loop's thread only, each thread's counts dumped apart)."""
    out_dir = tempfile.mkdtemp(prefix="pyweb-stages-cg-")
    out = os.path.join(out_dir, "cg.out")
    command = [
        "valgrind", "--tool=callgrind", f"--dump-before={_MARK}", "--dump-instr=no",
        *(["--separate-threads=yes"] if main_thread else []),
        f"--callgrind-out-file={out}", sys.executable, __file__, "--child", "--loop", loop,
        "--pages", ",".join(pages), "--n", str(n), *(["--whole"] if WHOLE_ONLY else []),
    ]  # fmt: skip
    env = {**os.environ, "PYTHONHASHSEED": "0"}  # the same dict and set layouts every run
    subprocess.run(
        command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env
    )
    counts = []
    dumps = glob.glob(out + (".*-01" if main_thread else ".*"))  # thread 1: the loop's
    for path in sorted(dumps, key=lambda p: int(p.rsplit(".", 1)[1].split("-")[0])):
        with open(path) as f:
            m = re.search(r"^summary: (\d+)", f.read(), re.M)
        counts.append(int(m[1]) if m else 0)
    shutil.rmtree(out_dir, ignore_errors=True)
    # dumps: [start-up..first mark], then per loop a (gap, loop) pair of dumps
    names = ["empty", "whole"] if WHOLE_ONLY else ["empty", *stage_names()]
    results: dict[str, dict[str, float]] = {}
    i = 1  # dump 0: everything before the first mark; then (loop, gap) pairs
    for page_name in pages:
        raw = {}
        for name in names:
            raw[name] = counts[i] / n  # counts[i + 1]: the gap before the next loop
            i += 2
        results[page_name] = raw
    return results


def stage_names() -> list[str]:
    return ["floor", "route", "regions", "prepare", "outcome", "script", "conn", "secure",
            "response", "whole"]  # fmt: skip


def report(loop: str, unit: str, results: dict) -> str:
    pages = list(results)
    if WHOLE_ONLY:
        cells = [f"{results[p]['whole'] - results[p]['empty']:,.0f}" for p in pages]
        return "\n".join([f"### {loop} ({unit} per request)", "",
                          "| stage | " + " | ".join(pages) + " |", "|---|" + "---:|" * len(pages),
                          "| whole | " + " | ".join(cells) + " |"])  # fmt: skip
    lines = [f"### {loop} ({unit} per request)", "",
             "| stage | " + " | ".join(pages) + " |",
             "|---|" + "---:|" * len(pages)]  # fmt: skip
    staged = {p: per_stage(results[p]) for p in pages}
    for name in [*STAGES[:-1], "sum of stages", "whole"]:
        cells = []
        for p in pages:
            s = staged[p]
            if name == "sum of stages":
                value = sum(s[k] for k in STAGES[1:-1])
            else:
                value = s[name]
            cells.append(f"{value:,.0f}")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def bytecodes(pages: list[str], n: int) -> str:
    """Bytecodes per request of ``await site(ctx)`` for each page, and of each pyweb function
    among them (a tracer's opcode events; the first requests run untraced, to warm up)."""
    from collections import Counter

    from pyweb.app.site import Site

    site = Site(make_site())
    lines = []
    counts: Counter[str] = Counter()

    def tracer(frame: Any, event: str, arg: Any) -> Any:
        frame.f_trace_opcodes, frame.f_trace_lines = True, False
        if event == "opcode":
            code = frame.f_code
            counts[f"{code.co_filename.rsplit('/pyweb/', 1)[-1]}:{code.co_name}"] += 1
        return tracer

    for page_name in pages:
        counts.clear()

        async def traced(ctx: Ctx) -> None:
            for _ in range(100):
                await site(ctx)
            sys.settrace(tracer)
            try:
                for _ in range(n):
                    await site(ctx)
            finally:
                sys.settrace(None)

        trio.run(traced, Ctx(parse(PAGES[page_name])))
        lines.append(f"{page_name}: {sum(counts.values()) / n:.1f} bytecodes per request")
        lines += [f"  {count / n:7.1f}  {where}" for where, count in counts.most_common()]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--loop", default="both", choices=("trio", "asyncio", "both"))
    parser.add_argument("--pages", default="hello,dynamic,page-hello")
    parser.add_argument("--n", type=int, default=None)
    parser.add_argument("--callgrind", action="store_true")
    parser.add_argument(
        "--main-thread", action="store_true", help="with --callgrind: the loop's thread only"
    )
    parser.add_argument("--bytecodes", action="store_true", help="bytecodes per request")
    parser.add_argument("--whole", action="store_true", help="the whole stage alone")
    parser.add_argument("--json", default=None, help="write the raw numbers here")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    global WHOLE_ONLY
    WHOLE_ONLY = args.whole
    os.environ.setdefault("PYWEB_SECRET_KEY", "bench-only-key-0123456789abcdef0123456789")
    pages = [p for p in args.pages.split(",") if p]
    loops = ["trio", "asyncio"] if args.loop == "both" else [args.loop]
    if args.child:
        run_loop(args.loop, pages, args.n or 2000, marks=True)
        return
    if args.bytecodes:
        print(bytecodes(pages, args.n or 200))
        return
    all_results = {}
    for loop in loops:
        if args.callgrind:
            results = callgrind(loop, pages, args.n or 2000, args.main_thread)
            unit = "instructions"
        else:
            raw = run_loop(loop, pages, args.n or 20000, marks=False)
            results = {p: {k: v * 1e9 for k, v in r.items()} for p, r in raw.items()}
            unit = "ns"
        all_results[loop] = results
        print(report(loop, unit, results))
        print()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(all_results, f, indent=1)


if __name__ == "__main__":
    main()
