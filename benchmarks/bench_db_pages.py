"""Table 1's database pages on PostgreSQL and MySQL: pyweb on both loops against its peers.

Run:  .venv/bin/python benchmarks/bench_db_pages.py [--short] [--duration S] [--rounds N]
          [--databases postgresql,mysql] [--servers a,b] [--markdown FILE] [--callgrind]

For each reachable database (PostgreSQL at 127.0.0.1:5432 db ``test``, MariaDB at
127.0.0.1:3306), a schema (or database) of its own is filled with ``pages/schema.*.sql``
and three guest book entries, and these servers answer SMLserver's ``db``, ``guest`` and
``log`` pages (Table 1), each page one query:

* ``pyweb``: ``pyweb serve pages --db URL`` on trio: asyncpg or aiomysql run on an asyncio
  loop in a thread of their own, each query handed across (the bridge);
* ``pyweb-asyncio``: the same with ``--loop asyncio``: the drivers on the server's own loop;
* ``starlette``: uvicorn + Starlette on asyncpg (``apps/db_starlette.py``), the same
  queries, a pool of as many connections as the pool a pyweb page takes its handle from
  (PostgreSQL only);
* ``flask``: gunicorn + Flask, one sync worker, psycopg 3 or PyMySQL (``apps/db_peers.py``).

The peers come from ``benchmarks/.venv-peers`` (installed by this script). Each server runs
one process pinned to CPU 1, wrk (8 connections, as the paper's eight ApacheBench threads)
on CPU 0; the database server shares the two cores, so these numbers are the noisiest of
the benchmarks. Rounds are interleaved (the order of the servers rotates), the tables show
medians and the median of the same-round ratios. Measured, never asserted: read the ratios.
For SQLite, ``benchmarks/table1.py`` has the same pages against Flask and Starlette.

``--callgrind`` counts instructions per request instead (one round, each server under
``valgrind --tool=callgrind``, as ``peers_callgrind.py`` does for the other pages): the
server's own work, all its threads (the trio bridge's loop thread too), not the database's.
It barely moves with the machine's load, so two runs (before and after a change) compare.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import http.client
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import trio

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
import peers  # noqa: E402 - wrk, pinning, the peers' venv
import peers_callgrind  # noqa: E402 - valgrind's counters for a server's processes

import pyweb.testing  # noqa: E402
from pyweb import db, qq  # noqa: E402

PAGES = peers.ROOT / "pages"
DRIVERS = ["psycopg[binary]==3.3.9", "PyMySQL==1.2.4", "asyncpg==0.32.0"]
DATABASES = {
    "postgresql": ("postgresql://postgres@127.0.0.1:5432/test", 5432),
    "mysql": ("mysql://root@127.0.0.1:3306/test", 3306),
}
PAGES_MEASURED = ["db", "guest", "log"]
SERVERS = ["pyweb", "pyweb-asyncio", "starlette", "flask"]
ONLY_ON = {"starlette": {"postgresql"}}  # the peers that speak to one database only
BASELINE = "starlette"  # the ratios' denominator (the issue's target is stated against it)
CONNECTIONS = 8
# A page takes its handle from the first of pyweb's pools (pyweb.db.configure's default
# handles per pool): the Starlette peer's asyncpg pool gets as many connections.
POOL_SIZE = 4

Result = dict[str, float | int]


def reachable(port: int) -> bool:
    return pyweb.testing.reachable("127.0.0.1", port)


def ensure_drivers(servers: list[str]) -> None:
    """The peers' drivers: all three for Flask, asyncpg alone for Starlette."""
    if "flask" not in servers and "starlette" not in servers:
        return
    modules = "psycopg, pymysql, asyncpg" if "flask" in servers else "asyncpg"
    python = str(peers.PEERS_VENV / "bin" / "python")
    check = subprocess.run([python, "-c", f"import {modules}"], capture_output=True)
    if check.returncode != 0:
        print(f"installing {', '.join(DRIVERS)} into the peers' venv ...", flush=True)
        subprocess.run([python, "-m", "pip", "install", "--quiet", *DRIVERS], check=True)


def prepare(dialect: str, admin_url: str) -> tuple[str, str]:
    """An isolated schema/database with the site's tables; (its URL, what to drop)."""
    name = "pyweb_bench_" + uuid.uuid4().hex[:8]
    admin = db.Database(admin_url, pools=1, handles=1)
    if dialect == "postgresql":
        url = f"{admin_url}?search_path={name}"
        trio.run(admin.dml, f"create schema {name}")
        drop = f"drop schema {name} cascade"
    else:
        url = admin_url.rsplit("/", 1)[0] + "/" + name
        trio.run(admin.dml, f"create database {name} character set utf8mb4")
        drop = f"drop database {name}"
    admin.close()
    target = db.Database(url, pools=1, handles=1)
    schema = db.schema_file(PAGES, dialect)
    assert schema is not None

    async def fill() -> None:
        await target.script(Path(schema).read_text())
        for i in range(3):
            await target.dml(
                qq(
                    "insert into guest (email, name, comment) values ({e}, {n}, {c})",
                    e=f"guest{i}@example.org",
                    n=f"Guest {i}",
                    c=f"Comment number {i}",
                )
            )

    trio.run(fill)
    target.close()
    return url, drop


def command(server: str, port: int, url: str) -> tuple[list[str], Path]:
    """The server's command line and the folder it runs in."""
    peer = str(peers.PEERS_VENV / "bin" / "python")
    if server.startswith("pyweb"):
        loop = "asyncio" if server == "pyweb-asyncio" else "trio"
        return [sys.executable, "-m", "pyweb", "serve", str(PAGES), "--host", peers.HOST,
                "--port", str(port), "--access-log", "none", "--db", url,
                "--loop", loop], peers.ROOT  # fmt: skip
    if server == "starlette":
        return [peer, "-m", "uvicorn", "db_starlette:app", "--host", peers.HOST,
                "--port", str(port), "--loop", "uvloop", "--http", "httptools",
                "--no-access-log", "--log-level", "warning"], peers.APPS  # fmt: skip
    return [peer, "-m", "gunicorn", "--workers", "1", "--worker-class", "sync",
            "--bind", f"{peers.HOST}:{port}", "--log-level", "warning",
            "db_peers:app"], peers.APPS  # fmt: skip


def start(
    server: str, url: str, log: Path, cpu: str | None, prefix: list[str] | None = None,
    timeout: float = 30.0,
) -> tuple[subprocess.Popen[bytes], int, object]:
    port = peers.free_port()
    argv, cwd = command(server, port, url)
    argv = [*(prefix or []), *argv]
    out = open(log, "wb")  # noqa: SIM115 - closed by stop()
    env = dict(os.environ, DB_PEERS_URL=url, DB_POOL_SIZE=str(POOL_SIZE),
               PYTHONPATH=str(peers.APPS))  # fmt: skip
    proc = subprocess.Popen(
        peers.pinned(cpu, argv), cwd=cwd, stdout=out, stderr=subprocess.STDOUT,
        env=env, start_new_session=True,
    )  # fmt: skip
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{server} exited: {log.read_text()[-800:]}")
        try:
            status, _, _ = peers.fetch(port, "/db")
            if status == 200:
                return proc, port, out
        except OSError:
            pass
        time.sleep(0.1)
    stop(proc, out)
    raise RuntimeError(f"{server} did not answer /db in {timeout:g} s: {log.read_text()[-800:]}")


def stop(proc: subprocess.Popen[bytes], out: object) -> None:
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(10)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    out.close()  # type: ignore[attr-defined]


def wrk(cpu: str | None, port: int, path: str, seconds: int) -> Result:
    command = peers.pinned(cpu, ["wrk", "-t1", f"-c{CONNECTIONS}", f"-d{seconds}s", "--latency",
                                 "--timeout", "5s", f"http://{peers.HOST}:{port}{path}"])  # fmt: skip
    out = subprocess.run(command, capture_output=True, text=True, timeout=seconds + 30)
    return peers.parse_wrk(out.stdout)


# (database, page, server) -> round -> wrk's numbers
Results = dict[tuple[str, str, str], dict[int, Result]]


def measure_database(
    args: argparse.Namespace, dialect: str, url: str, logs: Path, results: Results
) -> None:
    servers = [s for s in args.servers if dialect in ONLY_ON.get(s, {dialect})]
    for rnd in range(1, args.rounds + 1):
        k = (rnd - 1) % len(servers)
        for server in servers[k:] + servers[:k]:  # rotate: nobody is always first
            try:
                proc, port, out = start(server, url, logs / f"{server}-{rnd}.log", args.server_cpu)
            except RuntimeError as exc:
                print(f"[{dialect} round {rnd}] {server}: FAILED to start: {exc}", flush=True)
                continue
            try:
                for page in PAGES_MEASURED:
                    wrk(args.wrk_cpu, port, "/" + page, 1)  # warm-up: connections, caches
                    before = peers.CpuSample.take(proc.pid)
                    result = wrk(args.wrk_cpu, port, "/" + page, args.duration)
                    used, _, _ = peers.CpuSample.take(proc.pid).since(before)
                    rps = float(result.get("rps", 0))
                    result["cpu_us"] = used / rps * 1e6 if rps else 0.0
                    results.setdefault((dialect, page, server), {})[rnd] = result
                    bad = int(result.get("non2xx", 0)) + int(result.get("err_timeout", 0))
                    print(
                        f"[{dialect} round {rnd}] {server:<14} {page:<6} "
                        f"{float(result.get('rps', 0)):>8.0f} req/s  p99 "
                        f"{float(result.get('p99_ms', 0)):6.1f} ms  server CPU {used:4.2f}"
                        + (f"  !! {bad} errors" if bad else ""),
                        flush=True,
                    )
            finally:
                stop(proc, out)


def fixed_requests(port: int, path: str, count: int, connections: int = 2) -> int:
    """``count`` GETs of ``path`` over ``connections`` keep-alive connections at once; the
    number answered 200. A fixed count, not wrk's "as many as fit in S seconds": a request
    cut off at the end would count its instructions but not itself."""

    def client(n: int) -> int:
        connection = http.client.HTTPConnection(peers.HOST, port, timeout=120)
        ok = 0
        for _ in range(n):
            connection.request("GET", path)
            response = connection.getresponse()
            response.read()
            ok += response.status == 200
        connection.close()
        return ok

    share = [count // connections + (i < count % connections) for i in range(connections)]
    with concurrent.futures.ThreadPoolExecutor(connections) as pool:
        return sum(pool.map(client, share))


def callgrind_database(args: argparse.Namespace, dialect: str, url: str, work: Path) -> None:
    """Instructions per request of each server and page, under callgrind (one round)."""
    servers = [s for s in args.servers if dialect in ONLY_ON.get(s, {dialect})]
    for server in servers:
        prefix = ["valgrind", "--tool=callgrind", "--trace-children=yes", "--dump-instr=no",
                  f"--callgrind-out-file={work}/{server}.%p.out"]  # fmt: skip
        try:
            proc, port, out = start(server, url, work / f"{server}.log", None, prefix, 300.0)
        except RuntimeError as exc:
            print(f"[{dialect}] {server}: FAILED to start: {exc}", flush=True)
            continue
        try:
            for page in PAGES_MEASURED:
                requests = args.requests // 10 if page == "log" else args.requests
                fixed_requests(port, "/" + page, 20)  # warm-up: connections, caches, imports
                pids = peers_callgrind.group_pids(proc.pid)
                peers_callgrind.control("-z", pids)
                answered = fixed_requests(port, "/" + page, requests, args.connections)
                before = len(list(work.glob(f"{server}.*.out.*")))
                peers_callgrind.control("-d", pids)
                peers_callgrind.wait_for_dumps(work, server, before + len(pids))
                total = peers_callgrind.dumped_total(work, server)
                bad = requests - answered
                print(f"[{dialect}] {server:<14} {page:<6} {requests:>6} requests "
                      f"{total / requests:>12,.0f} instructions each"
                      + (f"  !! {bad} not 200" if bad else ""), flush=True)  # fmt: skip
        finally:
            stop(proc, out)


def table(args: argparse.Namespace, results: Results) -> str:
    def med(rs: dict[int, Result], key: str) -> float:
        return statistics.median(float(r.get(key, 0)) for r in rs.values())

    def same_round(a: dict[int, Result], b: dict[int, Result]) -> str:
        pairs = [float(a[r]["rps"]) / float(b[r]["rps"])
                 for r in a if r in b and a[r].get("rps") and b[r].get("rps")]  # fmt: skip
        return f"{statistics.median(pairs):.2f}×" if pairs else "n/a"

    lines = [
        f"Table 1's database pages: median req/s of {args.rounds} interleaved round(s) of "
        f"{args.duration} s, wrk -t1 -c{CONNECTIONS} on CPU {args.wrk_cpu}, each server on CPU "
        f"{args.server_cpu}; [×] is the median of the same-round ratios to uvicorn + Starlette "
        f"on asyncpg (pool of {POOL_SIZE}, as a pyweb page's pool); p99 in ms; CPU: the "
        "server's CPU time per request in µs (the database's own is not in it), steadier than "
        "req/s on a shared machine.",
        "",
        "| database | page | " + " | ".join(args.servers) + " | errors |",
        "|---|---|" + "---:|" * (len(args.servers) + 1),
    ]
    for dialect in args.databases:
        for page in PAGES_MEASURED:
            base = results.get((dialect, page, BASELINE), {})
            cells, errors, any_result = [], 0, False
            for server in args.servers:
                rs = results.get((dialect, page, server), {})
                if not rs:
                    cells.append("–")
                    continue
                any_result = True
                errors += sum(int(r.get("non2xx", 0)) + int(r.get("err_timeout", 0))
                              for r in rs.values())  # fmt: skip
                ratio = f" [{same_round(rs, base)}]" if base else ""
                cells.append(f"{med(rs, 'rps'):,.0f}{ratio}, p99 {med(rs, 'p99_ms'):.1f}, "
                             f"CPU {med(rs, 'cpu_us'):.0f}")  # fmt: skip
            if any_result:
                lines.append(f"| {dialect} | {page} | " + " | ".join(cells) + f" | {errors} |")
    return "\n".join(lines)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--short", action="store_true", help="1 round of 2 s")
    parser.add_argument("--duration", type=int, default=5, help="seconds per measurement")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--databases", default="postgresql,mysql")
    parser.add_argument("--servers", default=",".join(SERVERS), help=", ".join(SERVERS))
    parser.add_argument("--server-cpu", default="1", help="CPU for the servers (taskset -c)")
    parser.add_argument("--wrk-cpu", default="0", help="CPU for wrk (taskset -c)")
    parser.add_argument("--markdown", metavar="FILE", help="also write the table to FILE")
    parser.add_argument("--callgrind", action="store_true",
                        help="instructions per request under valgrind instead (see above)")
    parser.add_argument("--requests", type=int, default=400,
                        help="with --callgrind: requests per page (a tenth for log)")
    parser.add_argument("--connections", type=int, default=2,
                        help="with --callgrind: keep-alive connections at once (8, as wrk's, "
                        "makes requests wait for a handle of the pool of 4)")
    parser.add_argument("--keep", metavar="DIR",
                        help="with --callgrind: keep the dumps in DIR (for callgrind_annotate)")
    args = parser.parse_args()
    if args.short:
        args.duration, args.rounds = 2, 1
    args.databases = [d for d in args.databases.split(",") if d]
    args.servers = [s for s in args.servers.split(",") if s]
    for s in args.servers:
        if s not in SERVERS:
            parser.error(f"unknown server {s!r}; choose from {', '.join(SERVERS)}")
    return args


def main() -> int:
    args = parse_args()
    peers.ensure_peers_venv()
    peers.ensure_wrk()
    ensure_drivers(args.servers)
    results: Results = {}
    with tempfile.TemporaryDirectory(prefix="pyweb-bench-db-pages-") as tmp:
        for dialect in list(args.databases):
            admin_url, port = DATABASES[dialect]
            if not reachable(port):
                print(f"({dialect} at 127.0.0.1:{port} not reachable: skipped)")
                continue
            url, drop = prepare(dialect, admin_url)
            try:
                if args.callgrind:
                    work = Path(args.keep or tmp)
                    work.mkdir(parents=True, exist_ok=True)
                    callgrind_database(args, dialect, url, work)
                else:
                    measure_database(args, dialect, url, Path(tmp), results)
            finally:
                admin = db.Database(admin_url, pools=1, handles=1)
                trio.run(admin.dml, drop)
                admin.close()
    if args.callgrind:
        return 0
    text = table(args, results)
    print("\n" + text)
    if args.markdown:
        when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        command = " ".join(["benchmarks/bench_db_pages.py", *sys.argv[1:]])
        Path(args.markdown).write_text(f"Measured {when} with `{command}`.\n\n{text}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
