"""SMLserver's Table 1, reproduced on this machine (SMLserver §6).

The paper measured eight scripts (``hello``, ``date``, ``db``, ``guest``, ``calendar``,
``mul``, ``table``, ``log``) with ApacheBench, eight concurrent clients for 60 s, on:
MosML/MSP (CGI), AOLserver/TCL, Apache/PHP, SMLserver (column 4), SMLserver without script
caching (column 5) and SMLserver re-running library initialisation on every request
(column 6). This script measures the same eight pages on:

* ``pyweb``: ``pyweb serve pages`` in its default mode (column 4's role);
* ``pyweb --no-script-cache``: every request compiles its script again (column 5);
* ``pyweb --exec-library``: every request re-runs the site library's initialisation
  instead of restoring its snapshot (column 6);
* ``gunicorn+Flask`` and ``uvicorn+Starlette``: the same pages written for those
  frameworks (``apps/table1_peers.py``), in the role of the paper's PHP and TCL columns.

Every server runs one process pinned to CPU 0; wrk (8 connections, as ApacheBench's eight
threads) runs on CPU 1. The database is SQLite, a file prepared here with the tables of
``pages/schema.sql``, three guest book entries and 500 log rows. The paper's absolute
numbers come from an 850 MHz Pentium 3, so the table compares *shapes*: for each page, each
column divided by the default pyweb column, beside the paper's columns divided by its
SMLserver column.

Usage: .venv/bin/python benchmarks/table1.py [--short] [--duration S] [--rounds N]
                                             [--servers a,b] [--scripts x,y]
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import peers  # noqa: E402 - wrk, pinning, the peers' venv

ROOT = peers.ROOT
PAGES = ROOT / "pages"
SCRIPTS = ["hello", "date", "db", "guest", "calendar", "mul", "table", "log"]
DB_SCRIPTS = {"db", "guest", "log"}

# The paper's Table 1 (requests per second, 850 MHz Pentium 3).
PAPER_COLUMNS = ["MosML MSP", "AOLserver TCL", "Apache PHP", "SMLserver", "no script cache",
                 "library exec"]  # fmt: skip
PAPER = {
    "hello": [55, 724, 489, 1326, 916, 349],
    "date": [54, 855, 495, 1113, 744, 337],
    "db": [27, 558, 331, 689, 516, 275],
    "guest": [25, 382, 274, 543, 356, 249],
    "calendar": [36, 27, 37, 101, 69, 80],
    "mul": [50, 185, 214, 455, 300, 241],
    "table": [21, 59, 0.7, 93, 84, 75],
    "log": [8, 12, 0.4, 31, 30, 28],
}
SERVERS = {
    "pyweb": "pyweb serve pages (default: scripts cached, library snapshot restored)",
    "pyweb-no-script-cache": "pyweb serve pages --no-script-cache (paper column 5)",
    "pyweb-exec-library": "pyweb serve pages --exec-library (paper column 6)",
    "flask": "gunicorn + Flask, 1 sync worker (the PHP column's role)",
    "starlette": "uvicorn + Starlette, uvloop + httptools (the TCL column's role)",
}
PAPER_MATCH = {  # our column -> the paper's column it is compared with
    "pyweb": "SMLserver",
    "pyweb-no-script-cache": "no script cache",
    "pyweb-exec-library": "library exec",
    "flask": "Apache PHP",
    "starlette": "AOLserver TCL",
}
CONNECTIONS = 8


def prepare_database(path: Path) -> None:
    """The tables of pages/schema.sql (which fills the log with 500 rows) and the paper's
    three guest book entries."""
    connection = sqlite3.connect(path)
    with connection:
        connection.executescript((PAGES / "schema.sql").read_text())
        connection.executemany(
            "INSERT INTO guest (email, name, comment) VALUES (?, ?, ?)",
            [(f"guest{i}@example.org", f"Guest {i}", f"Comment number {i}") for i in range(3)],
        )
    connection.close()


def command(name: str, db: Path) -> tuple[list[str], Path]:
    """(command line with ``{port}`` for the port, working directory) of one server."""
    if name.startswith("pyweb"):
        flags = {"pyweb": [], "pyweb-no-script-cache": ["--no-script-cache"],
                 "pyweb-exec-library": ["--exec-library"]}[name]  # fmt: skip
        return [sys.executable, "-m", "pyweb", "serve", str(PAGES), "--host", peers.HOST,
                "--port", "{port}", "--access-log", "none", "--db", f"sqlite:///{db}",
                *flags], ROOT  # fmt: skip
    python = str(peers.PEERS_VENV / "bin" / "python")
    if name == "flask":
        return [python, "-m", "gunicorn", "--workers", "1", "--worker-class", "sync",
                "--bind", f"{peers.HOST}:{{port}}", "--log-level", "warning",
                "table1_peers:flask_app"], peers.APPS  # fmt: skip
    if name == "starlette":
        return [python, "-m", "uvicorn", "table1_peers:starlette_app", "--host", peers.HOST,
                "--port", "{port}", "--loop", "uvloop", "--http", "httptools",
                "--no-access-log", "--log-level", "warning"], peers.APPS  # fmt: skip
    raise ValueError(f"unknown server {name!r}")


def start(name: str, db: Path, log: Path, cpu: str | None) -> peers.RunningServer:
    argv, cwd = command(name, db)
    return peers.RunningServer(
        name, cpu, str(PAGES), log, command=argv, cwd=cwd, env={"TABLE1_DB": str(db)}
    )


def measure(cpu: str | None, port: int, script: str, seconds: float) -> tuple[float, str]:
    """req/s of ``script`` with 8 keep-alive connections, or 0 with the reason."""
    status, size, problem = peers.fetch(port, f"/{script}")
    if status != 200:
        return 0.0, f"status {status} {problem}".strip()
    out = subprocess.run(
        peers.pinned(cpu, ["wrk", "-t1", f"-c{CONNECTIONS}", f"-d{seconds:g}s", "--timeout",
                           "10s", f"http://{peers.HOST}:{port}/{script}"]),  # fmt: skip
        capture_output=True, text=True, timeout=seconds + 60,
    )  # fmt: skip
    result = peers.parse_wrk(out.stdout)
    errors = sum(result.get(f"err_{k}", 0) for k in ("connect", "read", "write", "timeout"))
    if result.get("non2xx") or errors:
        return 0.0, f"{result.get('non2xx')} non-2xx, {errors} socket errors"
    return float(result.get("rps", 0.0)), ""


def report(
    results: dict[tuple[str, str], list[float]], servers: list[str], scripts: list[str]
) -> str:
    med = {key: statistics.median(v) for key, v in results.items() if v}
    lines = ["### Requests per second (median of rounds; 8 connections)", ""]
    lines.append("| script | " + " | ".join(servers) + " |")
    lines.append("|---|" + "---:|" * len(servers))
    for script in scripts:
        cells = [f"{med[(s, script)]:,.0f}" if med.get((s, script)) else "failed" for s in servers]
        lines.append(f"| {script} | " + " | ".join(cells) + " |")
    lines += ["", "### Shapes: each column / the default pyweb column, beside the paper's "
              "column / its SMLserver column", ""]  # fmt: skip
    lines.append(
        "| script | " + " | ".join(f"{s} (paper: {PAPER_MATCH[s]})" for s in servers) + " |"
    )
    lines.append("|---|" + "---:|" * len(servers))
    smlserver = PAPER_COLUMNS.index("SMLserver")
    for script in scripts:
        base = med.get(("pyweb", script))
        cells = []
        for s in servers:
            ours = med.get((s, script))
            paper = PAPER[script][PAPER_COLUMNS.index(PAPER_MATCH[s])] / PAPER[script][smlserver]
            mine = f"{ours / base:.2f}" if ours and base else "—"
            cells.append(f"{mine} ({paper:.2f})")
        lines.append(f"| {script} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--servers", default=",".join(SERVERS))
    p.add_argument("--scripts", default=",".join(SCRIPTS))
    p.add_argument("--duration", type=float, default=5.0, help="seconds per measurement")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--short", action="store_true", help="1 round of 1 s (CI)")
    args = p.parse_args(argv)
    servers, scripts = args.servers.split(","), args.scripts.split(",")
    for s in servers:
        if s not in SERVERS:
            p.error(f"unknown server {s!r}; choose from {', '.join(SERVERS)}")
    for s in scripts:
        if s not in SCRIPTS:
            p.error(f"unknown script {s!r}; choose from {', '.join(SCRIPTS)}")
    if args.short:
        args.duration, args.rounds = 1.0, 1
    print(peers.ensure_wrk(), flush=True)
    if {"flask", "starlette"} & set(servers):
        peers.ensure_peers_venv()
    server_cpu, client_cpu = ("0", "1") if (os.cpu_count() or 1) > 1 else (None, None)
    results: dict[tuple[str, str], list[float]] = {}
    failed = False
    with tempfile.TemporaryDirectory(prefix="pyweb-table1-") as tmp:
        db = Path(tmp) / "table1.sqlite3"
        if DB_SCRIPTS & set(scripts):
            prepare_database(db)
        for round_ in range(1, args.rounds + 1):
            for name in servers:
                server = start(name, db, Path(tmp) / f"{name}.log", server_cpu)
                try:
                    server.wait_ready()
                    for script in scripts:
                        rps, problem = measure(client_cpu, server.port, script, args.duration)
                        results.setdefault((name, script), [])
                        if problem:
                            print(f"[round {round_}] {name:22} {script:9} FAILED: {problem}")
                            failed = failed or name == "pyweb"
                        else:
                            results[(name, script)].append(rps)
                            print(f"[round {round_}] {name:22} {script:9} {rps:9,.0f} req/s",
                                  flush=True)  # fmt: skip
                except peers.ServerFailed as exc:
                    print(f"[round {round_}] {name}: server failed: {exc}", flush=True)
                    failed = failed or name.startswith("pyweb")
                finally:
                    server.stop()
    print()
    print(report(results, servers, scripts))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
