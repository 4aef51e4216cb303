"""Instructions per request, server by server: the peer comparison under callgrind.

``peers.py`` measures req/s, which on a shared machine moves with whatever else runs.
This runs the same servers, apps and URLs under ``valgrind --tool=callgrind`` and counts the
instructions each server executes per request: wrk warms a scenario up, the server's
counters are zeroed (``callgrind_control -z``), wrk sends requests for a few seconds, the
counters are dumped (``callgrind_control -d``), and their total over the requests wrk
counted is the cost of one request. The count barely moves with the machine's load, so
two runs compare, and so do the layers of one server (pyweb with a handler below the page
layer, and with a script page). It counts the server's own instructions only: the
kernel's work (the system calls, accepting connections) and cache misses are not in it,
so it is a measure of code paths, not of time; read it beside ``peers.py``'s numbers.

Usage: .venv/bin/python benchmarks/peers_callgrind.py [--servers a,b] [--scenarios x,y]
                                                      [--seconds S] [--markdown FILE]
                                                      [--baseline DIR]
(``--servers pyweb-handler,pyweb-baseline --baseline DIR`` counts a change against another
checkout, e.g. a worktree of the commit before it with its C extension built.)
(``make bench-peers-callgrind``; about a minute per server and scenario pair set).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import peers  # noqa: E402 - the servers, their apps, wrk and its parsing

DEFAULT_SERVERS = [*peers.DEFAULT_SERVERS, "pyweb-handler", "pyweb-asyncio-handler"]
CONNECTIONS = 8  # enough to keep a server under valgrind (about 50x slower) busy
START_TIMEOUT = 180.0  # Python under valgrind imports slowly


def group_pids(pgid: int) -> list[int]:
    """The processes of the server's group: granian's workers are children of its main."""
    pids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            rest = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(rest[2]) == pgid:
            pids.append(int(stat.parent.name))
    return pids


def control(flag: str, pids: list[int]) -> None:
    """callgrind_control for these pids only (never every callgrind process of the user)."""
    for pid in pids:
        subprocess.run(["callgrind_control", flag, str(pid)], capture_output=True, timeout=60)


def wait_for_dumps(out_dir: Path, name: str, count: int, timeout: float = 60.0) -> None:
    """Until ``count`` dumps of ``name`` exist: the server writes them from its own thread,
    after ``callgrind_control`` returns, and slowly under valgrind on a busy machine."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        dumps = list(out_dir.glob(f"{name}.*.out.*"))
        # a dump is complete once its last line, "totals: N", is written
        if len(dumps) >= count and all(_complete(path) for path in dumps):
            return
        time.sleep(0.2)


def _complete(path: Path) -> bool:
    try:
        return "\ntotals:" in path.read_text(errors="replace")[-200:]
    except OSError:
        return False


def dumped_total(out_dir: Path, name: str) -> int:
    """The instructions of the newest dump of each process of ``name``, added up."""
    newest: dict[str, tuple[int, Path]] = {}
    for path in out_dir.glob(f"{name}.*.out.*"):
        _, pid, _, number = path.name.rsplit(".", 3)
        if number.isdigit() and int(number) > newest.get(pid, (-1, path))[0]:
            newest[pid] = (int(number), path)
    total = 0
    for _, path in newest.values():
        if m := re.search(r"^summary:\s+(\d+)", path.read_text(errors="replace"), re.M):
            total += int(m.group(1))
    return total


def wrk(port: int, sc: peers.Scenario, seconds: int) -> dict:
    command = ["wrk", "-t1", f"-c{CONNECTIONS}", f"-d{seconds}s", "--timeout", "10s",
               *sc.wrk_args, f"http://{peers.HOST}:{port}{sc.path}"]  # fmt: skip
    out = subprocess.run(command, capture_output=True, text=True, timeout=seconds + 60)
    return peers.parse_wrk(out.stdout)


def measure_server(args: argparse.Namespace, name: str, site: str, work: Path) -> dict[str, float]:
    """Instructions per request for each scenario (absent when it could not be measured)."""
    prefix = ["valgrind", "--tool=callgrind", "--trace-children=yes", "--dump-instr=no",
              f"--callgrind-out-file={work}/{name}.%p.out"]  # fmt: skip
    server = peers.RunningServer(name, None, site, work / f"{name}.log", prefix=prefix)
    out: dict[str, float] = {}
    try:
        server.wait_ready(START_TIMEOUT)
        scenarios = [peers.SCENARIOS[s] for s in args.scenarios]
        problems = peers.check_server(server.port, scenarios)
        for sc in scenarios:
            if sc.name in problems:
                print(f"{name} {sc.name}: SKIPPED: {problems[sc.name]}", flush=True)
                continue
            wrk(server.port, sc, 1)  # warm-up: caches, the first request's imports
            pids = group_pids(server.proc.pid)
            control("-z", pids)
            numbers = wrk(server.port, sc, args.seconds)
            before = len(list(work.glob(f"{name}.*.out.*")))
            control("-d", pids)
            wait_for_dumps(work, name, before + len(pids))
            requests = int(numbers.get("requests", 0))
            total = dumped_total(work, name)
            if requests and total:
                out[sc.name] = total / requests
                print(f"{name:<22} {sc.name:<14} {requests:>7} requests "
                      f"{total / requests:>10,.0f} instructions each", flush=True)  # fmt: skip
            else:
                print(f"{name} {sc.name}: NOT MEASURED ({requests} requests, {total} "
                      f"instructions dumped)", flush=True)  # fmt: skip
    except peers.ServerFailed as exc:
        print(f"{name}: FAILED to start under valgrind: {exc}\n{server.log_tail()}", flush=True)
    finally:
        server.stop()
    return out


def report(args: argparse.Namespace, counts: dict[str, dict[str, float]]) -> str:
    lines = [
        f"Thousands of instructions per request (callgrind, the server's user-space code; "
        f"wrk -t1 -c{CONNECTIONS} for {args.seconds} s after 1 s of warm-up):",
        "",
        "| server | " + " | ".join(args.scenarios) + " |",
        "|---|" + "---:|" * len(args.scenarios),
    ]
    for name in args.servers:
        if name in args.missing:
            lines.append(f"| {name} | " + " | ".join("missing" for _ in args.scenarios) + " |")
            continue
        row = counts.get(name, {})
        cells = [f"{row[sc] / 1000:,.1f}" if sc in row else "–" for sc in args.scenarios]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    pairs = [(a, b) for _, a, b in peers.ALONGSIDE if a in counts and b in counts]
    pairs += [(a, b) for a, b in (("pyweb-asyncio", "pyweb-asyncio-handler"),
                                  ("pyweb", "pyweb-handler"),
                                  ("pyweb-handler", "pyweb-baseline"))
              if a in counts and b in counts]  # fmt: skip
    if pairs:
        lines += [
            "",
            "What one server would answer per request of the other, at equal instructions "
            "per second (the other's count over this one's):",
            "",
            "| scenario | " + " | ".join(f"{a} / {b}" for a, b in pairs) + " |",
            "|---|" + "---:|" * len(pairs),
        ]
        for sc in args.scenarios:
            cells = []
            for a, b in pairs:
                x, y = counts[a].get(sc), counts[b].get(sc)
                cells.append(f"{y / x:.2f}×" if x and y else "n/a")
            lines.append(f"| {sc} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--servers", default=",".join(DEFAULT_SERVERS))
    parser.add_argument("--scenarios", default=",".join(peers.DEFAULT_SCENARIOS))
    parser.add_argument("--seconds", type=int, default=4, help="wrk's measured run")
    parser.add_argument("--markdown", metavar="FILE", help="also write the tables to FILE")
    parser.add_argument(
        "--keep",
        metavar="DIR",
        help="copy callgrind's dumps to DIR, to read with callgrind_annotate (which function "
        "the instructions go to)",
    )
    parser.add_argument(
        "--baseline", metavar="DIR", help="checkout that the pyweb-baseline server runs"
    )
    args = parser.parse_args()
    peers.BASELINE_TREE = Path(args.baseline).resolve() if args.baseline else None
    args.servers = [s for s in args.servers.split(",") if s]
    args.scenarios = [s for s in args.scenarios.split(",") if s]
    for s in args.servers:
        if s not in peers.SERVERS:
            parser.error(f"unknown server {s!r}")
        if s.startswith("pyweb-baseline") and peers.BASELINE_TREE is None:
            parser.error(f"{s} needs --baseline DIR")
    for s in args.scenarios:
        if s not in peers.SCENARIOS:
            parser.error(f"unknown scenario {s!r}")
    if subprocess.run(["which", "valgrind"], capture_output=True).returncode:
        print("valgrind is not installed (apt-get install valgrind)")
        return 2
    peers.ensure_wrk()
    peers.ensure_peers_venv()
    args.missing = peers.missing_peers(args.servers)
    os.environ["BENCH_RATE_URL"] = peers.start_rate_server()
    counts: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="pyweb-callgrind-") as tmp:
        site = Path(tmp) / "site"
        site.mkdir()
        (site / peers.page.STATIC_NAME).write_bytes(peers.page.render(0))
        for name in args.servers:
            if name in args.missing:
                print(f"{name}: MISSING: {args.missing[name]}", flush=True)
                continue
            counts[name] = measure_server(args, name, str(site), Path(tmp))
            if args.keep:
                Path(args.keep).mkdir(parents=True, exist_ok=True)
                for dump in Path(tmp).glob(f"{name}.*.out*"):
                    shutil.copy(dump, args.keep)
    text = report(args, counts)
    print("\n" + text)
    if args.markdown:
        when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        command = " ".join(["benchmarks/peers_callgrind.py", *sys.argv[1:]])
        Path(args.markdown).write_text(f"Measured {when} with `{command}`.\n\n{text}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
