"""Instructions per request of the request parser and of ``frame_response``, alone.

What the server does with each request's bytes, without the server: one keep-alive parser
is fed one request at a time and asked for events until it says ``NEED_DATA`` (a
``Request``, an ``EndOfMessage``); and a reply's head is framed (``frame_response``) for
a 13-byte text/plain page (``frame``), and for the example site's hello page, its four
header fields and its 428-byte body joined behind the head as the asyncio server writes it
(``frame-page``). ``PYWEB_REGIONS=python`` measures the Python framer alone. Counted under ``valgrind --tool=callgrind`` (instructions do
not move with the load of a shared machine), as the difference of two runs of different
lengths, so start-up and imports cancel out. Run with

    PYTHONPATH=$PWD .venv/bin/python benchmarks/bench_parse_callgrind.py [--baseline DIR]

``--baseline DIR`` measures another tree (its ``pyweb``) in the same run, for a
before/after table.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile

# The browser's GET with ten fields and the small form POST of the parser's
# pytest-benchmark (bench_parse.py, beside this file): both count the same requests.
from bench_parse import BROWSER_GET, SMALL_POST

WRK_GET = b"GET /hello HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n"
"""What wrk sends (the peers benchmark's keep-alive scenarios)."""
SCENARIOS = {"wrk-get": WRK_GET, "browser-get": BROWSER_GET, "small-post": SMALL_POST}
RUNS = (1000, 3000)
"""The two run lengths: (count(3000) - count(1000)) / 2000 per request."""


def child(scenario: str, n: int) -> None:
    """Run ``n`` requests of one scenario (in the process callgrind watches)."""
    from pyweb.protocol import NEED_DATA, RequestParser, frame_response

    if scenario == "frame":
        parser = RequestParser()
        parser.feed(WRK_GET)
        request = parser.next_event()
        headers = [("Content-Type", "text/plain; charset=utf-8")]
        for _ in range(50):  # warm the caches (status line, header lines, lengths)
            frame_response(request, 200, headers, 13)  # type: ignore[arg-type]
        for _ in range(n):
            frame_response(request, 200, headers, 13)  # type: ignore[arg-type]
        return
    if scenario == "frame-page":
        frame_page(n)
        return
    data = SCENARIOS[scenario]
    parser = RequestParser()
    feed = parser.feed
    next_event = parser.next_event
    for _ in range(50 + n):  # 50 to warm the parser's caches
        feed(data)
        while next_event() is not NEED_DATA:
            pass


PAGE_HEADERS = [
    ("Content-Type", "text/html; charset=utf-8"),
    ("X-Content-Type-Options", "nosniff"),
    ("X-Frame-Options", "SAMEORIGIN"),
    ("Referrer-Policy", "same-origin"),
]
"""What the example site's /hello answers with (``pyweb serve pages``; curl -i shows them)."""


def frame_page(n: int) -> None:
    """The hello page's reply framed and joined to its body, ``n`` times: with
    ``frame_response(..., join=body)``, or, in a tree from before ``join``, as the asyncio
    server joined them then (the head's lines and the body)."""
    import inspect

    from pyweb.protocol import RequestParser, frame_response

    parser = RequestParser()
    parser.feed(WRK_GET)
    request = parser.next_event()
    body = b"x" * 428
    joins = "join" in inspect.signature(frame_response).parameters
    for _ in range(50 + n):
        if joins:
            frame_response(request, 200, PAGE_HEADERS, 428, join=body)  # type: ignore[arg-type,call-arg]
        else:
            lines = frame_response(request, 200, PAGE_HEADERS, 428).lines  # type: ignore[arg-type,attr-defined]
            lines.append(body)
            b"".join(lines)


def count(tree: str, scenario: str, n: int) -> int:
    """Instructions of one child run under callgrind."""
    with tempfile.TemporaryDirectory(prefix="pyweb-parse-cg-") as tmp:
        out = os.path.join(tmp, "cg.out")
        command = [
            "valgrind", "--tool=callgrind", "--dump-instr=no", f"--callgrind-out-file={out}",
            sys.executable, os.path.abspath(__file__), "--child", scenario, "--n", str(n),
        ]  # fmt: skip
        env = {**os.environ, "PYTHONHASHSEED": "0", "PYTHONPATH": tree}
        subprocess.run(
            command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env
        )
        with open(out) as f:
            m = re.search(r"^(?:summary|totals): (\d+)", f.read(), re.M)
        assert m is not None, "no totals in the callgrind output"
        return int(m[1])


def per_request(tree: str, scenario: str) -> float:
    low, high = (count(tree, scenario, n) for n in RUNS)
    return (high - low) / (RUNS[1] - RUNS[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", help="another tree to measure beside this one")
    parser.add_argument(
        "--scenarios", default="wrk-get,browser-get,small-post,frame,frame-page"
    )
    parser.add_argument("--child")
    parser.add_argument("--n", type=int, default=0)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.n)
        return
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    trees = {"this tree": here}
    if args.baseline:
        trees = {"baseline": os.path.abspath(args.baseline), **trees}
    print("| instructions per request | " + " | ".join(trees) + " |")
    print("|---|" + "---:|" * len(trees))
    for scenario in args.scenarios.split(","):
        cells = [f"{per_request(tree, scenario):,.0f}" for tree in trees.values()]
        print(f"| {scenario} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
