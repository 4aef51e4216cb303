"""Runs the Autobahn WebSocket test suite against pyweb's own WebSocket server.

The Autobahn test suite (``wstest -m fuzzingclient``) is an independent implementation of
RFC 6455 that connects to a server's echo URL and plays a few hundred cases: framing,
fragmentation, pings and pongs, UTF-8 checks, the closing handshake, message sizes, and
permessage-deflate (RFC 7692). It judges each case OK, NON-STRICT, INFORMATIONAL,
UNIMPLEMENTED or FAILED and writes a JSON report. This script:

1. starts each server on a free port of 127.0.0.1, serving the echo of tests/autobahn/echo_site:
   ``pyweb serve`` on trio and on asyncio, and ``uvicorn pyweb.asgi:app``;
2. runs the suite (installed by install.sh for Python 2.7) against it, one server at a time,
   with a spec naming the cases (``--cases short``: sections 1-7 and 10 and a few cases of
   12 and 13; ``--cases all``: every case: about 70 s on pyweb's server for sections 1-11,
   many minutes more for the compressed echoes of 12 and 13);
3. reads the suite's report (reports/AGENT/index.json) and prints, per server, how many
   cases of each section got each verdict, then the FAILED cases with what the report says.

The exit status is 1 when a case FAILED (or got a verdict this script does not know), or
when a server did not start or the suite did not finish; UNIMPLEMENTED is printed but is
not a failure (permessage-deflate is optional in RFC 6455). ``make test-autobahn-short``
and ``make test-autobahn`` run it.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import socket
import subprocess
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
SITE = HERE / "echo_site"
PY27_PACKAGES = HERE / "py27"
REPORTS = HERE / "reports"  # run.py --reports DIR picks another
BIN = Path(sys.executable).parent

VERDICTS = ("OK", "NON-STRICT", "INFORMATIONAL", "UNIMPLEMENTED", "FAILED")
NOT_FAILED = {"OK", "NON-STRICT", "INFORMATIONAL", "UNIMPLEMENTED"}

# The CI selection: every case of the sections that take seconds, and a few of the
# permessage-deflate sections (12: compressed echo of growing sizes; 13: the parameters of
# the offer: none, no context takeover, a 9-bit window, both, a list of offers). Section 9
# (messages up to 16 MiB, thousands of frames) is the long one.
SHORT_CASES = [
    "1.*", "2.*", "3.*", "4.*", "5.*", "6.*", "7.*", "10.*",
    "12.1.1", "12.1.2", "12.1.3", "12.2.1",
    "13.1.1", "13.1.2", "13.2.1", "13.3.1", "13.5.1", "13.6.1", "13.7.1",
]  # fmt: skip

# Seconds the suite may take against one server before it counts as not finished.
LIMITS = {"short": 20 * 60, "all": 120 * 60}

# The echo accepts messages of 32 MiB (echo_site/echo_ws.py); uvicorn's own limit is 16 MiB by
# default, exactly the suite's largest message: give it the same room.
WS_MAX_SIZE = 32 * 1024 * 1024


def pyweb_serve(loop: str) -> Callable[[int], list[str]]:
    def command(port: int) -> list[str]:
        return [sys.executable, "-m", "pyweb", "serve", str(SITE), "--loop", loop,
                "--host", "127.0.0.1", "--port", str(port)]  # fmt: skip

    return command


def uvicorn(port: int) -> list[str]:
    return [str(BIN / "uvicorn"), "pyweb.asgi:app", "--host", "127.0.0.1", "--port", str(port),
            "--lifespan", "on", "--log-level", "warning", "--ws-max-size", str(WS_MAX_SIZE)]  # fmt: skip


SERVERS: dict[str, Callable[[int], list[str]]] = {
    "pyweb-trio": pyweb_serve("trio"),
    "pyweb-asyncio": pyweb_serve("asyncio"),
    "pyweb-asgi-uvicorn": uvicorn,
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def answers(port: int) -> bool:
    """True once the server answers a plain GET of the echo URL (426 Upgrade Required)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
            s.sendall(b"GET /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            return s.recv(16).startswith(b"HTTP/1.1 ")
    except OSError:
        return False


def start_server(agent: str, port: int, log: Path) -> subprocess.Popen[bytes]:
    env = dict(os.environ, PYWEB_SITE=str(SITE), PYWEB_SECRET_KEY=secrets.token_hex(32))
    with open(log, "wb") as out:
        proc = subprocess.Popen(SERVERS[agent](port), env=env, stdout=out,
                                stderr=subprocess.STDOUT)  # fmt: skip
    deadline = time.monotonic() + 60  # generous: the machine is shared
    while not answers(port):
        if proc.poll() is not None or time.monotonic() > deadline:
            stop_server(proc)
            raise RuntimeError(f"{agent} did not start (its output: {log})")
        time.sleep(0.1)
    return proc


def stop_server(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def wstest_command(spec: Path) -> list[str]:
    """wstest on Python 2.7 with install.sh's packages (addsitedir, not PYTHONPATH: zope
    is a namespace package declared by a .pth file)."""
    py27 = (PY27_PACKAGES / ".python").read_text().strip()
    launcher = (
        f"import site, sys; site.addsitedir({str(PY27_PACKAGES)!r}); sys.argv[0] = 'wstest'; "
        "from autobahntestsuite.wstest import run; run()"
    )
    return [py27, "-c", launcher, "-m", "fuzzingclient", "-s", str(spec)]


def run_suite(
    agent: str, cases: list[str], limit: float, reports: Path
) -> dict[str, dict[str, object]]:
    """Serve the echo with ``agent``, play ``cases`` against it; the report's cases."""
    out = reports / agent
    out.mkdir(parents=True, exist_ok=True)
    (out / "index.json").unlink(missing_ok=True)
    port = free_port()
    proc = start_server(agent, port, out / "server.log")
    try:
        spec = out / "spec.json"
        spec.write_text(json.dumps({
            "outdir": str(out),
            "servers": [{"agent": agent, "url": f"ws://127.0.0.1:{port}/echo"}],
            "cases": cases,
            "exclude-cases": [],
            "exclude-agent-cases": {},
        }, indent=2))  # fmt: skip
        started = time.monotonic()
        with open(out / "wstest.log", "wb") as log:
            try:
                subprocess.run(wstest_command(spec), cwd=out, stdout=log,
                               stderr=subprocess.STDOUT, timeout=limit, check=True)  # fmt: skip
            except subprocess.TimeoutExpired:
                raise RuntimeError(
                    f"the suite did not finish against {agent} in {limit:.0f} s"
                ) from None
            except subprocess.CalledProcessError as exc:
                raise RuntimeError(
                    f"wstest exited {exc.returncode} against {agent} (see {out / 'wstest.log'})"
                ) from None
        print(f"{agent}: {time.monotonic() - started:.0f} s on port {port}", flush=True)
        if proc.poll() is not None:
            raise RuntimeError(
                f"{agent} exited during the suite (its output: {out / 'server.log'})"
            )
    finally:
        stop_server(proc)
    index = json.loads((out / "index.json").read_text())
    if agent not in index or not index[agent]:
        raise RuntimeError(f"the report {out / 'index.json'} has no case for {agent}")
    return index[agent]  # type: ignore[no-any-return]


def section(case: str) -> int:
    return int(case.split(".")[0])


def case_key(case: str) -> tuple[int, ...]:
    return tuple(int(part) for part in case.split("."))


def summary(agent: str, results: dict[str, dict[str, object]], out: Path) -> list[str]:
    """Print the verdict counts per section; the cases that failed."""
    counts: dict[int, Counter[str]] = defaultdict(Counter)
    for case, result in results.items():
        counts[section(case)][str(result["behavior"])] += 1
    other = sorted({v for c in counts.values() for v in c} - set(VERDICTS))
    columns = list(VERDICTS) + other
    width = max(len(c) for c in columns)
    print(f"\n{agent}: {len(results)} cases")
    print("section " + " ".join(c.rjust(width) for c in columns))
    total: Counter[str] = Counter()
    for sec in sorted(counts):
        total.update(counts[sec])
        print(f"{sec:>7} " + " ".join(str(counts[sec][c]).rjust(width) for c in columns))
    print("  total " + " ".join(str(total[c]).rjust(width) for c in columns))
    failed = sorted(
        (c for c, r in results.items() if r["behavior"] not in NOT_FAILED), key=case_key
    )
    for case in failed:
        print(f"  {case} {results[case]['behavior']}: {describe(out, results[case])}")
    return failed


def describe(out: Path, result: dict[str, object]) -> str:
    """What the case's own report says: the expectation and what happened."""
    try:
        report = json.loads((out / str(result["reportfile"])).read_text())
    except (OSError, ValueError, KeyError):
        return "(no case report)"
    return (f"{report.get('description', '')} | expected: {report.get('expectation', '')} | "
            f"got: {report.get('result', '')} | close: {report.get('resultClose', '')}")  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", default="short",
                        help="'short' (CI's selection), 'all', or case ids such as 1.1.1,9.*")  # fmt: skip
    parser.add_argument("--reports", type=Path, default=REPORTS,
                        help="where the suite's reports go (one folder per server)")  # fmt: skip
    parser.add_argument("--servers", default=",".join(SERVERS),
                        help=f"comma-separated, of {', '.join(SERVERS)}")  # fmt: skip
    args = parser.parse_args()
    reports = args.reports.resolve()
    if not (PY27_PACKAGES / ".python").exists():
        print("run.py: the suite is not installed: bash tests/autobahn/install.sh", file=sys.stderr)
        return 2
    agents = args.servers.split(",")
    unknown = [a for a in agents if a not in SERVERS]
    if unknown:
        parser.error(f"unknown server {unknown[0]!r}: the servers are {', '.join(SERVERS)}")
    if args.cases == "short":
        cases, limit = SHORT_CASES, LIMITS["short"]
    elif args.cases == "all":
        cases, limit = ["*"], LIMITS["all"]
    else:
        cases, limit = args.cases.split(","), LIMITS["all"]
    problems = []
    for agent in agents:
        try:
            results = run_suite(agent, cases, limit, reports)
        except RuntimeError as exc:
            print(f"\n{agent}: DID NOT RUN: {exc}", flush=True)
            problems.append(f"{agent} did not run")
            continue
        failed = summary(agent, results, reports / agent)
        if failed:
            problems.append(f"{agent}: {len(failed)} FAILED ({', '.join(failed)})")
    print(f"\nreports: {reports}/AGENT/index.json (and the suite's HTML: index.html)")
    for problem in problems:
        print(f"FAILED: {problem}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
