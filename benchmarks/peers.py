"""Whole-server comparison of pyweb with its peers (Hop §4.3, Marlow §7).

Runs each server as a subprocess pinned to one core (``taskset -c 1``) with wrk pinned to
the other (``taskset -c 0``; ``wrk -t1 -c32``, 2 s of warm-up, then 6 s measured), and
measures these scenarios against every server (the first six by default):

* ``hello``: "Hello, world!" on keep-alive connections;
* ``hello-close``: the same, with ``Connection: close``, so one TCP connection per request;
* ``static``: a 984-byte file served from disk by the server's static-file machinery;
* ``dynamic``: a 984-byte HTML page computed per request (Hop's pair with ``static``: the
  static file is exactly the dynamic page's output);
* ``page-hello``, ``service-hello``, ``page-guess``, ``service-guess``: SMLserver's hello
  and guessing game (one guess), as pyweb page scripts and as typed services, against the
  same work written in each peer's own idiom.

pyweb is measured as users write it: ``apps/pyweb_app.py`` writes a site folder (a script
page per URL, the example site's pages and services, the static file) and runs ``pyweb
serve`` on it, on trio (``pyweb``) and on asyncio with uvloop (``pyweb-asyncio``). The
peers, each an app in ``apps/``: uvicorn (uvloop + httptools) on a raw ASGI app and with
Starlette, granian (one worker, one runtime thread) on the same raw ASGI app and on its own
RSGI interface, a minimal hand-written trio server (``raw-trio``) and a minimal asyncio
Protocol server on uvloop (``raw-uvloop``): the upper bounds of a Python server on each
loop. pyweb's server alone, a handler below the page layer on each loop (``pyweb-handler``,
``pyweb-asyncio-handler``), is measured too: its distance from the pages is what the page
layer costs, and its distance from the raw server what the server costs. hypercorn (trio
worker), gunicorn + Flask and ``raw-uvloop-task`` can be added with ``--servers``. The
peers are installed by this script into their own venv, ``benchmarks/.venv-peers``, never
into the project's; pyweb runs on the project's venv. A peer that cannot be installed is
reported as missing, one that fails to start as failed; neither stops the run. Every server
runs one worker process with access logs off.

Rounds are interleaved (round 1 measures every server on every scenario, then round 2, ...),
each server is started fresh in each round, and the tables report medians over rounds, and
ratios as the median of the same-round ratios (server / peer measured in the same round), as
the issue's targets are stated. ``--markdown FILE`` also writes the tables to FILE.

Usage: .venv/bin/python benchmarks/peers.py [--short] [--servers a,b] [--scenarios x,y]
                                            [--rounds N] [--duration S] [--retries N]
                                            [--markdown FILE]
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import platform
import re
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
APPS = HERE / "apps"
PEERS_VENV = HERE / ".venv-peers"
RESULTS = HERE / "results"
# The example site has POST forms (CSRF tokens live in signed sessions), so outside --dev it
# needs a secret key: the benchmarks' servers share this one unless the caller gives theirs.
os.environ.setdefault("PYWEB_SECRET_KEY", "benchmarks-only-key-not-a-secret-0123")
sys.path.insert(0, str(APPS))
import page  # noqa: E402 - the apps' shared page, to write the static file

# Pinned so that numbers from different days compare; bump them together, on purpose.
PEER_REQUIREMENTS = [
    "uvicorn==0.54.0",
    "uvloop==0.23.0",
    "httptools==0.9.0",
    "hypercorn==0.18.0",
    "trio==0.35.0",
    "gunicorn==27.0.1",
    "flask==3.1.3",
    "starlette==1.10.0",  # uvicorn + Starlette; table1.py: Table 1's pages for Starlette
]
# Installed one by one after the others: when one cannot be installed (no wheel for this
# platform, no network), its servers are reported as missing and the rest still run.
OPTIONAL_REQUIREMENTS = ["granian==2.8.7", "asyncpg==0.32.0"]
PEER_DISTRIBUTIONS = [
    "uvicorn", "uvloop", "httptools", "hypercorn", "trio", "gunicorn", "flask", "starlette",
    "granian", "asyncpg",
]  # fmt: skip

HOST = "127.0.0.1"
WRK_THREADS = 1  # wrk has one core, so one thread
WRK_CONNECTIONS = 32  # concurrent connections: enough to keep one server core busy
WARMUP_SECONDS = 2  # seconds of wrk before each measurement, thrown away (--short: 1)
START_TIMEOUT = 20.0
BASELINE = "uvicorn"


@dataclass(frozen=True)
class Scenario:
    name: str
    title: str
    path: str
    body_size: int
    wrk_args: tuple[str, ...] = ()
    pyweb_only: bool = False  # the peers have no counterpart (yet): measured for pyweb only


SCENARIOS = {
    s.name: s
    for s in [
        Scenario("hello", "hello, keep-alive", "/hello", len(page.HELLO)),
        Scenario(
            "hello-close",
            "hello, one connection per request",
            "/hello",
            len(page.HELLO),
            ("-H", "Connection: close"),
        ),
        Scenario("static", "984-byte static file, keep-alive", "/" + page.STATIC_NAME, 984),
        Scenario("dynamic", "984-byte dynamic page, keep-alive", "/dynamic", 984),
        # SMLserver's hello and guessing game, as page scripts and as services
        # (pyweb runs pages/hello.py, pages/guess.py and pages/hop_services.py; the peers
        # do the same work in their own idiom). Body sizes differ by a few bytes between
        # servers, so only the status and a non-empty body are checked (body_size -1).
        Scenario("page-hello", "hello page as a script (pages/hello.py)", "/page/hello", -1),
        Scenario("service-hello", "hello as a service (Hop's hello-ast)", "/svc/hello", -1),
        Scenario(
            "page-guess",
            "guessing game as a script, one guess",
            "/page/guess?" + page.GUESS_QUERY,
            -1,
        ),
        Scenario(
            "service-guess",
            "guessing game as a typed service, one guess",
            "/svc/guess?" + page.GUESS_QUERY,
            -1,
        ),
        # SMLserver §3's currency exchange with its TimeOut(300) cache warm (the
        # check before measuring fetches the rate once, from the harness's rate server,
        # start_rate_server; the peers cache it in a dict with the same 300 s timeout).
        Scenario(
            "page-exchange",
            "currency exchange page, warm cache",
            "/page/exchange?a=100",
            -1,
        ),
    ]
}

# The scenarios; page-guess, service-guess and page-exchange with --scenarios.
DEFAULT_SCENARIOS = ["hello", "hello-close", "dynamic", "static", "page-hello", "service-hello"]

SERVERS = {
    "uvicorn": "uvicorn --loop uvloop --http httptools, raw ASGI app (apps/asgi_app.py)",
    "uvicorn-starlette": "uvicorn --loop uvloop --http httptools, Starlette (apps/starlette_app.py)",
    "granian-asgi": "granian --interface asgi, 1 worker, 1 runtime thread, raw ASGI app",
    "granian-rsgi": "granian --interface rsgi, 1 worker, 1 runtime thread (apps/rsgi_app.py)",
    "raw-trio": "minimal hand-written trio server (apps/raw_trio.py), upper bound on trio",
    "raw-uvloop": "minimal asyncio Protocol server on uvloop (apps/raw_uvloop.py), upper bound",
    "raw-uvloop-task": "raw-uvloop answering from a task per connection woken by a future "
    "(apps/raw_uvloop.py --task): what that wake costs",
    "pyweb": "pyweb serve SITE: script pages, services, static files, on trio (apps/pyweb_app.py)",
    "pyweb-asyncio": "pyweb serve SITE --loop asyncio: the same site on asyncio with uvloop",
    "hypercorn": "hypercorn --worker-class trio, raw ASGI app, 1 worker",
    "gunicorn": "gunicorn + Flask, 1 sync worker",
    "pyweb-pool": "pyweb serve SITE --scheduler pool (16 tasks)",
    "pyweb-nothread": "pyweb serve SITE --scheduler nothread",
    "pyweb-handler": "pyweb.server.Server with a handler below the page layer, trio "
    "(apps/pyweb_handler.py): what the page layer costs, by difference",
    "pyweb-asyncio-handler": "the same handler on the asyncio server",
    "pyweb-compiled": "pyweb with its modules compiled by mypyc (make compiled: build/mypyc)",
    "pyweb-asyncio-compiled": "pyweb-asyncio with the mypyc-compiled modules",
    "pyweb-asyncio-py312": "pyweb-asyncio on Python 3.12 (build/py312, make py312-env)",
    "pyweb-baseline": "pyweb as in the checkout given with --baseline DIR (before/after in one run)",
    "pyweb-baseline-asyncio": "pyweb-baseline with --loop asyncio",
    "pyweb-baseline-noarena": "pyweb-baseline with PYWEB_ARENA=0: the no-arena path of checkouts "
    "that had one (before the one reply path; docs/regions.md)",
}
# The frameworks users pick, each on the server its docs deploy it with, one worker, each in
# a venv of its own (benchmarks/.venv-frameworks/NAME: their pins would clash in one), with
# the versions pinned here. Flask (gunicorn) and Starlette are the rows above.
FRAMEWORKS: dict[str, tuple[str, list[str]]] = {
    "fastapi": ("FastAPI on uvicorn (apps/fw_fastapi.py)",
                ["fastapi==0.163.2", "uvicorn==0.54.0", "uvloop==0.23.0", "httptools==0.9.0"]),
    "litestar": ("Litestar on uvicorn (apps/fw_litestar.py)",
                 ["litestar==2.25.0", "uvicorn==0.54.0", "uvloop==0.23.0", "httptools==0.9.0"]),
    "sanic": ("Sanic on its own server, single process (apps/fw_sanic.py)", ["sanic==25.12.1"]),
    "blacksheep": ("BlackSheep on uvicorn (apps/fw_blacksheep.py)",
                   ["blacksheep==2.6.4", "uvicorn==0.54.0", "uvloop==0.23.0",
                    "httptools==0.9.0"]),
    "falcon": ("Falcon's ASGI app on uvicorn (apps/fw_falcon.py)",
               ["falcon==4.4.0", "uvicorn==0.54.0", "uvloop==0.23.0", "httptools==0.9.0"]),
    "emmett": ("Emmett on granian RSGI, emmett serve (apps/fw_emmett.py)", ["emmett==2.8.2"]),
    "robyn": ("Robyn on its Rust runtime, 1 process 1 worker (apps/fw_robyn.py)",
              ["robyn==0.88.0"]),
    "django": ("Django's ASGI handler on uvicorn, startproject's middleware, WhiteNoise "
               "(apps/fw_django.py)",
               ["django==5.2.19", "whitenoise==6.12.0", "uvicorn==0.54.0", "uvloop==0.23.0",
                "httptools==0.9.0"]),
}  # fmt: skip
FRAMEWORKS_VENVS = HERE / ".venv-frameworks"
FRAMEWORK_ROWS = ["fastapi", "litestar", "sanic", "blacksheep", "falcon", "emmett", "robyn",
                  "django", "gunicorn", "uvicorn-starlette"]  # fmt: skip
"""The frameworks table's rows (Flask on gunicorn and Starlette on uvicorn are peers too)."""
# Where a framework serves the static file when it cannot serve it at the site's root.
STATIC_PATHS = {
    "litestar": "/files/" + page.STATIC_NAME,
    "falcon": "/files/" + page.STATIC_NAME,
    "robyn": "/files/" + page.STATIC_NAME,
    "emmett": "/static/" + page.STATIC_NAME,
}
for _name, (_what, _) in FRAMEWORKS.items():
    SERVERS[_name] = _what
BASELINE_TREE: Path | None = None
COMPILED_TREE = ROOT / "build" / "mypyc"
"""``make compiled``'s copy of pyweb with the mypyc-compiled modules (``pyweb-compiled``)."""
PY312_VENV = ROOT / "build" / "py312"
"""``make py312-env``'s Python 3.12 venv (``pyweb-asyncio-py312``)."""
"""``--baseline DIR``: another checkout of pyweb (e.g. ``git worktree add /tmp/before main``,
its C extension built in place) that ``pyweb-baseline`` runs, to compare a change with the
code before it in the same run."""
DEFAULT_SERVERS = [
    "uvicorn", "uvicorn-starlette", "granian-asgi", "granian-rsgi",
    "raw-trio", "raw-uvloop", "pyweb", "pyweb-asyncio",
    "pyweb-handler", "pyweb-asyncio-handler",  # the server alone: what pages leave to gain
]  # fmt: skip
PYWEB_ROWS = ("pyweb", "pyweb-asyncio")  # a failure of these fails the run (CI)

# What each peer needs in benchmarks/.venv-peers: without it, the peer is "missing".
PEER_MODULES = {
    "uvicorn": "uvicorn", "uvicorn-starlette": "starlette", "granian-asgi": "granian",
    "granian-rsgi": "granian", "raw-uvloop": "uvloop", "raw-uvloop-task": "uvloop",
    "hypercorn": "hypercorn", "gunicorn": "flask",
}  # fmt: skip


def _uvicorn(app: str, port: int) -> list[str]:
    return [str(PEERS_VENV / "bin" / "python"), "-m", "uvicorn", app, "--host", HOST,
            "--port", str(port), "--loop", "uvloop", "--http", "httptools",
            "--no-access-log", "--log-level", "warning"]  # fmt: skip


def _granian(interface: str, app: str, port: int) -> list[str]:
    # One worker process with one runtime thread: one core's worth of server, as for the
    # others (taskset pins them anyway). No access log is granian's default.
    return [str(PEERS_VENV / "bin" / "python"), "-m", "granian", "--interface", interface,
            "--host", HOST, "--port", str(port), "--workers", "1", "--runtime-threads", "1",
            "--runtime-mode", "st", "--loop", "uvloop", "--http", "1", "--no-ws",
            "--log-level", "warning", app]  # fmt: skip


def framework_command(name: str, port: int) -> list[str]:
    """How each framework's docs run it in production, on one worker."""
    python = str(FRAMEWORKS_VENVS / name / "bin" / "python")
    if name in ("fastapi", "litestar", "blacksheep", "falcon", "django"):
        return [python, "-m", "uvicorn", f"fw_{name}:app", "--host", HOST, "--port", str(port),
                "--loop", "uvloop", "--http", "httptools", "--no-access-log",
                "--log-level", "warning"]  # fmt: skip
    if name == "sanic":
        return [python, "-m", "sanic", "fw_sanic:app", "--host", HOST, "--port", str(port),
                "--single-process", "--no-access-logs"]  # fmt: skip
    if name == "emmett":
        return [python, "-m", "emmett", "--app", "fw_emmett", "serve", "--host", HOST,
                "--port", str(port), "--workers", "1", "--log-level", "warning"]  # fmt: skip
    if name == "robyn":
        return ["env", f"BENCH_PORT={port}", f"BENCH_HOST={HOST}", python, "fw_robyn.py",
                "--processes", "1", "--workers", "1", "--log-level", "WARN"]  # fmt: skip
    raise ValueError(f"unknown framework {name!r}")


def scenario_for(sc: Scenario, server: str) -> Scenario:
    """``sc`` as ``server`` answers it: a framework may serve the static file elsewhere."""
    if sc.name == "static" and server in STATIC_PATHS:
        return dataclasses.replace(sc, path=STATIC_PATHS[server])
    return sc


def server_command(name: str, port: int) -> list[str]:
    """The command line that starts ``name`` on ``port``, run from benchmarks/apps/."""
    peers = str(PEERS_VENV / "bin" / "python")
    project = sys.executable
    if name in FRAMEWORKS:
        return framework_command(name, port)
    if name == "uvicorn":
        return _uvicorn("asgi_app:app", port)
    if name == "uvicorn-starlette":
        return _uvicorn("starlette_app:app", port)
    if name == "granian-asgi":
        return _granian("asgi", "asgi_app:app", port)
    if name == "granian-rsgi":
        return _granian("rsgi", "rsgi_app:app", port)
    if name in ("raw-uvloop", "raw-uvloop-task"):
        task = ["--task"] if name == "raw-uvloop-task" else []
        return [peers, "raw_uvloop.py", "--host", HOST, "--port", str(port), *task]
    if name == "hypercorn":
        # hypercorn writes no access log unless --access-logfile is given.
        return [peers, "-m", "hypercorn", "--worker-class", "trio", "--workers", "1",
                "--bind", f"{HOST}:{port}", "--log-level", "warning", "asgi_app:app"]  # fmt: skip
    if name == "gunicorn":
        # gunicorn writes no access log unless --access-logfile is given.
        return [peers, "-m", "gunicorn", "--workers", "1", "--worker-class", "sync",
                "--bind", f"{HOST}:{port}", "--log-level", "warning", "flask_app:app"]  # fmt: skip
    if name == "raw-trio":
        return [project, "raw_trio.py", "--host", HOST, "--port", str(port)]
    if name.startswith("pyweb-baseline"):
        if BASELINE_TREE is None:
            raise ValueError("pyweb-baseline needs --baseline DIR")
        apps = BASELINE_TREE / "benchmarks" / "apps"
        arena = "0" if name.endswith("-noarena") else "1"
        loop = ["--loop", "asyncio"] if name.endswith("-asyncio") else []  # (older: trio only)
        return ["env", f"PYTHONPATH={BASELINE_TREE}:{apps}", f"PYWEB_ARENA={arena}",
                project, str(apps / "pyweb_app.py"),
                "--host", HOST, "--port", str(port), "--scheduler", "one-to-one", *loop]  # fmt: skip
    if name.endswith("-compiled"):
        # build/mypyc first on the path: its compiled modules win over the plain ones
        plain = name.removesuffix("-compiled")
        return ["env", f"PYTHONPATH={COMPILED_TREE}", *server_command(plain, port)]
    if name == "pyweb-asyncio-py312":
        return [str(PY312_VENV / "bin" / "python"), *server_command("pyweb-asyncio", port)[1:]]
    if name.startswith("pyweb"):
        scheduler = {"pyweb-pool": "pool", "pyweb-nothread": "nothread"}.get(name, "one-to-one")
        loop = "asyncio" if name.startswith("pyweb-asyncio") else "trio"
        app = "pyweb_handler.py" if name.endswith("-handler") else "pyweb_app.py"
        return [project, app, "--host", HOST, "--port", str(port),
                "--scheduler", scheduler, "--loop", loop]  # fmt: skip
    raise ValueError(f"unknown server {name!r}")


def missing_peers(names: list[str]) -> dict[str, str]:
    """Servers whose package is not in the peers' venv: name -> why (reported, not run)."""
    python = PEERS_VENV / "bin" / "python"
    out = {}
    for name in names:
        if name in FRAMEWORKS:
            stamp = FRAMEWORKS_VENVS / name / ".installed"
            if not stamp.exists():
                out[name] = f"not installed in {FRAMEWORKS_VENVS.relative_to(ROOT)}/{name}"
            continue
        module = PEER_MODULES.get(name)
        if module is None:
            continue
        if not python.exists():
            out[name] = f"no {PEERS_VENV.relative_to(ROOT)}"
            continue
        check = subprocess.run([str(python), "-c", f"import {module}"], capture_output=True)
        if check.returncode != 0:
            out[name] = f"{module} not installed in {PEERS_VENV.relative_to(ROOT)}"
    return out


# --- set-up: peers venv and wrk ------------------------------------------------------------


def ensure_peers_venv() -> dict[str, str]:
    """Create benchmarks/.venv-peers with the pinned peers (once); return their versions.

    The optional peers (``OPTIONAL_REQUIREMENTS``) are installed one by one and a failure is
    only reported: their servers show as missing. The stamp is written when all went in, so
    a later run tries the missing ones again."""
    python = PEERS_VENV / "bin" / "python"
    stamp = PEERS_VENV / ".installed"
    wanted = "\n".join(PEER_REQUIREMENTS + OPTIONAL_REQUIREMENTS) + "\n"
    if not (python.exists() and stamp.exists() and stamp.read_text() == wanted):
        print(f"installing the peers into {PEERS_VENV.relative_to(ROOT)} ...", flush=True)
        if not python.exists():
            subprocess.run([sys.executable, "-m", "venv", str(PEERS_VENV)], check=True)
        pip = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
        subprocess.run([*pip, *PEER_REQUIREMENTS], check=True)
        failed = [r for r in OPTIONAL_REQUIREMENTS if subprocess.run([*pip, r]).returncode]
        if failed:
            print(f"could not install {', '.join(failed)}: those peers are missing", flush=True)
        else:
            stamp.write_text(wanted)
    code = (
        "import importlib.metadata as m, json\n"
        "v = {}\n"
        f"for d in {PEER_DISTRIBUTIONS!r}:\n"
        "    try: v[d] = m.version(d)\n"
        "    except m.PackageNotFoundError: v[d] = 'missing'\n"
        "print(json.dumps(v))"
    )
    out = subprocess.run([str(python), "-c", code], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def ensure_frameworks(names: list[str]) -> dict[str, str]:
    """Install each framework of ``names`` into its own venv (once); return their versions.
    One that cannot be installed is reported and shows as missing."""
    versions = {}
    for name in names:
        if name not in FRAMEWORKS:
            continue
        requirements = FRAMEWORKS[name][1]
        venv = FRAMEWORKS_VENVS / name
        stamp = venv / ".installed"
        wanted = "\n".join(requirements) + "\n"
        if not (stamp.exists() and stamp.read_text() == wanted):
            print(f"installing {name} into {venv.relative_to(ROOT)} ...", flush=True)
            if not (venv / "bin" / "python").exists():
                subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
            pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet",
                   "--disable-pip-version-check", *requirements]  # fmt: skip
            if subprocess.run(pip).returncode != 0:
                print(f"could not install {name}: it is missing from the tables", flush=True)
                continue
            stamp.write_text(wanted)
        versions[name] = requirements[0].split("==")[1]
    return versions


def ensure_wrk() -> str:
    """wrk on PATH, installed with apt-get if missing (its version line is returned)."""
    if shutil.which("wrk") is None:
        print("wrk is not on PATH: running apt-get install -y wrk", flush=True)
        if subprocess.run(["apt-get", "install", "-y", "wrk"]).returncode != 0:
            print("apt-get install failed: running apt-get update first", flush=True)
            subprocess.run(["apt-get", "update"], check=True)
            subprocess.run(["apt-get", "install", "-y", "wrk"], check=True)
    out = subprocess.run(["wrk", "-v"], capture_output=True, text=True)
    return (out.stdout + out.stderr).splitlines()[0].strip()


def project_versions() -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for dist in ("trio", "h11", "httptools"):
        with contextlib.suppress(Exception):
            import importlib.metadata

            versions[dist] = importlib.metadata.version(dist)
    git = subprocess.run(
        ["git", "-C", str(ROOT), "describe", "--always", "--dirty"], capture_output=True, text=True
    )
    versions["pyweb (git)"] = git.stdout.strip() or "unknown"
    return versions


def machine() -> dict[str, str]:
    model = "unknown"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return {"cpus": str(os.cpu_count()), "cpu": model, "kernel": platform.release()}


# --- running servers -----------------------------------------------------------------------


def start_rate_server() -> str:
    """The exchange page's "foreign site": a tiny HTTP server in a thread of this process
    answering :data:`page.RATE_PAGE`, shared by every server under test (a server asking
    itself would deadlock gunicorn's single sync worker). Returns its URL."""
    import http.server
    import threading

    class RatePage(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the http.server spelling
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(page.RATE_PAGE)))
            self.end_headers()
            self.wfile.write(page.RATE_PAGE)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer((HOST, 0), RatePage)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://{HOST}:{server.server_address[1]}/rate"


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def add_core_arguments(parser: argparse.ArgumentParser) -> None:
    """``--server-cpu`` and ``--wrk-cpu``, for the benchmarks that pin as this one does."""
    parser.add_argument("--server-cpu", default="1", help="CPU for the servers (taskset -c)")
    parser.add_argument("--wrk-cpu", default="0", help="CPU for wrk (taskset -c)")


def unpinned_on_one_core(args: argparse.Namespace) -> None:
    """On a one-core machine nothing is pinned: the numbers only compare with each other."""
    if os.cpu_count() == 1:
        args.server_cpu = args.wrk_cpu = None


def pinned(cpu: str | None, command: list[str]) -> list[str]:
    return command if cpu is None else ["taskset", "-c", cpu, *command]


class ServerFailed(Exception):
    pass


class RunningServer:
    """A server subprocess in its own process group, so that stop() also ends its workers."""

    def __init__(
        self,
        name: str,
        cpu: str | None,
        site_dir: str,
        log_path: Path,
        *,
        command: list[str] | None = None,
        cwd: Path = APPS,
        env: dict[str, str] | None = None,
        prefix: list[str] | None = None,
    ) -> None:
        """Start ``name`` (``server_command``), or ``command`` with ``{port}`` in its
        arguments replaced by the chosen port (other benchmarks' servers, table1.py);
        ``prefix`` goes before it (valgrind, for peers_callgrind.py)."""
        self.name = name
        self.port = free_port()
        self.log_path = log_path
        if command is None:
            argv = server_command(name, self.port)
        else:
            argv = [arg.replace("{port}", str(self.port)) for arg in command]
        argv = [*(prefix or []), *argv]
        # This tree's pyweb first (the venv's editable install may point at another
        # checkout: a worktree measures its own code), then the apps.
        path = f"{ROOT}{os.pathsep}{APPS}"
        environment = dict(os.environ, BENCH_SITE_DIR=site_dir, PYTHONPATH=path, **(env or {}))
        self._log = open(log_path, "wb")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            pinned(cpu, argv),
            cwd=cwd,
            env=environment,
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def wait_ready(self, timeout: float = START_TIMEOUT) -> None:
        """Poll the port with connect() until the server listens (or died, or took too long)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise ServerFailed(f"exited with status {self.proc.returncode}")
            with contextlib.suppress(OSError), socket.create_connection((HOST, self.port), 0.2):
                return
            time.sleep(0.05)
        raise ServerFailed(f"not listening on port {self.port} after {timeout:.0f} s")

    def log_tail(self, lines: int = 15) -> str:
        with contextlib.suppress(OSError):
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        return ""

    def stop(self) -> None:
        """SIGINT (a quick shutdown for all of them), then SIGKILL after 3 s, whole group."""
        with contextlib.suppress(ProcessLookupError):
            if self.proc.poll() is None:
                os.killpg(self.proc.pid, signal.SIGINT)
                try:
                    self.proc.wait(3)
                except subprocess.TimeoutExpired:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                    self.proc.wait()
            os.killpg(self.proc.pid, signal.SIGKILL)  # workers left behind, if any
        self._log.close()


def fetch(port: int, path: str) -> tuple[int, int, str]:
    """One GET with a raw socket: (status, body length, problem or "")."""
    request = f"GET {path} HTTP/1.1\r\nHost: {HOST}:{port}\r\nConnection: close\r\n\r\n"
    data = b""
    with socket.create_connection((HOST, port), timeout=5) as s:
        s.sendall(request.encode())
        while chunk := s.recv(65536):
            data += chunk
    head, sep, body = data.partition(b"\r\n\r\n")
    if not sep:
        return 0, 0, "no complete response head"
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ")[1])
    fields = {k.strip().lower(): v.strip() for k, _, v in (x.partition(":") for x in lines[1:])}
    if "content-length" not in fields:
        return status, len(body), "no Content-Length"
    return status, len(body), ""


def check_server(port: int, scenarios: list[Scenario]) -> dict[str, str]:
    """Problems per scenario: a wrong status or body size would make its numbers meaningless."""
    problems = {}
    for sc in scenarios:
        try:
            status, size, problem = fetch(port, sc.path)
        except OSError as exc:
            status, size, problem = 0, 0, f"{type(exc).__name__}: {exc}"
        wrong_size = size != sc.body_size if sc.body_size >= 0 else size == 0
        if not problem and (status != 200 or wrong_size):
            problem = (
                f"GET {sc.path}: status {status}, {size} body bytes (want 200, {sc.body_size})"
            )
        if problem:
            problems[sc.name] = problem
    return problems


# --- wrk -----------------------------------------------------------------------------------

_UNITS_MS = {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60_000.0}


def _ms(value: str, unit: str) -> float:
    return float(value) * _UNITS_MS[unit]


def parse_wrk(output: str) -> dict[str, float | int]:
    """The numbers this benchmark reports, from wrk's text output (wrk --latency)."""
    result: dict[str, float | int] = {}
    if m := re.search(r"Requests/sec:\s+([\d.]+)", output):
        result["rps"] = float(m.group(1))
    for pct in ("50", "99"):
        if m := re.search(rf"^\s+{pct}%\s+([\d.]+)(us|ms|s|m)\s*$", output, re.M):
            result[f"p{pct}_ms"] = _ms(m.group(1), m.group(2))
    if m := re.search(r"(\d+) requests in ([\d.]+)(us|ms|s|m), ([\d.]+)(\w+) read", output):
        result["requests"] = int(m.group(1))
    errors = re.search(
        r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", output
    )
    for i, kind in enumerate(("connect", "read", "write", "timeout"), start=1):
        result[f"err_{kind}"] = int(errors.group(i)) if errors else 0
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", output)
    result["non2xx"] = int(m.group(1)) if m else 0
    return result


def run_wrk(cpu: str | None, port: int, sc: Scenario, seconds: int) -> tuple[dict, str]:
    command = pinned(
        cpu,
        [
            "wrk",
            f"-t{WRK_THREADS}",
            f"-c{WRK_CONNECTIONS}",
            f"-d{seconds}s",
            "--latency",
            "--timeout",
            "5s",
            *sc.wrk_args,
            f"http://{HOST}:{port}{sc.path}",
        ],
    )
    out = subprocess.run(command, capture_output=True, text=True, timeout=seconds + 30)
    return parse_wrk(out.stdout), out.stdout + out.stderr


# --- noise: was anything else using the machine during a measurement? --------------------

_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
NOISE_CORES = 0.1  # more than a tenth of a core used by others: flag the measurement


@dataclass
class CpuSample:
    """CPU seconds: the whole machine's, the server's process group's, and wrk's (a child)."""

    when: float
    busy: float  # user + nice + system of all CPUs (/proc/stat), without interrupts
    steal: float
    server: float
    children: float

    @classmethod
    def take(cls, pgid: int) -> CpuSample:
        busy = steal = server = 0.0
        with contextlib.suppress(OSError, ValueError, IndexError):
            f = Path("/proc/stat").read_text().split("\n", 1)[0].split()
            busy = (int(f[1]) + int(f[2]) + int(f[3])) / _TICK
            steal = int(f[8]) / _TICK
        for stat in Path("/proc").glob("[0-9]*/stat"):
            with contextlib.suppress(OSError, ValueError, IndexError):
                rest = stat.read_text().rsplit(")", 1)[1].split()
                if int(rest[2]) == pgid:  # fields 5, 14, 15 of proc(5): pgrp, utime, stime
                    server += (int(rest[11]) + int(rest[12])) / _TICK
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        return cls(time.monotonic(), busy, steal, server, usage.ru_utime + usage.ru_stime)

    def since(self, before: CpuSample) -> tuple[float, float, float]:
        """Cores used by (the server, other processes, the hypervisor's steal) since ``before``."""
        elapsed = max(self.when - before.when, 1e-9)
        server = self.server - before.server
        ours = server + (self.children - before.children)
        other = (self.busy - before.busy) - ours
        return server / elapsed, max(other, 0.0) / elapsed, (self.steal - before.steal) / elapsed


# --- the run -------------------------------------------------------------------------------


@dataclass
class Measurement:
    round: int
    server: str
    scenario: str
    ok: bool
    rps: float = 0.0
    p50_ms: float = 0.0
    p99_ms: float = 0.0
    requests: int = 0
    errors: int = 0
    non2xx: int = 0
    problem: str = ""
    server_cpu: float = 0.0  # cores the server used (1.0 = its core was saturated)
    other_cpu: float = 0.0  # cores used by anything but this server and wrk during the run
    steal_cpu: float = 0.0  # cores' worth of time the hypervisor took away during the run
    attempts: int = 1
    wrk: dict = field(default_factory=dict)

    @property
    def noisy(self) -> bool:
        return self.other_cpu > NOISE_CORES or self.steal_cpu > NOISE_CORES


def measure_all(
    args: argparse.Namespace, site_dir: str, log_dir: Path, results: list[Measurement]
) -> None:
    """Append every measurement to ``results`` as it is made (kept if interrupted)."""
    all_scenarios = [SCENARIOS[s] for s in args.scenarios]
    for rnd in range(1, args.rounds + 1):
        # Rotate the order each round, so that no server is always first after a pause.
        k = (rnd - 1) % len(args.servers)
        order = args.servers[k:] + args.servers[:k]
        for name in order:
            scenarios = [
                scenario_for(sc, name)
                for sc in all_scenarios
                if not sc.pyweb_only or name.startswith("pyweb")
            ]
            if name in args.missing:  # reported as missing in the tables, not run
                if rnd == 1:
                    print(f"[round {rnd}] {name}: MISSING: {args.missing[name]}", flush=True)
                continue
            server = RunningServer(name, args.server_cpu, site_dir, log_dir / f"{name}-r{rnd}.log")
            try:
                try:
                    server.wait_ready()
                    problems = check_server(server.port, scenarios)
                except ServerFailed as exc:
                    print(f"[round {rnd}] {name}: FAILED to start: {exc}", flush=True)
                    if tail := server.log_tail():
                        print("    " + tail.replace("\n", "\n    "), flush=True)
                    results += [
                        Measurement(rnd, name, sc.name, False, problem=f"start: {exc}")
                        for sc in scenarios
                    ]
                    continue
                for sc in scenarios:
                    if sc.name in problems:
                        print(f"[round {rnd}] {name} {sc.name}: SKIPPED: {problems[sc.name]}")
                        results.append(
                            Measurement(rnd, name, sc.name, False, problem=problems[sc.name])
                        )
                        continue
                    results.append(measure_quietly(args, rnd, server, sc))
            finally:
                server.stop()


def measure_quietly(
    args: argparse.Namespace, rnd: int, server: RunningServer, sc: Scenario
) -> Measurement:
    """Measure; while other processes took CPU during the run, wait a little and measure again.

    On a shared machine (tests running next to the benchmark) a measurement is worth little
    when something else used the cores; up to ``--retries`` repeats, keeping the quietest.
    Repeats are capped at a quarter of the planned measurements, so that a busy machine
    cannot stretch the run much beyond its planned time.
    """
    best = measure(args, rnd, server, sc)
    for attempt in range(2, args.retries + 2):
        if not best.ok or not best.noisy or args.repeat_budget <= 0:
            break
        args.repeat_budget -= 1
        time.sleep(2)
        again = measure(args, rnd, server, sc, attempt)
        again.attempts = attempt
        if again.ok and again.other_cpu + again.steal_cpu < best.other_cpu + best.steal_cpu:
            best = again
        else:
            best.attempts = again.attempts
    return best


def measure(
    args: argparse.Namespace, rnd: int, server: RunningServer, sc: Scenario, attempt: int = 1
) -> Measurement:
    run_wrk(args.wrk_cpu, server.port, sc, args.warmup)  # warm-up, thrown away
    before = CpuSample.take(server.proc.pid)
    numbers, raw = run_wrk(args.wrk_cpu, server.port, sc, args.duration)
    used, other, steal = CpuSample.take(server.proc.pid).since(before)
    errors = sum(int(numbers.get(f"err_{k}", 0)) for k in ("connect", "read", "write", "timeout"))
    m = Measurement(
        rnd,
        server.name,
        sc.name,
        "rps" in numbers,
        rps=float(numbers.get("rps", 0.0)),
        p50_ms=float(numbers.get("p50_ms", 0.0)),
        p99_ms=float(numbers.get("p99_ms", 0.0)),
        requests=int(numbers.get("requests", 0)),
        errors=errors,
        non2xx=int(numbers.get("non2xx", 0)),
        server_cpu=used,
        other_cpu=other,
        steal_cpu=steal,
        wrk=numbers,
    )
    if not m.ok:
        m.problem = "could not parse wrk output: " + raw.strip()[-300:]
    elif server.proc.poll() is not None:
        m.ok, m.problem = False, f"server died during the run (status {server.proc.returncode})"
    flag = f"  !! {errors} socket errors, {m.non2xx} non-2xx" if errors or m.non2xx else ""
    if other > NOISE_CORES or steal > NOISE_CORES:
        flag += f"  (noisy: other processes {other:.2f} cores, steal {steal:.2f})"
    print(
        f"[round {rnd}] {server.name:<18} {sc.name:<13}{'  (repeat)' if attempt > 1 else ''}"
        f" {m.rps:>10.0f} req/s"
        f"  p99 {m.p99_ms:7.2f} ms  server CPU {used:4.2f}{flag}{'  ' + m.problem if m.problem else ''}",
        flush=True,
    )
    return m


# --- report --------------------------------------------------------------------------------


@dataclass
class Summary:
    rps: float
    p99_ms: float
    rps_min: float
    rps_max: float
    rounds: int
    used: int  # rounds the medians are taken over (the quiet ones, if any)
    errors: int
    failed: int
    noisy: int
    cpu_us: float  # the server's CPU time per request, µs (median over the rounds used)


def summarize(results: list[Measurement]) -> dict[tuple[str, str], Summary | None]:
    by_key: dict[tuple[str, str], list[Measurement]] = {}
    for m in results:
        by_key.setdefault((m.scenario, m.server), []).append(m)
    out: dict[tuple[str, str], Summary | None] = {}
    for key, ms in by_key.items():
        good = [m for m in ms if m.ok]
        if not good:
            out[key] = None
            continue
        # A round during which other processes took CPU says little about the server: the
        # medians use the quiet rounds when there is at least one, else all of them.
        quiet = [m for m in good if not m.noisy]
        used = quiet or good
        rps = [m.rps for m in used]
        out[key] = Summary(
            rps=statistics.median(rps),
            p99_ms=statistics.median(m.p99_ms for m in used),
            rps_min=min(rps),
            rps_max=max(rps),
            rounds=len(good),
            used=len(used),
            errors=sum(m.errors + m.non2xx for m in good),
            noisy=sum(m.noisy for m in good),
            failed=len(ms) - len(good),
            cpu_us=statistics.median(cpu_per_request(m) for m in used),
        )
    return out


def cpu_per_request(m: Measurement) -> float:
    """µs of the server's CPU per request: cores used / req/s. Steadier than req/s on a
    shared machine (a server that gets half a core answers half as many requests, at about
    the same cost each); kernel work done in interrupts is not charged to the server."""
    return m.server_cpu / m.rps * 1e6 if m.rps else 0.0


def ratio(a: Summary | None, b: Summary | None) -> float | None:
    """Ratio of the medians (when the rounds do not pair up, e.g. one server failed once)."""
    return a.rps / b.rps if a and b and b.rps else None


def fmt_ratio(r: float | None) -> str:
    return "n/a" if r is None else f"{r:.2f}×"


Rounds = dict[tuple[str, str], dict[int, Measurement]]


def by_round(results: list[Measurement]) -> Rounds:
    """(scenario, server) -> round -> its measurement, the good ones only."""
    out: Rounds = {}
    for m in results:
        if m.ok:
            out.setdefault((m.scenario, m.server), {})[m.round] = m
    return out


def same_round_ratio(rounds: Rounds, sc: str, a: str, b: str) -> float | None:
    """Median over rounds of ``a``'s req/s over ``b``'s in the same round: the machine's
    state drifts between rounds, so a ratio taken within a round is the fairer one."""
    ra, rb = rounds.get((sc, a), {}), rounds.get((sc, b), {})
    pairs = [ra[r].rps / rb[r].rps for r in ra if r in rb and rb[r].rps]
    return statistics.median(pairs) if pairs else None


def _cell(x: Summary | None, key: tuple[str, str], s: dict, missing: dict[str, str]) -> str:
    if key[1] in missing:
        return "missing"
    if x is None:
        return "FAILED" if key in s else "–"
    return f"{x.rps:,.0f}"


def headline(args: argparse.Namespace, results: list[Measurement]) -> list[str]:
    """One row per server: median req/s [same-round ratio to uvicorn] per scenario, p99s."""
    s, rounds, missing = summarize(results), by_round(results), args.missing
    p99s = [sc for sc in ("hello", "hello-close") if sc in args.scenarios]
    head = "| server | " + " | ".join(args.scenarios) + " |"
    if p99s:
        head += " p99 " + " / ".join(p99s) + " |"
    lines = [head, "|---|" + "---:|" * (len(args.scenarios) + bool(p99s))]
    for name in args.servers:
        cells = []
        for sc in args.scenarios:
            x = s.get((sc, name))
            text = _cell(x, (sc, name), s, missing)
            r = same_round_ratio(rounds, sc, name, BASELINE)
            cells.append(text if x is None or r is None else f"{text} [{r:.2f}×]")
        if p99s:
            ms = [s.get((sc, name)) for sc in p99s]
            shown = " / ".join("–" if m is None else f"{m.p99_ms:.2f}" for m in ms)
            cells.append(shown + " ms" if any(ms) else "–")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    if missing:
        lines += ["", "Missing: " + "; ".join(f"{n} ({why})" for n, why in missing.items())]
    return lines


def details(args: argparse.Namespace, results: list[Measurement]) -> list[str]:
    """Every cell with its spread over rounds, p99, errors and how many rounds were quiet."""
    s, rounds = summarize(results), by_round(results)
    lines = [
        "| scenario | server | req/s | spread | p99 ms | × uvicorn | CPU µs/req | errors | rounds |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for sc in args.scenarios:
        for name in args.servers:
            x = s.get((sc, name))
            if x is None:
                what = _cell(x, (sc, name), s, args.missing)
                lines.append(f"| {sc} | {name} | {what} | | | | | | |")
                continue
            spread = (x.rps_max - x.rps_min) / x.rps if x.rps else 0.0
            errs = str(x.errors) + (f" ({x.failed} failed)" if x.failed else "")
            used = (
                f"{x.used} quiet of {x.rounds}" if x.noisy < x.rounds else f"{x.rounds}, all noisy"
            )
            lines.append(
                f"| {sc} | {name} | {x.rps:,.0f} | {spread:.0%} | {x.p99_ms:.2f} "
                f"| {fmt_ratio(same_round_ratio(rounds, sc, name, BASELINE))} | {x.cpu_us:.1f} "
                f"| {errs} | {used} |"
            )
    return lines


# pyweb's rows against the servers that bound them: (label, pyweb row, peer).
ALONGSIDE = [
    ("pyweb / raw-trio", "pyweb", "raw-trio"),
    ("pyweb-asyncio / raw-uvloop", "pyweb-asyncio", "raw-uvloop"),
    ("pyweb-asyncio / granian-rsgi", "pyweb-asyncio", "granian-rsgi"),
    ("pyweb-asyncio / uvicorn-starlette", "pyweb-asyncio", "uvicorn-starlette"),
    ("pyweb-asyncio / pyweb", "pyweb-asyncio", "pyweb"),
]


def alongside(args: argparse.Namespace, results: list[Measurement]) -> list[str]:
    rounds = by_round(results)
    pairs = [x for x in ALONGSIDE if x[1] in args.servers and x[2] in args.servers]
    if not pairs:
        return []
    lines = [
        "| scenario | " + " | ".join(label for label, _, _ in pairs) + " |",
        "|---|" + "---:|" * len(pairs),
    ]
    for sc in args.scenarios:
        cells = [fmt_ratio(same_round_ratio(rounds, sc, a, b)) for _, a, b in pairs]
        lines.append(f"| {sc} | " + " | ".join(cells) + " |")
    return lines


def cpu_table(args: argparse.Namespace, results: list[Measurement]) -> list[str]:
    """µs of server CPU per request, one row per server: what each request costs the
    server, whatever share of its core the machine gave it."""
    s = summarize(results)
    lines = ["| server | " + " | ".join(args.scenarios) + " |",
             "|---|" + "---:|" * len(args.scenarios)]  # fmt: skip
    for name in args.servers:
        cells = []
        for sc in args.scenarios:
            x = s.get((sc, name))
            cells.append(_cell(x, (sc, name), s, args.missing) if x is None else f"{x.cpu_us:.1f}")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines


def frameworks_table(args: argparse.Namespace, results: list[Measurement]) -> list[str]:
    """The frameworks users pick beside pyweb's pages and the raw servers: median req/s and
    the server's CPU µs per request, fastest hello first."""
    s = summarize(results)
    shown = [n for n in FRAMEWORK_ROWS if n in args.servers]
    if not shown:
        return []
    context = [n for n in ("pyweb-asyncio", "pyweb", "raw-uvloop", "raw-trio") if n in args.servers]

    def hello(name: str) -> float:
        x = s.get(("hello", name))
        return x.rps if x is not None else 0.0

    lines = ["| server | " + " | ".join(args.scenarios) + " |",
             "|---|" + "---:|" * len(args.scenarios)]  # fmt: skip
    for name in [*context, *sorted(shown, key=hello, reverse=True)]:
        cells = []
        for sc in args.scenarios:
            x = s.get((sc, name))
            text = _cell(x, (sc, name), s, args.missing)
            cells.append(text if x is None else f"{text} ({x.cpu_us:.0f} µs)")
        label = f"**{name}**" if name.startswith("pyweb") else name
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return lines


def report(args: argparse.Namespace, results: list[Measurement]) -> str:
    lines = [
        f"Median req/s of {args.rounds} interleaved round(s) of {args.duration} s after a "
        f"{args.warmup} s warm-up; wrk -t{WRK_THREADS} -c{WRK_CONNECTIONS} on CPU "
        f"{args.wrk_cpu}, each server (one worker) on CPU {args.server_cpu}. [×] is the "
        "median of the same-round ratios to uvicorn on a raw ASGI app; p99 is wrk's, median "
        "over rounds. pyweb rows are a site as users write it (script pages, services, a "
        "static file from the site folder).",
        "",
        *headline(args, results),
    ]
    if more := alongside(args, results):
        lines += ["", "Same-round ratios of pyweb's rows to their bounds and peers:", "", *more]
    lines += [
        "",
        "The server's CPU time per request, µs (its CPU seconds over the requests answered; "
        "steadier than req/s when other processes take CPU; with one connection per request "
        "part of the kernel's work is not charged to the server):",
        "",
        *cpu_table(args, results),
    ]
    if more := frameworks_table(args, results):
        lines += ["", "The frameworks users pick, each as its docs deploy it on one worker, "
                  "beside pyweb's pages and the raw servers: median req/s (server CPU µs per "
                  "request):", "", *more]  # fmt: skip
    if any(n in args.servers for n in PYWEB_ROWS):
        lines += ["", targets(args, results)]
    lines += [
        "",
        f"Details. Spread = (max-min)/median of req/s. A round is noisy when other processes "
        f"used > {NOISE_CORES} core during it (after up to {args.retries} repeat(s)); the "
        "medians are over the quiet rounds when there are any.",
        "",
        *details(args, results),
    ]
    return "\n".join(lines)


def targets(args: argparse.Namespace, results: list[Measurement]) -> str:
    """The issue's targets for pyweb's pages (measured here, never asserted in tests).

    Each ratio is given twice: from req/s in the same round, and from the servers' CPU time
    per request (the other's µs over pyweb's: the ratio of what each would answer with a
    whole core). On a quiet machine the two agree; on a busy one the second is steadier."""
    s, rounds = summarize(results), by_round(results)

    def by_cpu(sc: str, a: str, b: str) -> float | None:
        x, y = s.get((sc, a)), s.get((sc, b))
        return y.cpu_us / x.cpu_us if x and y and x.cpu_us and y.cpu_us else None

    def row(label: str, values: list[tuple[float | None, float | None]], bound: float) -> str:
        def worst(i: int) -> float | None:
            known = [v[i] for v in values if v[i] is not None]
            return min(known) if known else None

        rps, cpu = worst(0), worst(1)
        shown = ["n/a" if v is None else f"{v:.2f}" for v in (rps, cpu)]
        verdict = "n/a" if rps is None else ("met" if rps >= bound else "NOT met")
        return f"| {label} | {shown[0]} | {shown[1]} | {verdict} |"

    def pair(sc: str, a: str, b: str) -> tuple[float | None, float | None]:
        return same_round_ratio(rounds, sc, a, b), by_cpu(sc, a, b)

    def p99_ratio(name: str) -> str:
        a, b = s.get(("hello-close", name)), s.get(("hello-close", BASELINE))
        if not (a and b and b.p99_ms):
            return f"| {name}: one connection each, p99 / uvicorn's ≤ 1.0 | n/a | | n/a |"
        value = a.p99_ms / b.p99_ms
        verdict = "met" if value <= 1.0 else "NOT met"
        return f"| {name}: one connection each, p99 / uvicorn's ≤ 1.0 | {value:.2f} | | {verdict} |"

    aio, trio_ = "pyweb-asyncio", "pyweb"
    rows = [
        "| target | by req/s | by CPU per request | verdict (by req/s) |",
        "|---|---:|---:|---|",
        row("asyncio: hello ≥ 0.6× raw-uvloop", [pair("hello", aio, "raw-uvloop")], 0.6),
        row("asyncio: 984 B page ≥ 1.5× uvicorn", [pair("dynamic", aio, BASELINE)], 1.5),
        row("asyncio: ahead of granian-rsgi, every scenario (the lowest)",
            [pair(sc, aio, "granian-rsgi") for sc in args.scenarios], 1.0),
        row("trio: hello ≥ 0.75× raw-trio", [pair("hello", trio_, "raw-trio")], 0.75),
        row("trio: 984 B page ≥ 0.75× raw-trio", [pair("dynamic", trio_, "raw-trio")], 0.75),
        p99_ratio(trio_),
        p99_ratio(aio),
    ]  # fmt: skip
    alone = "pyweb-asyncio-handler"
    if alone in args.servers:
        # The asyncio aims for pyweb's server alone, a handler answering below the page
        # layer: as far as pages could go if routing, conn and the script cost nothing. Its
        # /page/ and /svc/ URLs run the site, so the granian row takes the handler's own.
        own = [sc for sc in args.scenarios if sc in ("hello", "hello-close", "dynamic", "static")]
        rows += [
            row("asyncio server alone (a handler, no pages): hello ≥ 0.6× raw-uvloop",
                [pair("hello", alone, "raw-uvloop")], 0.6),
            row("asyncio server alone: 984 B page ≥ 1.5× uvicorn",
                [pair("dynamic", alone, BASELINE)], 1.5),
            row("asyncio server alone: ahead of granian-rsgi (the lowest of its own URLs)",
                [pair(sc, alone, "granian-rsgi") for sc in own], 1.0),
        ]  # fmt: skip
    return "\n".join(rows)


# --- main ----------------------------------------------------------------------------------


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--short",
        action="store_true",
        help="CI-sized run: 1 round of 2 s per measurement after 1 s of warm-up (4 min)",
    )
    parser.add_argument(
        "--servers",
        default=",".join(DEFAULT_SERVERS),
        help=f"comma-separated, from: {', '.join(SERVERS)}",
    )
    parser.add_argument(
        "--frameworks",
        action="store_true",
        help="also measure the frameworks users pick (" + ", ".join(FRAMEWORKS) + "; each "
        "installed once into benchmarks/.venv-frameworks/NAME) and print their table",
    )
    parser.add_argument(
        "--scenarios",
        default=",".join(DEFAULT_SCENARIOS),
        help=f"comma-separated, from: {', '.join(SCENARIOS)}",
    )
    parser.add_argument("--rounds", type=int, help="interleaved rounds (default 3; --short 1)")
    parser.add_argument(
        "--duration",
        type=float,
        help="seconds per measurement, whole seconds as wrk takes them (default 6; --short 2)",
    )
    parser.add_argument(
        "--warmup", type=int, help=f"seconds of warm-up (default {WARMUP_SECONDS}; --short 1)"
    )
    parser.add_argument("--markdown", metavar="FILE", help="also write the tables to FILE")
    parser.add_argument(
        "--from-json",
        metavar="FILE",
        help="measure nothing: print the tables of a saved run (benchmarks/results/*.json)",
    )
    parser.add_argument("--server-cpu", default="1", help="CPU for the servers (taskset -c)")
    parser.add_argument("--wrk-cpu", default="0", help="CPU for wrk (taskset -c)")
    parser.add_argument("--no-pin", action="store_true", help="do not use taskset")
    parser.add_argument(
        "--baseline", metavar="DIR", help="checkout that the pyweb-baseline server runs"
    )
    parser.add_argument(
        "--retries",
        type=int,
        help="repeat a measurement during which other processes used more than "
        f"{NOISE_CORES} core, at most this many times (default 1; --short 0)",
    )
    args = parser.parse_args(argv)
    global BASELINE_TREE
    BASELINE_TREE = Path(args.baseline).resolve() if args.baseline else None
    args.servers = [x for x in args.servers.split(",") if x]
    if args.frameworks:
        args.servers += [x for x in FRAMEWORK_ROWS if x not in args.servers]
    args.scenarios = [x for x in args.scenarios.split(",") if x]
    for x in args.servers:
        if x not in SERVERS:
            parser.error(f"unknown server {x!r}; choose from {', '.join(SERVERS)}")
    for x in args.scenarios:
        if x not in SCENARIOS:
            parser.error(f"unknown scenario {x!r}; choose from {', '.join(SCENARIOS)}")
    if args.rounds is None:
        args.rounds = 1 if args.short else 3
    if args.retries is None:
        args.retries = 0 if args.short else 1
    args.repeat_budget = len(args.servers) * len(args.scenarios) * args.rounds // 4
    if args.duration is None:
        args.duration = 2 if args.short else 6
    if args.warmup is None:
        args.warmup = 1 if args.short else WARMUP_SECONDS
    args.missing = {}  # filled by main() once the peers' venv is there
    # wrk takes whole seconds only ("-d1.5s" is an error), so round up.
    args.duration = max(1, int(-(-args.duration // 1)))
    if args.no_pin or shutil.which("taskset") is None:
        if not args.no_pin:
            print("taskset not found: servers and wrk are NOT pinned to cores")
        args.server_cpu = args.wrk_cpu = None
    return args


def markdown_page(meta: dict, table: str) -> str:
    """The tables with what made them: the command, the date, the machine, the versions."""
    now = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    command = meta.get("command") or " ".join(["benchmarks/peers.py", *sys.argv[1:]])
    m, peers = meta["machine"], meta["peers"]
    return "\n".join(
        [
            f"Measured {meta.get('date', now)} with `{command}` "
            f"on {m['cpus']} × {m['cpu']} (Linux {m['kernel']}); {meta['wrk']}.",
            "",
            table,
            "",
            "Versions: "
            + ", ".join(f"{k} {v}" for k, v in {**peers, **meta["project"]}.items())
            + ".",
            "",
        ]
    )


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def tables_of_saved_run(args: argparse.Namespace) -> int:
    """``--from-json FILE``: the tables of an earlier run, made again by this code."""
    data = json.loads(Path(args.from_json).read_text())
    saved = data["meta"]["args"]
    for key in ("servers", "scenarios", "rounds", "duration", "retries", "server_cpu",
                "wrk_cpu", "missing"):  # fmt: skip
        setattr(args, key, saved.get(key, getattr(args, key)))
    args.warmup = saved.get("warmup", 1)
    results = [Measurement(**m) for m in data["results"]]
    table = report(args, results)
    print(table)
    if args.markdown:
        Path(args.markdown).write_text(markdown_page(data["meta"], table))
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.from_json:
        return tables_of_saved_run(args)
    # Ctrl-C and SIGTERM both unwind through the finally blocks that stop the servers.
    signal.signal(signal.SIGTERM, _interrupt)
    wrk = ensure_wrk()
    peers = ensure_peers_venv()
    peers.update(ensure_frameworks(args.servers))
    args.missing = missing_peers(args.servers)
    meta = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "command": " ".join(["benchmarks/peers.py", *(sys.argv[1:] if argv is None else argv)]),
        "args": {k: v for k, v in vars(args).items()},
        "machine": machine(),
        "wrk": wrk,
        "peers": peers,
        "project": project_versions(),
        "servers": {n: SERVERS[n] for n in args.servers},
        "scenarios": {n: asdict(SCENARIOS[n]) for n in args.scenarios},
    }
    print("machine:", ", ".join(f"{k} {v}" for k, v in meta["machine"].items()))
    print("wrk:", wrk)
    print("peers (benchmarks/.venv-peers):", ", ".join(f"{k}=={v}" for k, v in peers.items()))
    print("project venv:", ", ".join(f"{k} {v}" for k, v in meta["project"].items()))
    if (os.cpu_count() or 1) < 2 and args.server_cpu is not None:
        print("warning: fewer than 2 CPUs, wrk and the server share a core")
    n = len(args.servers) * len(args.scenarios) * args.rounds
    print(
        f"{n} measurements of {args.warmup}+{args.duration} s: about "
        f"{n * (args.warmup + args.duration + 0.5) / 60:.1f} min\n",
        flush=True,
    )

    RESULTS.mkdir(exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    started = time.monotonic()
    results: list[Measurement] = []
    interrupted = False
    os.environ["BENCH_RATE_URL"] = start_rate_server()  # inherited by every server
    with tempfile.TemporaryDirectory(prefix="pyweb-bench-") as tmp:
        site = Path(tmp) / "site"
        site.mkdir()
        (site / page.STATIC_NAME).write_bytes(page.render(0))  # Hop: the dynamic page's output
        logs = RESULTS / f"peers-{stamp}-logs"
        logs.mkdir()
        try:
            measure_all(args, str(site), logs, results)
        except KeyboardInterrupt:
            interrupted = True
            print("\ninterrupted: servers stopped; reporting what was measured", flush=True)
    meta["wall_seconds"] = round(time.monotonic() - started, 1)
    meta["interrupted"] = interrupted
    table = report(args, results) if results else "(nothing measured)"
    out = RESULTS / f"peers-{stamp}.json"
    out.write_text(
        json.dumps(
            {
                "meta": meta,
                "results": [asdict(m) for m in results],
                "summary": [
                    {"scenario": sc, "server": sv, **(asdict(x) if x else {"failed": True})}
                    for (sc, sv), x in summarize(results).items()
                ],
                "table": table,
            },
            indent=1,
        )
    )
    (RESULTS / f"peers-{stamp}.md").write_text(table + "\n")
    if args.markdown:
        Path(args.markdown).write_text(markdown_page(meta, table))
    print("\n" + table + "\n")
    print(
        f"raw results: {out.relative_to(ROOT)} (server logs in {logs.relative_to(ROOT)}/); "
        f"wall time {meta['wall_seconds']:.0f} s"
    )
    failed = [m for m in results if not m.ok]
    noisy = [m for m in results if m.ok and (m.errors or m.non2xx)]
    if failed:
        print(f"{len(failed)} measurement(s) failed: see the table and the server logs")
    if noisy:
        print(f"{len(noisy)} measurement(s) had socket errors or non-2xx responses (flagged above)")
    if interrupted:
        return 130
    # The exit status is for CI (`make bench-peers-short`): it fails when pyweb itself
    # failed or answered with errors. A peer that fails is reported above, not fatal.
    broken = [m for m in failed + noisy if m.server in PYWEB_ROWS]
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
