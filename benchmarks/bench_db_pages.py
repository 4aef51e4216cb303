"""Table 1's database pages on PostgreSQL and MySQL: pyweb against gunicorn + Flask.

Run:  .venv/bin/python benchmarks/bench_db_pages.py [--short] [--duration S] [--rounds N]
                                                    [--databases postgresql,mysql]

For each reachable database (PostgreSQL at 127.0.0.1:5432 db ``test``, MariaDB at
127.0.0.1:3306), a schema (or database) of its own is filled with ``pages/schema.*.sql``
and three guest book entries, and these servers answer SMLserver's ``db``, ``guest`` and
``log`` pages (Table 1):

* ``pyweb``: ``pyweb serve pages --db URL`` (asyncpg or aiomysql on the driver thread);
* ``flask``: gunicorn + Flask, one sync worker, psycopg 3 or PyMySQL
  (``apps/db_peers.py``), installed into ``benchmarks/.venv-peers`` by this script.

Each server runs one process pinned to CPU 0, wrk (8 connections, as the paper's eight
ApacheBench threads) on CPU 1; the database server shares the two cores. Rounds are
interleaved and the table shows medians. For SQLite, ``benchmarks/table1.py`` has the same
pages against Flask and Starlette. Measured, never asserted: this machine is small and
shared; read the ratios.
"""

from __future__ import annotations

import argparse
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

import pyweb.testing  # noqa: E402
from pyweb import db, qq  # noqa: E402

PAGES = peers.ROOT / "pages"
DRIVERS = ["psycopg[binary]==3.3.9", "PyMySQL==1.2.4"]
DATABASES = {
    "postgresql": ("postgresql://postgres@127.0.0.1:5432/test", 5432),
    "mysql": ("mysql://root@127.0.0.1:3306/test", 3306),
}
PAGES_MEASURED = ["db", "guest", "log"]
SERVERS = ["pyweb", "flask"]
CONNECTIONS = 8


def reachable(port: int) -> bool:
    return pyweb.testing.reachable("127.0.0.1", port)


def ensure_drivers() -> None:
    python = str(peers.PEERS_VENV / "bin" / "python")
    check = subprocess.run([python, "-c", "import psycopg, pymysql"], capture_output=True)
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


def start(server: str, url: str, log: Path) -> tuple[subprocess.Popen[bytes], int, object]:
    port = peers.free_port()
    if server == "pyweb":
        argv = [sys.executable, "-m", "pyweb", "serve", str(PAGES), "--host", peers.HOST,
                "--port", str(port), "--access-log", "none", "--db", url]  # fmt: skip
        cwd = peers.ROOT
    else:
        argv = [str(peers.PEERS_VENV / "bin" / "python"), "-m", "gunicorn", "--workers", "1",
                "--worker-class", "sync", "--bind", f"{peers.HOST}:{port}",
                "--log-level", "warning", "db_peers:app"]  # fmt: skip
        cwd = peers.APPS
    out = open(log, "wb")  # noqa: SIM115 - closed by stop()
    proc = subprocess.Popen(
        peers.pinned("0", argv), cwd=cwd, stdout=out, stderr=subprocess.STDOUT,
        env=dict(os.environ, DB_PEERS_URL=url), start_new_session=True,
    )  # fmt: skip
    deadline = time.monotonic() + 30
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
    raise RuntimeError(f"{server} did not answer /db in 30 s: {log.read_text()[-800:]}")


def stop(proc: subprocess.Popen[bytes], out: object) -> None:
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(10)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        os.killpg(proc.pid, signal.SIGKILL)
    out.close()  # type: ignore[attr-defined]


def wrk(port: int, path: str, seconds: int) -> dict[str, float | int]:
    command = peers.pinned("1", ["wrk", "-t1", f"-c{CONNECTIONS}", f"-d{seconds}s", "--latency",
                                 "--timeout", "5s", f"http://{peers.HOST}:{port}{path}"])  # fmt: skip
    out = subprocess.run(command, capture_output=True, text=True, timeout=seconds + 30)
    return peers.parse_wrk(out.stdout)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--short", action="store_true", help="1 round of 2 s")
    parser.add_argument("--duration", type=int, default=5, help="seconds per measurement")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--databases", default="postgresql,mysql")
    args = parser.parse_args()
    duration, rounds = (2, 1) if args.short else (args.duration, args.rounds)
    peers.ensure_peers_venv()
    peers.ensure_wrk()
    ensure_drivers()
    results: dict[tuple[str, str, str], list[dict[str, float | int]]] = {}
    with tempfile.TemporaryDirectory(prefix="pyweb-bench-db-pages-") as tmp:
        for dialect in args.databases.split(","):
            admin_url, port = DATABASES[dialect]
            if not reachable(port):
                print(f"({dialect} at 127.0.0.1:{port} not reachable: skipped)")
                continue
            url, drop = prepare(dialect, admin_url)
            try:
                for _ in range(rounds):
                    for server in SERVERS:
                        proc, server_port, out = start(server, url, Path(tmp) / f"{server}.log")
                        try:
                            for page in PAGES_MEASURED:
                                wrk(server_port, "/" + page, 1)  # warm-up
                                result = wrk(server_port, "/" + page, duration)
                                results.setdefault((dialect, page, server), []).append(result)
                        finally:
                            stop(proc, out)
            finally:
                admin = db.Database(admin_url, pools=1, handles=1)
                trio.run(admin.dml, drop)
                admin.close()
    print(
        f"\nTable 1's database pages, req/s (median of {rounds} x {duration} s, wrk -c{CONNECTIONS})"
    )
    print(
        "| database | page | pyweb req/s | pyweb p99 ms | flask req/s | flask p99 ms | pyweb / flask | errors |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for (dialect, page, server), _ in sorted(results.items()):
        if server != "pyweb":
            continue
        ours, theirs = results[(dialect, page, "pyweb")], results.get((dialect, page, "flask"), [])

        def med(rs: list[dict[str, float | int]], key: str) -> float:
            return statistics.median(float(r.get(key, 0)) for r in rs) if rs else float("nan")

        errors = sum(int(r.get("non2xx", 0)) + int(r.get("err_timeout", 0)) for r in ours + theirs)
        a, b = med(ours, "rps"), med(theirs, "rps")
        print(
            f"| {dialect} | {page} | {a:.0f} | {med(ours, 'p99_ms'):.1f} | {b:.0f} | "
            f"{med(theirs, 'p99_ms'):.1f} | {a / b:.2f} | {errors} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
