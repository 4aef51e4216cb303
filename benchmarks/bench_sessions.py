"""What sessions and the CSRF check cost per request, beside page-hello (wrk, one server).

One ``pyweb serve`` (pinned to CPU 0, access log off) serves a small site; wrk (CPU 1, 50
keep-alive connections) measures each request kind in turn, in several interleaved rounds,
and the medians are reported as requests/s and as a ratio to page-hello in the same run:

* ``page-hello``: ``hello.py``, no cookie (the baseline: what pages/hello.py does);
* ``session-none``: a page that reads ``conn.session`` with no cookie sent (no session);
* ``session-read``: the same page with a session cookie: the signature is checked and the
  session read from the cache (memory, or Redis with ``--cache redis://...``);
* ``post-no-check``: an empty POST to a service with ``csrf=False``;
* ``post-csrf``: the same POST to a service with the check on, cookie and X-CSRF-Token sent.

Usage: .venv/bin/python benchmarks/bench_sessions.py [--seconds 5] [--rounds 3]
       [--cache redis://127.0.0.1:6379/0] [--short]
"""

from __future__ import annotations

import argparse
import http.client
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import peers  # noqa: E402 - RunningServer, pinned, run_wrk, Scenario

SITE = {
    "hello.py": "conn.return_('Hello, world!')\n",
    "session.py": "conn.return_('n=%s' % conn.session.get('n'))\n",
    "start.py": (
        "from pyweb import csrf_token\n"
        "conn.session['n'] = 1\n"
        "conn.return_(csrf_token(), content_type='text/plain')\n"
    ),
    "posts.py": (
        "from pyweb import service\n\n\n"
        "@service('/post_checked', methods=['POST'])\n"
        "def checked():\n"
        "    return 'ok'\n\n\n"
        "@service('/post_unchecked', methods=['POST'], csrf=False)\n"
        "def unchecked():\n"
        "    return 'ok'\n"
    ),
}


def start_session(port: int) -> tuple[str, str]:
    """A session cookie and its CSRF token, as a browser gets them from a page."""
    conn = http.client.HTTPConnection(peers.HOST, port, timeout=10)
    conn.request("GET", "/start")
    response = conn.getresponse()
    token = response.read().decode()
    cookie = response.getheader("set-cookie", "").split(";", 1)[0]
    conn.close()
    assert cookie.startswith("pyweb_session=") and token, (cookie, token)
    return cookie, token


def scenarios(cookie: str, token: str, lua: str) -> list[peers.Scenario]:
    post = ("-s", lua)
    return [
        peers.Scenario("page-hello", "hello.py", "/hello", 13),
        peers.Scenario("session-none", "conn.session, no cookie", "/session", 6),
        peers.Scenario("session-read", "conn.session, cookie", "/session", 3,
                       ("-H", f"Cookie: {cookie}")),
        peers.Scenario("post-no-check", "POST, csrf=False", "/post_unchecked", 2, post),
        peers.Scenario("post-csrf", "POST, CSRF checked", "/post_checked", 2,
                       (*post, "-H", f"Cookie: {cookie}", "-H", f"X-CSRF-Token: {token}")),
    ]  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seconds", type=int, default=5)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--cache", default=None, help="pyweb serve --cache (default: memory)")
    p.add_argument("--short", action="store_true", help="1 round of 1 s (CI)")
    args = p.parse_args(argv)
    if args.short:
        args.seconds, args.rounds = 1, 1
    peers.ensure_wrk()
    with tempfile.TemporaryDirectory(prefix="pyweb-bench-sessions-") as tmp:
        site = Path(tmp) / "site"
        site.mkdir()
        for name, text in SITE.items():
            (site / name).write_text(text)
        lua = Path(tmp) / "post.lua"
        lua.write_text('wrk.method = "POST"\n')
        command = [sys.executable, "-m", "pyweb", "serve", str(site), "--port", "{port}",
                   "--access-log", "none"]  # fmt: skip
        if args.cache:
            command += ["--cache", args.cache]
        env = {"PYWEB_SECRET_KEY": os.environ.get("PYWEB_SECRET_KEY", "bench-sessions-key-0123456789")}
        server = peers.RunningServer("pyweb", "0", tmp, Path(tmp) / "server.log",
                                     command=command, cwd=peers.ROOT, env=env)  # fmt: skip
        try:
            server.wait_ready()
            cookie, token = start_session(server.port)
            kinds = scenarios(cookie, token, str(lua))
            rps: dict[str, list[float]] = {sc.name: [] for sc in kinds}
            for _ in range(args.rounds):
                for sc in kinds:
                    peers.run_wrk("1", server.port, sc, 1)  # warm-up
                    result, output = peers.run_wrk("1", server.port, sc, args.seconds)
                    if result.get("non2xx") or "rps" not in result:
                        print(f"{sc.name}: bad answers\n{output}", file=sys.stderr)
                        return 1
                    rps[sc.name].append(float(result["rps"]))
        finally:
            server.stop()
    base = statistics.median(rps["page-hello"])
    cache = args.cache or "memory"
    print(f"sessions and CSRF, cache {cache}: median of {args.rounds} x {args.seconds} s (wrk -c50)")
    print(f"{'kind':<15} {'requests/s':>11} {'vs page-hello':>14} {'µs/request':>11}")
    for sc in kinds:
        median = statistics.median(rps[sc.name])
        print(f"{sc.name:<15} {median:>11,.0f} {median / base:>13.2f}x {1e6 / median:>11.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
