"""Reply rate against request rate: Hop's Figures 6-7 and Marlow's Figure 1.

wrk (``peers.py``) measures the most a server can do with a fixed number of connections
kept busy (a *closed* loop: a new request only when an answer came back). The papers also
ask what happens when clients arrive at a rate of their own, whether or not the server
keeps up (an *open* loop): below capacity the reply rate follows the request rate; past
it, a good server levels off, a bad one falls over. httperf, the tool both papers used,
drives this: it opens connections at a fixed rate whatever happens to the earlier ones.

Two sweeps, each over rising rates, for every server chosen:

* ``sessions`` (Hop §4, Figures 6 and 7): sessions of five requests on one keep-alive
  connection (``httperf --wsess=N,5,0``), for the 984-byte static file (Figure 6) and the
  984-byte dynamic page (Figure 7). The rate is in requests per second (5 per session).
* ``connections`` (Marlow §7, Figure 1): one connection per request (``--num-calls 1``) for
  the hello page.

Each point runs for ``--duration`` seconds; a point counts the replies per second, the
errors (timeouts after 5 s, refused and reset connections), and the median reply time.
Servers are pinned to CPU 0 and httperf to CPU 1, as in ``peers.py``, whose server
definitions this script reuses. Results go to ``benchmarks/results/sweep-*.json``, a
Markdown table on stdout and, when matplotlib is installed, PNG plots (``--plots DIR``).

Usage: .venv/bin/python benchmarks/sweep.py [--short] [--servers a,b] [--rates r1,r2,...]
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import peers  # noqa: E402 - the server definitions and helpers are shared

SWEEPS = {
    # name: (title, path, calls per connection)
    "static": ("Hop Fig. 6: 984-byte static file, sessions of 5", "/" + peers.page.STATIC_NAME, 5),
    "dynamic": ("Hop Fig. 7: 984-byte dynamic page, sessions of 5", "/dynamic", 5),
    "connections": ("Marlow Fig. 1: hello, one connection per request", "/hello", 1),
}
DEFAULT_RATES = [1000, 2000, 4000, 6000, 8000, 10000, 12000, 15000]
SHORT_RATES = [500, 2000]
DEFAULT_SERVERS = ["pyweb", "pyweb-pool", "pyweb-nothread", "uvicorn", "raw-trio"]


@dataclass
class Point:
    server: str
    sweep: str
    rate: int
    """Requests per second offered."""
    replies_per_s: float
    errors: int
    reply_ms: float
    duration_s: float
    error_kinds: str = ""
    """httperf's counts of each kind of error (``client-timo=3 connreset=1``)."""


def ensure_httperf() -> str:
    if shutil.which("httperf") is None:
        print("httperf is not on PATH: running apt-get install -y httperf", flush=True)
        if subprocess.run(["apt-get", "install", "-y", "httperf"]).returncode != 0:
            subprocess.run(["apt-get", "update"], check=True)
            subprocess.run(["apt-get", "install", "-y", "httperf"], check=True)
    return (
        "httperf "
        + subprocess.run(["httperf", "--version"], capture_output=True, text=True).stdout.split()[
            -1
        ]
    )


def _number(pattern: str, text: str) -> float:
    found = re.search(pattern, text)
    if not found:
        raise ValueError(f"httperf output without {pattern!r}:\n{text}")
    return float(found.group(1))


def parse_httperf(text: str) -> tuple[float, int, float, float, str]:
    """(replies, errors, reply time ms, test duration s, the kinds of errors) from
    httperf's summary."""
    replies = _number(r"Total: connections \d+ requests \d+ replies (\d+)", text)
    duration = _number(r"test-duration ([\d.]+) s", text)
    errors = int(_number(r"Errors: total (\d+)", text))
    reply_ms = _number(r"Reply time \[ms\]: response ([\d.]+)", text)
    kinds = " ".join(
        f"{name}={count}"
        for name, count in re.findall(
            r"([a-z-]+) (\d+)", " ".join(re.findall(r"Errors: (.*)", text))
        )
        if name != "total" and count != "0"
    )
    return replies, errors, reply_ms, duration, kinds


def run_point(
    cpu: str | None, port: int, sweep: str, rate: int, seconds: float
) -> tuple[float, int, float, float, str]:
    _, path, calls = SWEEPS[sweep]
    conns_per_s = max(1, rate // calls)
    total = max(1, int(conns_per_s * seconds))
    # --close-with-reset: the client ends each connection with RST, so it leaves no
    # TIME_WAIT socket behind; at thousands of connections a second, TIME_WAIT would use up
    # the client's ephemeral ports (28,000 here) within seconds and httperf would measure
    # its own port shortage instead of the server.
    command = ["httperf", "--hog", "--close-with-reset", "--server", peers.HOST,
               "--port", str(port), "--timeout", "5"]  # fmt: skip
    if calls == 1:
        command += ["--uri", path, "--rate", str(conns_per_s), "--num-conns", str(total)]
    else:
        command += ["--uri", path, "--rate", str(conns_per_s), f"--wsess={total},{calls},0"]
    out = subprocess.run(
        peers.pinned(cpu, command), capture_output=True, text=True, timeout=seconds + 20
    )
    return parse_httperf(out.stdout)


def sweep_server(args: argparse.Namespace, name: str, site: str, logs: Path) -> list[Point]:
    points: list[Point] = []
    for sweep in args.sweeps:
        for rate in args.rates:
            server = peers.RunningServer(name, args.server_cpu, site, logs / f"{name}-{sweep}.log")
            try:
                server.wait_ready()
                replies, errors, reply_ms, duration, kinds = run_point(
                    args.client_cpu, server.port, sweep, rate, args.duration
                )
            except subprocess.TimeoutExpired:  # httperf hung: a failed point, not a lost server
                replies, errors, reply_ms, duration, kinds = 0.0, -1, 0.0, args.duration, "hung"
            finally:
                server.stop()
            point = Point(name, sweep, rate, replies / duration, errors, reply_ms, duration, kinds)
            print(
                f"{name:15} {sweep:12} offered {rate:6} req/s  replies {point.replies_per_s:8.0f}/s"
                f"  errors {errors:5}  reply {reply_ms:7.1f} ms  {kinds}",
                flush=True,
            )
            points.append(point)
    return points


def table(points: list[Point]) -> str:
    lines = []
    for sweep in SWEEPS:
        chosen = [p for p in points if p.sweep == sweep]
        if not chosen:
            continue
        servers = list(dict.fromkeys(p.server for p in chosen))
        rates = sorted({p.rate for p in chosen})
        lines += [f"\n### {SWEEPS[sweep][0]}\n", "| offered req/s | " + " | ".join(servers) + " |"]
        lines.append("|---:|" + "---:|" * len(servers))
        for rate in rates:
            cells = []
            for server in servers:
                p = next((q for q in chosen if q.server == server and q.rate == rate), None)
                cells.append("" if p is None else f"{p.replies_per_s:,.0f} ({p.errors} err)")
            lines.append(f"| {rate:,} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plot(points: list[Point], directory: Path) -> list[Path]:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plots (pip install matplotlib)", flush=True)
        return []
    directory.mkdir(parents=True, exist_ok=True)
    made = []
    for sweep, (title, _, _) in SWEEPS.items():
        chosen = [p for p in points if p.sweep == sweep]
        if not chosen:
            continue
        figure, axes = plt.subplots(figsize=(6, 4))
        for server in dict.fromkeys(p.server for p in chosen):
            mine = sorted((p for p in chosen if p.server == server), key=lambda p: p.rate)
            axes.plot([p.rate for p in mine], [p.replies_per_s for p in mine], "o-", label=server)
        top = max(p.rate for p in chosen)
        axes.plot([0, top], [0, top], ":", color="grey", label="replies = requests")
        axes.set(title=title, xlabel="requests offered per second", ylabel="replies per second")
        axes.legend()
        figure.tight_layout()
        path = directory / f"sweep-{sweep}.png"
        figure.savefig(path, dpi=100)
        plt.close(figure)
        made.append(path)
    return made


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--servers", default=",".join(DEFAULT_SERVERS))
    p.add_argument("--sweeps", default=",".join(SWEEPS))
    p.add_argument("--rates", default=",".join(map(str, DEFAULT_RATES)))
    p.add_argument("--duration", type=float, default=5.0, help="seconds per point")
    p.add_argument("--short", action="store_true", help="two rates, 1 s each (CI)")
    p.add_argument("--plots", type=Path, default=None, help="write PNG plots here")
    p.add_argument("--server-cpu", default="0")
    p.add_argument("--client-cpu", default="1")
    args = p.parse_args(argv)
    args.servers = args.servers.split(",")
    args.sweeps = args.sweeps.split(",")
    for name in args.servers:
        if name not in peers.SERVERS:
            p.error(f"unknown server {name!r}; choose from {', '.join(peers.SERVERS)}")
    for name in args.sweeps:
        if name not in SWEEPS:
            p.error(f"unknown sweep {name!r}; choose from {', '.join(SWEEPS)}")
    args.rates = SHORT_RATES if args.short else [int(r) for r in args.rates.split(",")]
    if args.short:
        args.duration = 1.0
    if peers.os.cpu_count() == 1 or shutil.which("taskset") is None:
        args.server_cpu = args.client_cpu = None
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    print(ensure_httperf(), flush=True)
    if any(not s.startswith("pyweb") and s != "raw-trio" for s in args.servers):
        peers.ensure_peers_venv()
    points: list[Point] = []
    failed = []
    with tempfile.TemporaryDirectory(prefix="pyweb-sweep-") as tmp:
        site = Path(tmp) / "site"
        site.mkdir()
        (site / peers.page.STATIC_NAME).write_bytes(peers.page.render(0))  # as peers.py
        logs = Path(tmp)
        for name in args.servers:
            try:
                points += sweep_server(args, name, str(site), logs)
            except (peers.ServerFailed, ValueError, subprocess.TimeoutExpired) as exc:
                print(f"{name}: failed: {exc}", flush=True)
                failed.append(name)
    print(table(points))
    peers.RESULTS.mkdir(exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    out = peers.RESULTS / f"sweep-{stamp}.json"
    out.write_text(json.dumps([asdict(p) for p in points], indent=1))
    print(f"\nresults: {out.relative_to(peers.ROOT)}")
    if args.plots:
        for path in plot(points, args.plots):
            print(f"plot: {path}")
    return 1 if "pyweb" in failed else 0


if __name__ == "__main__":
    sys.exit(main())
